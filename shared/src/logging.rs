//! Structured logs through `tracing`: JSON when deployed (`TOOLGATE_LOG=json`,
//! or on Lambda), compact text otherwise. Level from `TOOLGATE_LOG_LEVEL`,
//! else the caller's default. On Lambda lines carry no timestamp, since
//! CloudWatch stamps each line itself.

use tracing_subscriber::EnvFilter;

/// Installs the global subscriber (see the module); `default_level` applies
/// when `TOOLGATE_LOG_LEVEL` is unset. Once a subscriber is set, a later call
/// changes nothing.
pub fn init(default_level: &str) {
    let filter = EnvFilter::try_from_env("TOOLGATE_LOG_LEVEL")
        .unwrap_or_else(|_| EnvFilter::new(default_level));
    let on_lambda = std::env::var_os("AWS_LAMBDA_FUNCTION_NAME").is_some();
    let json =
        on_lambda || std::env::var("TOOLGATE_LOG").is_ok_and(|v| v.eq_ignore_ascii_case("json"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    let _ = match (json, on_lambda) {
        (true, true) => builder
            .json()
            .flatten_event(true)
            .with_current_span(false)
            .without_time()
            .try_init(),
        (true, false) => builder
            .json()
            .flatten_event(true)
            .with_current_span(false)
            .try_init(),
        _ => builder.compact().try_init(),
    };
}
