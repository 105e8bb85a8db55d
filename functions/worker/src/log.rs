//! Structured logs on Workers: one JSON line per event to the console (what
//! `wrangler tail` and Workers Logs collect), without timestamps: the
//! platform stamps each line, and std's clock panics on wasm32.

use std::io::Write;

/// Collects one formatted event and hands it to `console.log` when dropped.
struct ConsoleLine(Vec<u8>);

impl Write for ConsoleLine {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Drop for ConsoleLine {
    fn drop(&mut self) {
        let text = String::from_utf8_lossy(&self.0);
        let line = text.trim_end();
        if !line.is_empty() {
            worker::console_log!("{line}");
        }
    }
}

pub fn init() {
    use tracing_subscriber::Layer;
    use tracing_subscriber::filter::{FilterExt, LevelFilter, filter_fn};
    use tracing_subscriber::layer::SubscriberExt;
    use tracing_subscriber::util::SubscriberInitExt;
    let lines = tracing_subscriber::fmt::layer()
        .json()
        .flatten_event(true)
        .with_current_span(false)
        .without_time()
        .with_writer(|| ConsoleLine(Vec::new()))
        // A call's steps are spans for traces, not for lines: a line's span
        // list stays the request's.
        .with_filter(
            LevelFilter::INFO.and(filter_fn(|m| m.target() != toolgate_shared::invoke::STEPS)),
        );
    // Later calls in the same isolate find the subscriber set and do nothing.
    let _ = tracing_subscriber::registry().with(lines).try_init();
}
