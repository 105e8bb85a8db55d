//! The environment as configuration reads it: every `TOOLGATE_*` (and the
//! data folder's `XDG_DATA_HOME`/`HOME`) goes through the lookup injected
//! into `Config::load`, so tests and the Worker pass their own.

use std::path::PathBuf;
use std::str::FromStr;

use super::ConfigError;

/// A name → value lookup (the process environment, a Worker's bindings, a
/// test's table).
pub type Lookup<'a> = &'a dyn Fn(&str) -> Option<String>;

#[derive(Clone, Copy)]
pub(super) struct Env<'a>(pub Lookup<'a>);

impl Env<'_> {
    /// The value as set, even when empty.
    pub fn raw(&self, name: &str) -> Option<String> {
        (self.0)(name)
    }

    /// The value trimmed; unset when blank.
    pub fn text(&self, name: &str) -> Option<String> {
        self.raw(name)
            .map(|v| v.trim().to_owned())
            .filter(|v| !v.is_empty())
    }

    /// `1/true/yes/on` or `0/false/no/off` (blank is false).
    pub fn flag(&self, name: &'static str) -> Result<Option<bool>, ConfigError> {
        let Some(raw) = self.raw(name) else {
            return Ok(None);
        };
        match raw.trim().to_ascii_lowercase().as_str() {
            "1" | "true" | "yes" | "on" => Ok(Some(true)),
            "0" | "false" | "no" | "off" | "" => Ok(Some(false)),
            _ => Err(ConfigError::BadValue {
                name,
                what: "a boolean (1/0, true/false)",
                value: raw,
            }),
        }
    }

    /// A number; `what` says which kind in the error.
    pub fn number<T: FromStr>(
        &self,
        name: &'static str,
        what: &'static str,
    ) -> Result<Option<T>, ConfigError> {
        let Some(raw) = self.raw(name) else {
            return Ok(None);
        };
        raw.trim()
            .parse::<T>()
            .map(Some)
            .map_err(|_| ConfigError::BadValue {
                name,
                what,
                value: raw,
            })
    }

    /// A comma-separated list; blanks are ignored.
    pub fn list(&self, name: &str) -> Option<Vec<String>> {
        self.raw(name).map(|v| split_list(&v))
    }
}

/// A comma-separated list; blanks are ignored.
pub fn split_list(raw: &str) -> Vec<String> {
    raw.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect()
}

/// Sets `field` when the variable is set, as a number.
pub(super) fn set_number<T: FromStr>(
    env: Env<'_>,
    field: &mut T,
    name: &'static str,
    what: &'static str,
) -> Result<(), ConfigError> {
    if let Some(v) = env.number(name, what)? {
        *field = v;
    }
    Ok(())
}

/// `TOOLGATE_DATA_DIR`, else `$XDG_DATA_HOME/toolgate`, else
/// `~/.local/share/toolgate`.
pub(super) fn data_dir(env: Env<'_>) -> PathBuf {
    if let Some(d) = env.text("TOOLGATE_DATA_DIR") {
        return PathBuf::from(d);
    }
    if let Some(d) = env.text("XDG_DATA_HOME") {
        return PathBuf::from(d).join("toolgate");
    }
    PathBuf::from(env.text("HOME").unwrap_or_else(|| "/tmp".into())).join(".local/share/toolgate")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_numbers_and_lists_are_read_strictly() {
        let lookup = |k: &str| match k {
            "YES" => Some(" On ".to_owned()),
            "BLANK" => Some(String::new()),
            "MAYBE" => Some("perhaps".to_owned()),
            "N" => Some(" 42 ".to_owned()),
            "LIST" => Some(" a, ,b ,".to_owned()),
            _ => None,
        };
        let env = Env(&lookup);
        assert_eq!(env.flag("YES"), Ok(Some(true)));
        assert_eq!(env.flag("BLANK"), Ok(Some(false)));
        assert_eq!(env.flag("UNSET"), Ok(None));
        assert!(env.flag("MAYBE").unwrap_err().to_string().contains("MAYBE"));
        assert_eq!(env.number::<u64>("N", "n"), Ok(Some(42)));
        assert!(env.number::<u64>("MAYBE", "a count").is_err());
        assert_eq!(env.text("BLANK"), None);
        assert_eq!(env.list("LIST"), Some(vec!["a".into(), "b".into()]));
    }
}
