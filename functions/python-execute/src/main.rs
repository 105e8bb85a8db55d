//! Lambda function serving python.execute. No VPC: the sandbox needs
//! nothing from AWS. Its role reaches its sessions table and, for code
//! mode, invokes the functions in `TOOLGATE_PEER_FUNCTIONS` (ssh, cloud,
//! clarify), whose tools its scripts call as their caller.

use std::process::ExitCode;

use toolgate_lambda::WithScriptPeers;
use toolgate_python::WithPython;
use toolgate_python::sandbox::{alloc::SandboxAlloc, zygote};

// Reports out-of-memory from sandbox children instead of a bare abort.
#[global_allocator]
static ALLOC: SandboxAlloc = SandboxAlloc;

fn main() -> ExitCode {
    // The sandbox re-executes this binary as its warm process.
    zygote::maybe_run();
    toolgate_lambda::main(toolgate_aws::Aws::sessions_only(), |cfg, set| async move {
        Ok(set.with_python(&cfg).await?.with_script_peers(&cfg).await)
    })
}
