//! The clock every module uses. std's `Instant` and `SystemTime` panic on
//! wasm32-unknown-unknown; the Worker's build reads the JavaScript clock.

#[cfg(not(target_arch = "wasm32"))]
pub use std::time::{Instant, SystemTime, UNIX_EPOCH};
#[cfg(target_arch = "wasm32")]
pub use web_time::{Instant, SystemTime, UNIX_EPOCH};

/// Now, in Unix milliseconds (0 for a clock set before 1970).
pub fn unix_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}
