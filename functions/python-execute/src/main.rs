//! Lambda function serving python.execute. No VPC and no permissions: the
//! sandbox needs nothing from AWS.

use std::process::ExitCode;

use toolgate_python::WithPython;
use toolgate_python::sandbox::{alloc::SandboxAlloc, zygote};

// Reports out-of-memory from sandbox children instead of a bare abort.
#[global_allocator]
static ALLOC: SandboxAlloc = SandboxAlloc;

fn main() -> ExitCode {
    // The sandbox re-executes this binary as its warm process.
    zygote::maybe_run();
    toolgate_lambda::main(toolgate_aws::Aws::sessions_only(), |cfg, set| async move {
        set.with_python(&cfg).await
    })
}
