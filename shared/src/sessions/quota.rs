//! Bounds on what sessions hold (docs/contracts.md#sessions): per caller,
//! live sessions and stored bytes; in all, stored bytes. A caller is its
//! identity ("" where the server takes no tokens: one quota for all).
//!
//! Soft bounds: two calls at once may each pass the check and together
//! overshoot by what they add. A new session past a bound is
//! `quota_exceeded`; a call whose save would pass one keeps its result and
//! saves nothing, with a note.

use super::store::Usage;
use crate::error::ToolError;

/// The bounds; `0` is none.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Quotas {
    /// Live sessions one caller may have.
    pub sessions_per_caller: u64,
    /// Bytes one caller's live sessions may hold (state and files, as
    /// stored).
    pub bytes_per_caller: u64,
    /// Bytes all live sessions may hold.
    pub total_bytes: u64,
}

impl Default for Quotas {
    /// None: a store that is bounded some other way.
    fn default() -> Self {
        Self {
            sessions_per_caller: 0,
            bytes_per_caller: 0,
            total_bytes: 0,
        }
    }
}

/// Whether `used` has reached `limit` (`0`: no limit).
fn reached(used: u64, limit: u64) -> bool {
    limit > 0 && used >= limit
}

impl Quotas {
    /// Whether any bound is set (else the store is not asked).
    pub fn any(&self) -> bool {
        self.sessions_per_caller + self.bytes_per_caller + self.total_bytes > 0
    }

    /// Whether a caller whose sessions use `u` may start another; `idle`
    /// is how long a session lives after its last call, in words.
    pub fn admit_new(&self, u: &Usage, idle: &str) -> Result<(), ToolError> {
        if reached(u.sessions, self.sessions_per_caller) {
            return Err(ToolError::quota(format!(
                "This caller has {} live sessions, the limit \
                 (TOOLGATE_PYTHON_SESSION_MAX_PER_CALLER); let some expire (a session ends {idle} \
                 after its last call) or continue one",
                u.sessions
            )));
        }
        if reached(u.bytes, self.bytes_per_caller) {
            return Err(ToolError::quota(format!(
                "This caller's sessions hold {} bytes, the limit of {} \
                 (TOOLGATE_PYTHON_SESSION_MAX_MB_PER_CALLER); let some expire (a session ends \
                 {idle} after its last call) or continue one",
                u.bytes, self.bytes_per_caller
            )));
        }
        if reached(u.total_bytes, self.total_bytes) {
            return Err(ToolError::quota(format!(
                "Session storage is full: sessions hold {} bytes, the limit of {} \
                 (TOOLGATE_PYTHON_SESSION_MAX_TOTAL_MB); try again later",
                u.total_bytes, self.total_bytes
            )));
        }
        Ok(())
    }

    /// The note for a save that would take a session from `old` to `new`
    /// bytes past a bound, given what the caller's sessions and all use
    /// now (`u`, this session's `old` included); `None` when it fits.
    pub fn save_note(&self, u: &Usage, old: u64, new: u64) -> Option<String> {
        let after = |used: u64| used.saturating_sub(old) + new;
        let over = |used: u64, limit: u64| limit > 0 && new > old && after(used) > limit;
        let why = if over(u.bytes, self.bytes_per_caller) {
            format!(
                "this caller's sessions would hold {} bytes, over the limit of {} \
                 (TOOLGATE_PYTHON_SESSION_MAX_MB_PER_CALLER)",
                after(u.bytes),
                self.bytes_per_caller
            )
        } else if over(u.total_bytes, self.total_bytes) {
            format!(
                "sessions would hold {} bytes in all, over the limit of {} \
                 (TOOLGATE_PYTHON_SESSION_MAX_TOTAL_MB)",
                after(u.total_bytes),
                self.total_bytes
            )
        } else {
            return None;
        };
        Some(super::nothing_saved(&why))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn usage(sessions: u64, bytes: u64, total_bytes: u64) -> Usage {
        Usage {
            sessions,
            bytes,
            total_bytes,
        }
    }

    #[test]
    fn each_bound_names_its_setting() {
        let q = Quotas {
            sessions_per_caller: 3,
            bytes_per_caller: 1000,
            total_bytes: 5000,
        };
        assert!(q.admit_new(&usage(2, 999, 4999), "1 hour").is_ok());
        for (u, says) in [
            (
                usage(3, 0, 0),
                "3 live sessions, the limit (TOOLGATE_PYTHON_SESSION_MAX_PER_CALLER)",
            ),
            (
                usage(0, 1000, 0),
                "TOOLGATE_PYTHON_SESSION_MAX_MB_PER_CALLER",
            ),
            (usage(0, 0, 5000), "TOOLGATE_PYTHON_SESSION_MAX_TOTAL_MB"),
        ] {
            let e = q.admit_new(&u, "1 hour").unwrap_err();
            assert_eq!(e.code, crate::error::ErrorCode::QuotaExceeded);
            assert!(e.message.contains(says), "{}", e.message);
        }
        assert!(
            Quotas::default()
                .admit_new(&usage(9, 9, 9), "1 hour")
                .is_ok()
        );
        assert!(!Quotas::default().any());
    }

    #[test]
    fn a_save_past_a_bound_is_a_note_and_shrinking_always_fits() {
        let q = Quotas {
            sessions_per_caller: 0,
            bytes_per_caller: 1000,
            total_bytes: 5000,
        };
        // 900 used, of which this session's 100: growing it to 200 fits.
        assert_eq!(q.save_note(&usage(1, 900, 900), 100, 200), None);
        let note = q.save_note(&usage(1, 900, 900), 100, 201).unwrap();
        assert!(
            note.contains("would hold 1001 bytes, over the limit of 1000"),
            "{note}"
        );
        let note = q.save_note(&usage(1, 0, 4950), 0, 51).unwrap();
        assert!(
            note.contains("TOOLGATE_PYTHON_SESSION_MAX_TOTAL_MB"),
            "{note}"
        );
        assert_eq!(q.save_note(&usage(1, 5000, 9000), 300, 200), None);
    }
}
