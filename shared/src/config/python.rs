//! `[python]` and `TOOLGATE_PYTHON_*`: the sandbox's limits and allowlist
//! (docs/contracts.md#sandbox-limits).

use serde::Deserialize;

use super::ConfigError;
use super::env::{Env, set_number};
pub use crate::allowlist::{DEFAULT_MODULES, FORBIDDEN_MODULES};

/// A script's timeout when neither the file nor the environment sets one.
pub const DEFAULT_TIMEOUT_SECS: u64 = 20;
/// The shortest timeout; a shorter one is raised to it.
pub const MIN_TIMEOUT_SECS: u64 = 1;
/// The longest timeout (20 minutes); a longer one is lowered to it.
pub const MAX_TIMEOUT_SECS: u64 = 1200;
/// A script's memory cap in MiB when none is set.
pub const DEFAULT_MEMORY_MB: u64 = 256;
/// The largest `max_files_mb`: a call's files travel in its request body.
pub const MAX_FILES_MB: u64 = 64;

/// The zygote's calls before it is replaced, when none is set. Its
/// warm-up costs ~0.2 s of one CPU (at nice 10), ≤0.02 ms a call at this.
pub const DEFAULT_ZYGOTE_MAX_CALLS: u64 = 10_000;
/// The zygote's life once it has served a call, when none is set.
pub const DEFAULT_ZYGOTE_MAX_AGE_SECS: u64 = 1800;

/// A session's idle life when none is set: an hour.
pub const DEFAULT_SESSION_IDLE_SECS: u64 = 3600;
/// A session's saved state cap in MiB when none is set.
pub const DEFAULT_SESSION_MAX_STATE_MB: u64 = 4;

/// Live sessions one caller may have, when not set.
pub const DEFAULT_SESSION_MAX_PER_CALLER: u64 = 100;
/// MiB one caller's sessions may hold, when not set.
pub const DEFAULT_SESSION_MAX_MB_PER_CALLER: u64 = 256;
/// MiB all sessions may hold, when not set.
pub const DEFAULT_SESSION_MAX_TOTAL_MB: u64 = 4096;
/// MiB of calls (code, files, state) the sandbox may hold waiting for a
/// place or running, when not set.
pub const DEFAULT_MAX_QUEUED_MB: u64 = 128;

/// The local session store's file in the data folder.
const SESSION_DB_FILE: &str = "sessions.sqlite3";

/// How `python.execute` runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PythonConfig {
    /// The tool is `<namespace>.execute`.
    pub namespace: String,
    /// The default deadline; a call may ask for another within 1–1200 s.
    pub timeout_secs: u64,
    /// Extra modules beyond [`DEFAULT_MODULES`], validated.
    pub extra_modules: Vec<String>,
    /// A script's memory cap.
    pub memory_mb: u64,
    /// Refuse to start where the kernel refuses the seccomp filter.
    pub require_seccomp: bool,
    /// Warm children kept forked ahead of calls.
    pub spare_children: usize,
    /// The zygote is replaced after this many calls (0: never), for a new
    /// string-hash key and new addresses of its warm objects.
    pub zygote_max_calls: u64,
    /// ...or this long after it warmed, once it has served a call (0: never).
    pub zygote_max_age_secs: u64,
    /// Calls that may run at once; more wait their turn.
    pub max_concurrency: usize,
    /// Calls one caller may run at once; `None` is three quarters of
    /// `max_concurrency`, so a burst always leaves room for others.
    pub max_per_caller: Option<usize>,
    /// The `files` a call gives, and those a script returns, in MiB each way.
    pub max_files_mb: u64,
    /// A session ends this long after its last call.
    pub session_idle_secs: u64,
    /// The most state a session saves, in MiB; a call whose state is larger
    /// keeps its result, and the session its state from before.
    pub session_max_state_mb: u64,
    /// Where sessions are kept locally (SQLite); `None` where there is no
    /// lasting local disk (a Lambda function), and no other store is set.
    pub session_db: Option<std::path::PathBuf>,
    /// The process is frozen between calls (an AWS Lambda instance, once
    /// it has answered), so no work after a call happens before the next.
    pub frozen_between_calls: bool,
    /// `TOOLGATE_SESSIONS_TABLE`: sessions in this DynamoDB table instead.
    pub session_table: Option<String>,
    /// Live sessions one caller may have (0: no bound).
    pub session_max_per_caller: u64,
    /// MiB one caller's live sessions may hold (0: no bound).
    pub session_max_mb_per_caller: u64,
    /// MiB all live sessions may hold (0: no bound).
    pub session_max_total_mb: u64,
    /// MiB of calls the sandbox may hold at once, waiting for a place or
    /// running: their code, files and session state (0: no bound). One
    /// caller may hold half, and always one call's worth.
    pub max_queued_mb: u64,
}

impl Default for PythonConfig {
    fn default() -> Self {
        Self {
            namespace: "python".into(),
            timeout_secs: DEFAULT_TIMEOUT_SECS,
            extra_modules: Vec::new(),
            memory_mb: DEFAULT_MEMORY_MB,
            require_seccomp: false,
            spare_children: 2,
            zygote_max_calls: DEFAULT_ZYGOTE_MAX_CALLS,
            zygote_max_age_secs: DEFAULT_ZYGOTE_MAX_AGE_SECS,
            max_concurrency: 16,
            max_per_caller: None,
            max_files_mb: crate::files::DEFAULT_MAX_FILES_MB,
            session_idle_secs: DEFAULT_SESSION_IDLE_SECS,
            session_max_state_mb: DEFAULT_SESSION_MAX_STATE_MB,
            session_db: None,
            frozen_between_calls: false,
            session_table: None,
            session_max_per_caller: DEFAULT_SESSION_MAX_PER_CALLER,
            session_max_mb_per_caller: DEFAULT_SESSION_MAX_MB_PER_CALLER,
            session_max_total_mb: DEFAULT_SESSION_MAX_TOTAL_MB,
            max_queued_mb: DEFAULT_MAX_QUEUED_MB,
        }
    }
}

/// `[python]` as written.
#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub(super) struct FilePython {
    namespace: Option<String>,
    timeout: Option<i64>,
    allowed_modules: Option<Vec<String>>,
    memory_mb: Option<u64>,
    require_seccomp: Option<bool>,
    spare_children: Option<usize>,
    zygote_max_calls: Option<u64>,
    zygote_max_age_secs: Option<u64>,
    max_concurrency: Option<usize>,
    max_per_caller: Option<usize>,
    max_files_mb: Option<u64>,
    session_idle_secs: Option<u64>,
    session_max_state_mb: Option<u64>,
    session_max_per_caller: Option<u64>,
    session_max_mb_per_caller: Option<u64>,
    session_max_total_mb: Option<u64>,
    max_queued_mb: Option<u64>,
}

impl PythonConfig {
    /// The file's table, then the environment, checked.
    pub(super) fn load(file: FilePython, env: Env<'_>) -> Result<Self, ConfigError> {
        let mut p = Self::default();
        if let Some(ns) = file.namespace {
            p.namespace = ns;
        }
        if let Some(t) = file.timeout {
            p.timeout_secs = clamp_timeout(t);
        }
        if let Some(m) = file.allowed_modules {
            p.extra_modules = m;
        }
        p.memory_mb = file.memory_mb.unwrap_or(p.memory_mb);
        p.require_seccomp = file.require_seccomp.unwrap_or(p.require_seccomp);
        p.spare_children = file.spare_children.unwrap_or(p.spare_children);
        p.zygote_max_calls = file.zygote_max_calls.unwrap_or(p.zygote_max_calls);
        p.zygote_max_age_secs = file.zygote_max_age_secs.unwrap_or(p.zygote_max_age_secs);
        p.max_concurrency = file.max_concurrency.unwrap_or(p.max_concurrency);
        p.max_per_caller = file.max_per_caller.or(p.max_per_caller);
        p.max_files_mb = file.max_files_mb.unwrap_or(p.max_files_mb);
        p.session_idle_secs = file.session_idle_secs.unwrap_or(p.session_idle_secs);
        p.session_max_state_mb = file.session_max_state_mb.unwrap_or(p.session_max_state_mb);
        p.session_max_per_caller = file
            .session_max_per_caller
            .unwrap_or(p.session_max_per_caller);
        p.session_max_mb_per_caller = file
            .session_max_mb_per_caller
            .unwrap_or(p.session_max_mb_per_caller);
        p.session_max_total_mb = file.session_max_total_mb.unwrap_or(p.session_max_total_mb);
        p.max_queued_mb = file.max_queued_mb.unwrap_or(p.max_queued_mb);

        if let Some(v) = env.raw("TOOLGATE_PYTHON_TIMEOUT") {
            p.timeout_secs = parse_timeout(&v);
        }
        if let Some(m) = env.list("TOOLGATE_PYTHON_ALLOWED_MODULES") {
            p.extra_modules.extend(m);
        }
        if let Some(v) = env.raw("TOOLGATE_PYTHON_NAMESPACE") {
            p.namespace = v.trim().to_owned();
        }
        set_number(
            env,
            &mut p.memory_mb,
            "TOOLGATE_PYTHON_MEMORY_MB",
            "a whole number of MiB",
        )?;
        if let Some(b) = env.flag("TOOLGATE_PYTHON_REQUIRE_SECCOMP")? {
            p.require_seccomp = b;
        }
        set_number(
            env,
            &mut p.spare_children,
            "TOOLGATE_PYTHON_SPARE_CHILDREN",
            "a whole number",
        )?;
        set_number(
            env,
            &mut p.zygote_max_calls,
            "TOOLGATE_PYTHON_ZYGOTE_MAX_CALLS",
            "a whole number of calls (0: never)",
        )?;
        set_number(
            env,
            &mut p.zygote_max_age_secs,
            "TOOLGATE_PYTHON_ZYGOTE_MAX_AGE_SECS",
            "a whole number of seconds (0: never)",
        )?;
        set_number(
            env,
            &mut p.max_concurrency,
            "TOOLGATE_PYTHON_MAX_CONCURRENCY",
            "a whole number",
        )?;
        if let Some(n) = env.number("TOOLGATE_PYTHON_MAX_PER_CALLER", "a whole number")? {
            p.max_per_caller = Some(n);
        }
        set_number(
            env,
            &mut p.max_files_mb,
            "TOOLGATE_PYTHON_MAX_FILES_MB",
            "a whole number of MiB",
        )?;
        set_number(
            env,
            &mut p.session_idle_secs,
            "TOOLGATE_PYTHON_SESSION_IDLE_SECS",
            "a whole number of seconds",
        )?;
        set_number(
            env,
            &mut p.session_max_state_mb,
            "TOOLGATE_PYTHON_SESSION_MAX_STATE_MB",
            "a whole number of MiB",
        )?;
        set_number(
            env,
            &mut p.session_max_per_caller,
            "TOOLGATE_PYTHON_SESSION_MAX_PER_CALLER",
            "a whole number (0: no limit)",
        )?;
        set_number(
            env,
            &mut p.session_max_mb_per_caller,
            "TOOLGATE_PYTHON_SESSION_MAX_MB_PER_CALLER",
            "a whole number of MiB (0: no limit)",
        )?;
        set_number(
            env,
            &mut p.session_max_total_mb,
            "TOOLGATE_PYTHON_SESSION_MAX_TOTAL_MB",
            "a whole number of MiB (0: no limit)",
        )?;
        set_number(
            env,
            &mut p.max_queued_mb,
            "TOOLGATE_PYTHON_MAX_QUEUED_MB",
            "a whole number of MiB (0: no limit)",
        )?;
        // A Lambda instance's disk is its own and short-lived: sessions
        // there need a shared store.
        p.session_table = env.text("TOOLGATE_SESSIONS_TABLE");
        p.frozen_between_calls = env.text("AWS_LAMBDA_RUNTIME_API").is_some();
        if !p.frozen_between_calls {
            p.session_db = Some(super::env::data_dir(env).join(SESSION_DB_FILE));
        }
        p.validate()?;
        Ok(p)
    }

    fn validate(&self) -> Result<(), ConfigError> {
        validate_namespace(&self.namespace)?;
        for m in &self.extra_modules {
            validate_module(m)?;
        }
        let bad = |name, what, value: usize| ConfigError::BadValue {
            name,
            what,
            value: value.to_string(),
        };
        if !(16..=65_536).contains(&self.memory_mb) {
            return Err(bad(
                "memory_mb",
                "between 16 and 65536",
                self.memory_mb as usize,
            ));
        }
        if !(1..=1024).contains(&self.max_concurrency) {
            return Err(bad(
                "max_concurrency",
                "between 1 and 1024",
                self.max_concurrency,
            ));
        }
        if !(1..=self.max_concurrency).contains(&self.per_caller()) {
            return Err(bad(
                "max_per_caller",
                "between 1 and max_concurrency",
                self.per_caller(),
            ));
        }
        // A request carries the files as base64 (4/3 of their size), and
        // the HTTP body limit follows from this (`http::body`).
        if !(1..=MAX_FILES_MB).contains(&self.max_files_mb) {
            return Err(bad(
                "max_files_mb",
                "between 1 and 64",
                self.max_files_mb as usize,
            ));
        }
        if !(1..=30 * 86_400).contains(&self.session_idle_secs) {
            return Err(bad(
                "session_idle_secs",
                "between 1 and 2592000 (30 days)",
                self.session_idle_secs as usize,
            ));
        }
        if !(1..=64).contains(&self.session_max_state_mb) {
            return Err(bad(
                "session_max_state_mb",
                "between 1 and 64",
                self.session_max_state_mb as usize,
            ));
        }
        // Each spare is a forked interpreter (tens of MB once warm).
        if self.spare_children > 64 {
            return Err(bad("spare_children", "at most 64", self.spare_children));
        }
        Ok(())
    }

    /// The share one caller may hold: the setting, else three quarters of
    /// the total (at least 1).
    pub fn per_caller(&self) -> usize {
        self.max_per_caller
            .unwrap_or((self.max_concurrency * 3 / 4).max(1))
    }

    /// [`Self::max_files_mb`] in bytes.
    pub fn max_files_bytes(&self) -> u64 {
        self.max_files_mb << 20
    }

    /// [`Self::session_max_state_mb`] in bytes.
    pub fn max_state_bytes(&self) -> u64 {
        self.session_max_state_mb << 20
    }

    /// The session quotas these settings name.
    pub fn session_quotas(&self) -> crate::sessions::Quotas {
        crate::sessions::Quotas {
            sessions_per_caller: self.session_max_per_caller,
            bytes_per_caller: self.session_max_mb_per_caller.saturating_mul(1 << 20),
            total_bytes: self.session_max_total_mb.saturating_mul(1 << 20),
        }
    }

    /// [`Self::max_queued_mb`] in bytes (0: no bound).
    pub fn max_queued_bytes(&self) -> u64 {
        self.max_queued_mb.saturating_mul(1 << 20)
    }

    /// The tool's name, `<namespace>.execute`.
    pub fn tool_name(&self) -> String {
        format!("{}.execute", self.namespace)
    }

    /// Default and extra modules, sorted and de-duplicated.
    pub fn allowed_modules(&self) -> Vec<String> {
        let mut all: Vec<String> = DEFAULT_MODULES.iter().map(|s| s.to_string()).collect();
        all.extend(self.extra_modules.iter().cloned());
        all.sort();
        all.dedup();
        all
    }
}

/// `TOOLGATE_PYTHON_TIMEOUT`: anything that does not parse falls back to 20;
/// the value is clamped to 1–1200 (docs/contracts.md#sandbox-limits).
pub fn parse_timeout(raw: &str) -> u64 {
    raw.trim()
        .parse::<i64>()
        .map(clamp_timeout)
        .unwrap_or(DEFAULT_TIMEOUT_SECS)
}

/// What the timeout's clamping or default changed from what was given, in
/// words for the operator (the contract clamps rather than refuses).
pub(super) fn timeout_warnings(file: &FilePython, env: Env<'_>) -> Vec<String> {
    let range = format!("{MIN_TIMEOUT_SECS}–{MAX_TIMEOUT_SECS} seconds");
    let mut said = Vec::new();
    if let Some(t) = file.timeout
        && clamp_timeout(t) as i64 != t
    {
        said.push(format!(
            "python.timeout = {t} is outside {range}: using {}",
            clamp_timeout(t)
        ));
    }
    if let Some(raw) = env.raw("TOOLGATE_PYTHON_TIMEOUT") {
        match raw.trim().parse::<i64>() {
            Ok(t) if clamp_timeout(t) as i64 != t => said.push(format!(
                "TOOLGATE_PYTHON_TIMEOUT={raw:?} is outside {range}: using {}",
                clamp_timeout(t)
            )),
            Ok(_) => {}
            Err(_) => said.push(format!(
                "TOOLGATE_PYTHON_TIMEOUT={raw:?} is not a whole number of seconds: using the \
                 default, {DEFAULT_TIMEOUT_SECS}"
            )),
        }
    }
    said
}

/// A timeout in seconds, clamped to 1–1200.
pub fn clamp_timeout(secs: i64) -> u64 {
    secs.clamp(MIN_TIMEOUT_SECS as i64, MAX_TIMEOUT_SECS as i64) as u64
}

fn validate_module(name: &str) -> Result<(), ConfigError> {
    let ok = !name.is_empty()
        && name.split('.').all(|part| {
            let mut cs = part.chars();
            matches!(cs.next(), Some(c) if c == '_' || c.is_ascii_alphabetic())
                && cs.all(|c| c == '_' || c.is_ascii_alphanumeric())
        });
    if !ok {
        return Err(ConfigError::BadModuleName(name.to_owned()));
    }
    let top = name.split('.').next().unwrap_or(name);
    if FORBIDDEN_MODULES.contains(&top) {
        return Err(ConfigError::ForbiddenModule(name.to_owned()));
    }
    Ok(())
}

fn validate_namespace(ns: &str) -> Result<(), ConfigError> {
    let ok = (1..=40).contains(&ns.len())
        && ns
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if ok {
        Ok(())
    } else {
        Err(ConfigError::BadNamespace(ns.to_owned()))
    }
}
