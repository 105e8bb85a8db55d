//! Lambda function (in a VPC) serving list_servers and ssh_run; the
//! servers are read from SSM under `TOOLGATE_SSH_SSM_PREFIX`.

use std::process::ExitCode;

use toolgate_ssh::WithSsh;

fn main() -> ExitCode {
    toolgate_lambda::main(toolgate_aws::Aws::backends(), |cfg, set| async move {
        if cfg.ssh.ssm_prefix.is_none() {
            return Err("TOOLGATE_SSH_SSM_PREFIX is not set (e.g. /toolgate/servers)".into());
        }
        set.with_ssh(&cfg).await
    })
}
