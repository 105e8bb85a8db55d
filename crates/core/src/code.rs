//! Code mode's link between a running script and the server's tools: the
//! sandbox carries a script's requests to a [`ToolHost`] and its answers
//! back, as bytes; what they mean is the host's (the shared crate's
//! `python_execute::code_mode`).

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

/// The longest answer a script takes: it lives in the script's memory.
pub const MAX_ANSWER: usize = 8 << 20;

/// The longest request a script may send: any tool's body (1 MiB) and
/// room for its name; longer ones are refused unread.
pub const MAX_REQUEST: usize = (1 << 20) + (64 << 10);

/// An answer to a script's request, as JSON bytes; `None` stops the script
/// where it is (it waits for a person, or left its journal's path: the
/// host says which once the call ends).
pub type ToolAnswer<'a> = Pin<Box<dyn Future<Output = Option<Vec<u8>>> + Send + 'a>>;

/// Answers the tool requests of one script.
pub trait ToolHost: Send + Sync {
    /// Answers `request` (JSON: `{"call": name, "arguments": {…}}` or
    /// `{"list": true}`) with `{"ok": …}` or `{"error": {"code",
    /// "message", …}}`, by the script's deadline, `left` from now. Called
    /// once per request, one at a time.
    fn serve<'a>(&'a self, request: &'a [u8], left: Duration) -> ToolAnswer<'a>;

    /// The seed of the script's `random`, fixed by the host so that a
    /// script run again from its journal draws the same numbers.
    fn seed(&self) -> Option<u128> {
        None
    }
}
