//! The clock every module uses. std's `Instant` and `SystemTime` panic on
//! wasm32-unknown-unknown; the Worker's build reads the JavaScript clock.

#[cfg(not(feature = "wasm-clock"))]
pub use std::time::{Instant, SystemTime, UNIX_EPOCH};
#[cfg(feature = "wasm-clock")]
pub use web_time::{Instant, SystemTime, UNIX_EPOCH};
