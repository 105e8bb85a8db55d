//! Where clarifications live: one trait, an implementation per runtime.
//! `settle` is the one write that races (two answers, an answer and the
//! expiry): it must succeed for exactly one caller, atomically.

use std::future::Future;
use std::pin::Pin;

use super::{Clarification, Status};

/// What a [`ClarifyStore`] returns: the value, or the store's error in words.
pub type StoreFuture<'a, T> = Pin<Box<dyn Future<Output = Result<T, String>> + Send + 'a>>;

/// How a pending clarification ends.
#[derive(Clone, Debug)]
pub struct Settlement {
    /// Where it ends: answered, cancelled or expired.
    pub status: Status,
    /// The answer's text, when answered.
    pub answer: Option<String>,
    /// The index of the option picked, when answered with one.
    pub choice: Option<usize>,
    /// Unix milliseconds; an answer or cancel only wins before the expiry.
    pub at: i64,
}

/// Where clarifications are kept (see the module's notes on `settle`).
pub trait ClarifyStore: Send + Sync {
    /// Adds a new pending clarification.
    fn insert<'a>(&'a self, c: &'a Clarification) -> StoreFuture<'a, ()>;
    /// The clarification with this id as stored, or `None`; one past its expiry
    /// may still read `pending` here.
    fn get<'a>(&'a self, id: &'a str) -> StoreFuture<'a, Option<Clarification>>;
    /// Moves a clarification from `pending` to `s.status`, only if it is
    /// still pending and (unless `s` is the expiry) not yet expired.
    /// Returns whether this call made the change.
    fn settle<'a>(&'a self, id: &'a str, s: &'a Settlement) -> StoreFuture<'a, bool>;
    /// Clarifications whose waiting workflow still needs telling: pending
    /// ones with a task token past their expiry, and (stores that track
    /// it) settled ones whose callback has not landed yet.
    fn due(&self, now: i64) -> StoreFuture<'_, Vec<Clarification>>;
    /// The workflow has been told (or can no longer be): `due` stops
    /// returning `id`. Stores that only return pending ones need nothing.
    fn reported<'a>(&'a self, _id: &'a str) -> StoreFuture<'a, ()> {
        Box::pin(async { Ok(()) })
    }
    /// Records how telling `channel` of `event` went (`ok` or the error);
    /// the latest outcome per channel and event stands, and `get` returns
    /// them in `notified`.
    fn note<'a>(
        &'a self,
        id: &'a str,
        channel: &'a str,
        event: &'a str,
        outcome: &'a str,
    ) -> StoreFuture<'a, ()>;
    /// Records what approving clarification `id` allows (`approval::Binding`
    /// as JSON). Stores where no gated tool runs keep none.
    fn bind<'a>(&'a self, _id: &'a str, _binding: &'a str) -> StoreFuture<'a, ()> {
        Box::pin(async { Err("this store keeps no approvals".into()) })
    }
    /// `id`'s binding, and when its approval was used (Unix ms), if ever.
    fn binding<'a>(&'a self, _id: &'a str) -> StoreFuture<'a, Option<(String, Option<i64>)>> {
        Box::pin(async { Ok(None) })
    }
    /// Marks `id`'s approval used at `at`: true for the one call that did.
    fn consume<'a>(&'a self, _id: &'a str, _at: i64) -> StoreFuture<'a, bool> {
        Box::pin(async { Ok(false) })
    }
}

/// The SQL both SQL stores run (SQLite locally, D1 on the Worker), with
/// numbered parameters.
pub mod sql {
    /// The table, and its index of rows by status and expiry; safe to run at
    /// every open.
    pub const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS clarifications (
    id TEXT PRIMARY KEY,
    question TEXT NOT NULL,
    options TEXT NOT NULL,
    status TEXT NOT NULL,
    answer TEXT,
    choice INTEGER,
    created_at INTEGER NOT NULL,
    expires_at INTEGER NOT NULL,
    settled_at INTEGER,
    task_token TEXT
);
CREATE INDEX IF NOT EXISTS pending_by_expiry ON clarifications (status, expires_at);
CREATE TABLE IF NOT EXISTS notices (
    id TEXT NOT NULL,
    channel TEXT NOT NULL,
    event TEXT NOT NULL,
    outcome TEXT NOT NULL,
    at INTEGER NOT NULL,
    PRIMARY KEY (id, channel, event)
);
CREATE TABLE IF NOT EXISTS approvals (
    id TEXT PRIMARY KEY,
    binding TEXT NOT NULL,
    used_at INTEGER
);
";

    /// ?1 id, ?2 binding (JSON).
    pub const BIND: &str = "INSERT INTO approvals (id, binding) VALUES (?1, ?2)";

    /// ?1 id: its binding and when it was used.
    pub const BINDING: &str = "SELECT binding, used_at FROM approvals WHERE id = ?1";

    /// ?1 id, ?2 at: the one write that makes an approval single-use.
    pub const CONSUME: &str = "UPDATE approvals SET used_at = ?2 WHERE id = ?1 AND used_at IS NULL";

    /// ?1 id, ?2 channel, ?3 event, ?4 outcome, ?5 at: the latest stands.
    pub const NOTE: &str = "INSERT INTO notices (id, channel, event, outcome, at) VALUES (?1, ?2, ?3, ?4, ?5)
         ON CONFLICT (id, channel, event) DO UPDATE SET outcome = excluded.outcome, at = excluded.at";

    /// ?1 id: its notices.
    pub const NOTICES: &str = "SELECT channel, event, outcome FROM notices WHERE id = ?1";

    /// ?1 id, ?2 question, ?3 options (JSON), ?4 created_at, ?5 expires_at,
    /// ?6 task_token.
    pub const INSERT: &str = "INSERT INTO clarifications (id, question, options, status, created_at, expires_at, task_token)
         VALUES (?1, ?2, ?3, 'pending', ?4, ?5, ?6)";

    /// ?1 id.
    pub const GET: &str = "SELECT * FROM clarifications WHERE id = ?1";

    /// ?1 id, ?2 status, ?3 answer, ?4 choice, ?5 at, ?6 1 when expiring.
    /// The one racing write: only a pending row changes, and an answer only
    /// before the expiry.
    pub const SETTLE: &str =
        "UPDATE clarifications SET status = ?2, answer = ?3, choice = ?4, settled_at = ?5
         WHERE id = ?1 AND status = 'pending' AND (?6 OR expires_at > ?5)";

    /// ?1 now.
    pub const EXPIRED_PENDING: &str = "SELECT * FROM clarifications
         WHERE status = 'pending' AND expires_at <= ?1 AND task_token IS NOT NULL";
}
