//! When a zygote is replaced by a fresh one. A zygote's children are
//! copies of its warm image: they share its string-hash key and the
//! addresses of every warm object, which a script can read (`hash('x')`,
//! `id(len)`). Replacing it after so many calls or so long bounds what
//! scripts can learn of, and carry between calls through, one image.

use std::time::Duration;

/// When a zygote is replaced (docs/sandbox.md#recycling).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Recycle {
    /// After this many calls; 0: never.
    pub max_calls: u64,
    /// This long after it warmed, once it has served a call; `None`: never.
    pub max_age: Option<Duration>,
}

impl Recycle {
    /// Never replaced (while it lives).
    pub const NEVER: Self = Self {
        max_calls: 0,
        max_age: None,
    };

    /// From the settings, where 0 means never.
    pub fn new(max_calls: u64, max_age_secs: u64) -> Self {
        Self {
            max_calls,
            max_age: (max_age_secs > 0).then(|| Duration::from_secs(max_age_secs)),
        }
    }

    /// Whether a zygote that has served `calls` and was warm `age` ago is
    /// due. An idle zygote does not age: no script has seen its key or
    /// addresses, and replacing it would cost a warm-up for nothing.
    pub fn due(&self, calls: u64, age: Duration) -> bool {
        let by_count = self.max_calls > 0 && calls >= self.max_calls;
        let by_age = calls > 0 && self.max_age.is_some_and(|max| age >= max);
        by_count || by_age
    }
}

/// The CPU a process has used (user and system), from /proc/PID/stat: a
/// zygote's at its `Ready` is what its warm-up cost the machine.
pub(super) fn cpu_ms(pid: i32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Fields after the command name (which may hold spaces and parentheses);
    // utime and stime are fields 14 and 15 of the whole line.
    let rest = stat.rsplit_once(')')?.1;
    let mut f = rest.split_whitespace().skip(11);
    let ticks = f.next()?.parse::<u64>().ok()? + f.next()?.parse::<u64>().ok()?;
    // SAFETY: sysconf with a valid name has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    let hz = u64::try_from(hz).ok().filter(|h| *h > 0)?;
    Some(ticks * 1000 / hz)
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIN: Duration = Duration::from_secs(60);

    #[test]
    fn due_by_count_or_by_age_once_used() {
        let r = Recycle::new(100, 1800);
        assert!(!r.due(99, MIN));
        assert!(r.due(100, MIN));
        assert!(!r.due(1, 29 * MIN));
        assert!(r.due(1, 30 * MIN));
        assert!(!r.due(0, 300 * MIN), "an idle zygote does not age");
    }

    #[test]
    fn zero_is_never() {
        assert_eq!(Recycle::new(0, 0), Recycle::NEVER);
        assert!(!Recycle::NEVER.due(u64::MAX, Duration::MAX));
        assert!(!Recycle::new(0, 10).due(u64::MAX, Duration::from_secs(9)));
        assert!(Recycle::new(0, 10).due(1, MIN));
        assert!(Recycle::new(5, 0).due(5, Duration::ZERO));
        assert_eq!(Recycle::default(), Recycle::NEVER);
    }

    #[test]
    fn a_process_cpu_is_read() {
        // SAFETY: getpid has no preconditions.
        let me = unsafe { libc::getpid() };
        assert!(cpu_ms(me).is_some());
        assert_eq!(cpu_ms(-1), None);
    }
}
