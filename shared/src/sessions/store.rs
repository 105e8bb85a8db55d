//! Where sessions live: one trait, an implementation per runtime. A
//! session is held by one call at a time through a lease (`claim`), so two
//! calls on one session never interleave, even on two servers or two
//! Lambda instances; a lease that is never given back ends by itself.

use std::future::Future;
use std::pin::Pin;

use crate::files::Files;

/// What a [`SessionStore`] returns: the value, or the store's error in words.
pub type StoreFuture<'a, T> = Pin<Box<dyn Future<Output = Result<T, String>> + Send + 'a>>;

/// One session as stored.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Record {
    /// The state its last call saved (empty: none yet).
    pub state: Vec<u8>,
    /// Its files.
    pub files: Files,
}

/// The bytes a session takes as stored: its state, and its files as
/// base64 JSON (what every store writes).
pub fn stored_size(state: &[u8], files: &Files) -> u64 {
    let files = serde_json::to_vec(&crate::files::to_wire(files)).map_or(0, |v| v.len());
    (state.len() + files) as u64
}

/// What live sessions hold ([`SessionStore::usage`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Usage {
    /// One owner's live sessions.
    pub sessions: u64,
    /// The bytes they hold ([`stored_size`] of each, as last saved).
    pub bytes: u64,
    /// The bytes every live session holds; 0 where the store cannot sum
    /// them without a Scan (DynamoDB), which [`super::Quotas`] then reads as
    /// the total bound not applying (0 is a lower bound: it never refuses
    /// wrongly).
    pub total_bytes: u64,
}

/// A call's hold on a session.
#[derive(Debug, Clone)]
pub struct Lease {
    /// Unguessable; only its holder can save or release.
    pub token: String,
    /// Unix milliseconds: the hold ends by itself then (a crashed server).
    pub until: i64,
}

/// What [`SessionStore::claim`] found.
#[derive(Debug)]
pub enum Claim {
    /// The session, now held by the lease.
    Held(Record),
    /// No such session for this owner.
    NotFound,
    /// The session idled past its expiry.
    Expired,
    /// Another call holds it.
    Busy,
}

/// How long an expired session answers `expired` before it reads as
/// missing (and its store may forget it).
pub const FORGET_AFTER_MS: i64 = 86_400_000;

impl Claim {
    /// Why a claim that did not take failed, from what the store holds
    /// for the id: its `(owner, expires_at)` (Unix ms), if any. Another
    /// owner's session reads as missing, and so does one expired for
    /// longer than [`FORGET_AFTER_MS`], whether or not its store has
    /// deleted it yet (a purge or a TTL runs late).
    pub fn refused(found: Option<(&str, i64)>, owner: &str, now: i64) -> Self {
        match found {
            Some((o, _)) if o != owner => Self::NotFound,
            None => Self::NotFound,
            Some((_, expires_at)) if expires_at <= now - FORGET_AFTER_MS => Self::NotFound,
            Some((_, expires_at)) if expires_at <= now => Self::Expired,
            Some(_) => Self::Busy,
        }
    }
}

/// Where sessions are kept.
pub trait SessionStore: Send + Sync {
    /// Adds a new, empty session owned by `owner`, held by `lease`.
    fn create<'a>(
        &'a self,
        id: &'a str,
        owner: &'a str,
        lease: &'a Lease,
        expires_at: i64,
    ) -> StoreFuture<'a, ()>;
    /// Takes the session for a call, if `owner` owns it, it has not
    /// expired at `now` and no other lease holds it.
    fn claim<'a>(
        &'a self,
        id: &'a str,
        owner: &'a str,
        lease: &'a Lease,
        now: i64,
    ) -> StoreFuture<'a, Claim>;
    /// Stores the session's state and files after a call and gives the
    /// session back. Returns false when the lease was lost.
    fn save<'a>(
        &'a self,
        id: &'a str,
        token: &'a str,
        state: &'a [u8],
        files: &'a Files,
        expires_at: i64,
    ) -> StoreFuture<'a, bool>;
    /// Gives the session back unchanged.
    fn release<'a>(&'a self, id: &'a str, token: &'a str) -> StoreFuture<'a, ()>;
    /// Moves the end of the hold `token` has on the session to `until`
    /// (Unix ms), while the call still waits or runs. False when the
    /// lease was lost.
    fn extend<'a>(&'a self, id: &'a str, token: &'a str, until: i64) -> StoreFuture<'a, bool>;
    /// What `owner`'s live sessions (unexpired at `now`) hold, and what
    /// all do; `None` where the store cannot count them cheaply (no index
    /// by owner): quotas are then not enforced.
    fn usage<'a>(&'a self, _owner: &'a str, _now: i64) -> StoreFuture<'a, Option<Usage>> {
        Box::pin(async { Ok(None) })
    }
}

/// The SQL both SQL stores run (SQLite locally, D1 on the Worker).
pub mod sql {
    /// The table; safe to run at every open.
    pub const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS sessions (
    id TEXT PRIMARY KEY,
    owner TEXT NOT NULL,
    state BLOB NOT NULL,
    files TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    expires_at INTEGER NOT NULL,
    lease TEXT,
    lease_until INTEGER NOT NULL DEFAULT 0,
    bytes INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS sessions_by_expiry ON sessions (expires_at);
";
    /// The `bytes` column, for a table made before it (its sessions count
    /// as empty until their next save). Fails on a table that has it.
    pub const ADD_BYTES: &str = "ALTER TABLE sessions ADD COLUMN bytes INTEGER NOT NULL DEFAULT 0";
    /// Covering indexes for [`USAGE`] and [`TOTAL`], made once `bytes`
    /// exists: the count reads no row (a row holds megabytes).
    pub const USAGE_INDEXES: &str = "
CREATE INDEX IF NOT EXISTS sessions_by_owner ON sessions (owner, expires_at, bytes);
CREATE INDEX IF NOT EXISTS sessions_live_bytes ON sessions (expires_at, bytes);
";
    /// ?1 owner, ?2 now: the owner's live sessions and their bytes.
    pub const USAGE: &str = "SELECT count(*) AS sessions, coalesce(sum(bytes), 0) AS bytes
         FROM sessions WHERE owner = ?1 AND expires_at > ?2";
    /// ?1 now: the bytes of every live session.
    pub const TOTAL: &str =
        "SELECT coalesce(sum(bytes), 0) AS bytes FROM sessions WHERE expires_at > ?1";
    /// ?1 id, ?2 lease, ?3 lease_until.
    pub const EXTEND: &str = "UPDATE sessions SET lease_until = ?3 WHERE id = ?1 AND lease = ?2";
    /// ?1 id, ?2 owner, ?3 lease, ?4 lease_until, ?5 now, ?6 expires_at.
    pub const CREATE: &str =
        "INSERT INTO sessions (id, owner, state, files, created_at, expires_at, lease, lease_until)
         VALUES (?1, ?2, x'', '{}', ?5, ?6, ?3, ?4)";
    /// ?1 id, ?2 owner, ?3 lease, ?4 lease_until, ?5 now. The one racing
    /// write: only a session free at `now` changes hands.
    pub const CLAIM: &str = "UPDATE sessions SET lease = ?3, lease_until = ?4
         WHERE id = ?1 AND owner = ?2 AND expires_at > ?5 AND lease_until <= ?5";
    /// ?1 id, ?2 lease.
    pub const HELD: &str = "SELECT state, files FROM sessions WHERE id = ?1 AND lease = ?2";
    /// ?1 id.
    pub const PEEK: &str = "SELECT owner, expires_at FROM sessions WHERE id = ?1";
    /// ?1 id, ?2 lease, ?3 state, ?4 files, ?5 expires_at, ?6 bytes
    /// ([`super::stored_size`]).
    pub const SAVE: &str = "UPDATE sessions SET state = ?3, files = ?4,
         expires_at = ?5, lease = NULL, lease_until = 0, bytes = ?6 WHERE id = ?1 AND lease = ?2";
    /// ?1 id, ?2 lease.
    pub const RELEASE: &str =
        "UPDATE sessions SET lease = NULL, lease_until = 0 WHERE id = ?1 AND lease = ?2";
    /// ?1 before: sessions expired this long ago are forgotten (until then
    /// they answer `expired`).
    pub const PURGE: &str = "DELETE FROM sessions WHERE expires_at <= ?1";
}
