//! The bytes of calls the sandbox holds at once: a call's code, files and
//! session state stay in memory while it waits for a place and while it
//! runs. A burst of large calls would otherwise queue without bound (30
//! queued calls of 9 MiB took the server from 26 to 872 MB). Bounded in
//! all and per caller; a call past a bound is `quota_exceeded` at once,
//! before it queues.

use std::collections::HashMap;
use std::sync::Mutex;

use crate::error::ToolError;

/// Bytes held, in all and by caller.
pub struct Backlog {
    total: u64,
    per_caller: u64,
    used: Mutex<Used>,
}

#[derive(Default)]
struct Used {
    all: u64,
    by_caller: HashMap<String, u64>,
}

/// Bytes a call holds; dropping it gives them back.
pub struct Reserved<'a> {
    backlog: &'a Backlog,
    caller: String,
    bytes: u64,
}

impl Backlog {
    /// At most `total` bytes in all (0: no bound), one caller half of it;
    /// both at least `one_call`, the most one call can hold, so a call
    /// alone always fits.
    pub fn new(total: u64, one_call: u64) -> Self {
        let (total, per_caller) = match total {
            0 => (u64::MAX, u64::MAX),
            t => (t.max(one_call), (t / 2).max(one_call)),
        };
        Self {
            total,
            per_caller,
            used: Mutex::new(Used::default()),
        }
    }

    /// Holds `bytes` for `caller` until the result is dropped, or says
    /// which bound they would pass.
    pub fn reserve(&self, caller: &str, bytes: u64) -> Result<Reserved<'_>, ToolError> {
        let mut used = self.used.lock().unwrap_or_else(|p| p.into_inner());
        let mine = used.by_caller.get(caller).copied().unwrap_or(0);
        if mine > 0 && mine + bytes > self.per_caller {
            return Err(ToolError::quota(format!(
                "This caller's calls waiting for or running in the sandbox already hold {mine} \
                 bytes; with this call's {bytes} that is over its share of {} (half of \
                 TOOLGATE_PYTHON_MAX_QUEUED_MB); try again when they finish",
                self.per_caller
            )));
        }
        if used.all > 0 && used.all + bytes > self.total {
            return Err(ToolError::quota(format!(
                "The sandbox already holds {} bytes of calls waiting or running; with this call's \
                 {bytes} that is over the limit of {} (TOOLGATE_PYTHON_MAX_QUEUED_MB); try again \
                 when some finish",
                used.all, self.total
            )));
        }
        used.all += bytes;
        *used.by_caller.entry(caller.to_owned()).or_default() += bytes;
        Ok(Reserved {
            backlog: self,
            caller: caller.to_owned(),
            bytes,
        })
    }
}

impl Drop for Reserved<'_> {
    fn drop(&mut self) {
        let mut used = self.backlog.used.lock().unwrap_or_else(|p| p.into_inner());
        used.all -= self.bytes;
        if let Some(mine) = used.by_caller.get_mut(&self.caller) {
            *mine -= self.bytes;
            if *mine == 0 {
                used.by_caller.remove(&self.caller);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_caller_gets_half_everyone_the_total_and_bytes_come_back() {
        let b = Backlog::new(100, 10);
        let a1 = b.reserve("a", 30).unwrap();
        let a2 = b.reserve("a", 20).unwrap();
        let e = b.reserve("a", 1).err().unwrap();
        assert_eq!(e.code, crate::error::ErrorCode::QuotaExceeded);
        assert!(e.message.contains("its share of 50"), "{}", e.message);
        let c = b.reserve("c", 50).unwrap();
        let e = b.reserve("d", 1).err().unwrap();
        assert!(e.message.contains("over the limit of 100"), "{}", e.message);
        drop((a1, a2, c));
        assert!(b.used.lock().unwrap().by_caller.is_empty());
        assert_eq!(b.used.lock().unwrap().all, 0);
        // One call larger than the share still runs when it is alone.
        let big = b.reserve("a", 90).unwrap();
        assert!(b.reserve("a", 1).is_err());
        drop(big);
        assert!(Backlog::new(0, 10).reserve("a", u64::MAX / 2).is_ok());
    }
}
