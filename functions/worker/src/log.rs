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
    // Later calls in the same isolate find the subscriber set and do nothing.
    let _ = tracing_subscriber::fmt()
        .json()
        .flatten_event(true)
        .with_current_span(false)
        .without_time()
        .with_max_level(tracing::Level::INFO)
        .with_writer(|| ConsoleLine(Vec::new()))
        .try_init();
}
