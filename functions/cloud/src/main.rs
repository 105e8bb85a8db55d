//! Lambda function (in a VPC) proxying each cloud account's MCP server; the
//! accounts are read from SSM under `TOOLGATE_CLOUD_SSM_PREFIX`.

use std::process::ExitCode;

fn main() -> ExitCode {
    toolgate_lambda::main(toolgate_aws::Aws::backends(), |cfg, set| async move {
        if cfg.cloud.ssm_prefix.is_none() {
            return Err("TOOLGATE_CLOUD_SSM_PREFIX is not set (e.g. /toolgate/clouds/)".into());
        }
        set.with_cloud(&cfg).await
    })
}
