//! Lambda function serving python.execute. No VPC and no permissions: the
//! sandbox needs nothing from AWS.

use std::process::ExitCode;

use toolgate_shared::{lambda, sandbox::alloc::SandboxAlloc, sandbox::zygote, toolset::Toolset};

// Reports out-of-memory from sandbox children instead of a bare abort.
#[global_allocator]
static ALLOC: SandboxAlloc = SandboxAlloc;

fn main() -> ExitCode {
    // The sandbox re-executes this binary as its warm process.
    zygote::maybe_run();
    lambda::main(|cfg| async move { Toolset::new().with_python(&cfg).await })
}
