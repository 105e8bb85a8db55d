//! Structured logs through `tracing`: JSON when `TOOLGATE_LOG=json` (deployed),
//! compact text otherwise. Level from `TOOLGATE_LOG_LEVEL`, else the caller's default.

use tracing_subscriber::EnvFilter;

pub fn init(default_level: &str) {
    let filter = EnvFilter::try_from_env("TOOLGATE_LOG_LEVEL")
        .unwrap_or_else(|_| EnvFilter::new(default_level));
    let json = std::env::var("TOOLGATE_LOG").is_ok_and(|v| v.eq_ignore_ascii_case("json"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    let _ = if json {
        builder
            .json()
            .flatten_event(true)
            .with_current_span(false)
            .try_init()
    } else {
        builder.compact().try_init()
    };
}
