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
    /// Adds a new pending question asked by `caller` (an identity, "" when
    /// none), whom [`Self::count_pending`] counts it for. Stores that keep
    /// no asker insert it as [`Self::insert`] does.
    fn insert_asked<'a>(&'a self, c: &'a Clarification, _caller: &'a str) -> StoreFuture<'a, ()> {
        self.insert(c)
    }
    /// Questions (not approvals) pending and unexpired at `now`: those
    /// `caller` asked, and all. `None` where the store cannot count them
    /// without a scan: pending quotas are then not enforced.
    fn count_pending<'a>(
        &'a self,
        _caller: &'a str,
        _now: i64,
    ) -> StoreFuture<'a, Option<Pending>> {
        Box::pin(async { Ok(None) })
    }
    /// Questions and approvals pending and unexpired at `now`, counted
    /// without reading them (`/metrics` asks at every scrape); `None` where
    /// the store cannot count without a scan.
    fn count_waiting(&self, _now: i64) -> StoreFuture<'_, Option<Waiting>> {
        Box::pin(async { Ok(None) })
    }
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
    /// Every pending clarification past its expiry, workflow or not: what a
    /// sweep expires besides [`Self::due`]'s, so that the channels hear
    /// `expired` of a question nobody reads. A store without an index of
    /// every pending item (the DynamoDB one: its sparse index holds those a
    /// workflow waits on) lists none; reads expire the rest there.
    fn expired_pending(&self, _now: i64) -> StoreFuture<'_, Vec<Clarification>> {
        Box::pin(std::future::ready(Ok(Vec::new())))
    }
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
    /// Adds a new pending clarification that is an approval, with its row,
    /// in one write: no approval ever exists without its binding. Stores
    /// where no gated tool runs keep none.
    fn insert_approval<'a>(
        &'a self,
        _c: &'a Clarification,
        _row: &'a ApprovalRow,
    ) -> StoreFuture<'a, ()> {
        Box::pin(async { Err("this store keeps no approvals".into()) })
    }
    /// `id`'s approval row, when `id` is an approval.
    fn approval<'a>(&'a self, _id: &'a str) -> StoreFuture<'a, Option<ApprovalRow>> {
        Box::pin(async { Ok(None) })
    }
    /// Records an approver's decision on pending approval `id` (answering
    /// its clarification with the option's text and index), only if it is
    /// still pending, unexpired at `d.at` and undecided: true for the one
    /// call that did.
    fn decide<'a>(&'a self, _id: &'a str, _d: &'a Decision) -> StoreFuture<'a, bool> {
        Box::pin(async { Ok(false) })
    }
    /// Marks `id`'s approval used at `at`: true for the one call that did.
    fn consume<'a>(&'a self, _id: &'a str, _at: i64) -> StoreFuture<'a, bool> {
        Box::pin(async { Ok(false) })
    }
    /// The newest clarifications of one kind (approvals, or questions),
    /// pending and unexpired at `now` only when `pending_only`, at most
    /// `limit`, newest first, each with its approval row when it has one.
    fn list(&self, _q: ListQuery) -> StoreFuture<'_, Vec<(Clarification, Option<ApprovalRow>)>> {
        Box::pin(async { Err("this store cannot list its clarifications".into()) })
    }
    /// The deployment's secret called `name`, kept in the store where no
    /// route reads it: `fresh` if this call made it, else the one already
    /// kept (every instance on the store reads the same). `None` where the
    /// store keeps no secrets.
    fn secret<'a>(&'a self, _name: &'a str, _fresh: &'a str) -> StoreFuture<'a, Option<String>> {
        Box::pin(async { Ok(None) })
    }
}

/// Questions waiting for an answer ([`ClarifyStore::count_pending`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Pending {
    /// Asked by the caller counted for.
    pub mine: u64,
    /// Asked by anyone.
    pub all: u64,
}

/// What waits for a person ([`ClarifyStore::count_waiting`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Waiting {
    /// Questions.
    pub questions: u64,
    /// Approvals.
    pub approvals: u64,
}

/// Which clarifications [`ClarifyStore::list`] returns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ListQuery {
    /// Approvals (true) or questions (false).
    pub approvals: bool,
    /// Only those still waiting for a person.
    pub pending_only: bool,
    /// The time "pending" is judged at, Unix ms.
    pub now: i64,
    /// The most returned.
    pub limit: usize,
}

/// What makes a clarification an approval, as stored beside it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ApprovalRow {
    /// What approving allows (`approvals::Binding` as JSON).
    pub binding: String,
    /// What approvers are shown (`approvals::Details` as JSON).
    pub details: String,
    /// Hex SHA-256 of the link capability, in link-holder mode only.
    pub cap_sha256: Option<String>,
    /// `approved` or `rejected`, once an approver decided.
    pub decision: Option<String>,
    /// Who decided (an approver identity, or `link holder`).
    pub approver: Option<String>,
    /// When, Unix ms.
    pub decided_at: Option<i64>,
    /// Hex SHA-256 of `binding` as it was decided: a binding rewritten
    /// after the decision (by a function that may write bindings but never
    /// decisions) no longer matches, and cannot be used.
    pub decided_binding: Option<String>,
    /// When the approval was used to run the call, Unix ms.
    pub used_at: Option<i64>,
}

/// An approver's decision, as [`ClarifyStore::decide`] records it.
#[derive(Clone, Debug)]
pub struct Decision {
    /// Approve (true) or reject.
    pub approved: bool,
    /// Who decided.
    pub approver: String,
    /// When, Unix ms; it only takes before the approval's expiry.
    pub at: i64,
    /// Hex SHA-256 of the binding the approver saw.
    pub binding_sha256: String,
}

impl Decision {
    /// `approved` or `rejected`.
    pub fn as_str(&self) -> &'static str {
        if self.approved {
            "approved"
        } else {
            "rejected"
        }
    }
    /// The answer the clarification records: the option's index and text.
    pub fn choice(&self) -> (usize, &'static str) {
        (
            usize::from(!self.approved),
            Self::choice_text(self.approved),
        )
    }
    /// An approval's options, in order: `Approve` (index 0), `Reject`.
    pub fn choice_text(approved: bool) -> &'static str {
        if approved { "Approve" } else { "Reject" }
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
    used_at INTEGER,
    details TEXT,
    cap_sha256 TEXT,
    decision TEXT,
    approver TEXT,
    decided_at INTEGER,
    decided_binding TEXT
);
";

    /// The deployment's secrets ([`super::ClarifyStore::secret`]), on D1
    /// (SQLite's state key is a file beside the database).
    pub const SECRETS_SCHEMA: &str =
        "CREATE TABLE IF NOT EXISTS secrets (name TEXT PRIMARY KEY, value TEXT NOT NULL)";

    /// ?1 name, ?2 value: the secret, unless one by that name is kept.
    pub const KEEP_SECRET: &str = "INSERT OR IGNORE INTO secrets (name, value) VALUES (?1, ?2)";

    /// ?1 name: the secret kept.
    pub const SECRET: &str = "SELECT value FROM secrets WHERE name = ?1";

    /// Columns `approvals` gained after its first version, added to a file
    /// that lacks them (`ALTER TABLE approvals ADD COLUMN …`).
    pub const APPROVAL_COLUMNS_ADDED: [(&str, &str); 6] = [
        ("details", "TEXT"),
        ("cap_sha256", "TEXT"),
        ("decision", "TEXT"),
        ("approver", "TEXT"),
        ("decided_at", "INTEGER"),
        ("decided_binding", "TEXT"),
    ];

    /// Columns `clarifications` gained after its first version, added to a
    /// file that lacks them (`ALTER TABLE clarifications ADD COLUMN …`):
    /// who asked, for the pending quotas.
    pub const CLARIFICATION_COLUMNS_ADDED: [(&str, &str); 1] = [("caller", "TEXT")];

    /// ?1 id, ?2 question, ?3 options (JSON), ?4 created_at, ?5 expires_at,
    /// ?6 task_token, ?7 caller (once the `caller` column exists).
    pub const INSERT_ASKED: &str = "INSERT INTO clarifications (id, question, options, status, created_at, expires_at, task_token, caller)
         VALUES (?1, ?2, ?3, 'pending', ?4, ?5, ?6, ?7)";

    /// ?1 caller, ?2 now: questions (not approvals) pending and unexpired,
    /// the caller's (`mine`) and all; through `pending_by_expiry`.
    pub const COUNT_PENDING: &str =
        "SELECT coalesce(sum(caller IS ?1), 0) AS mine, count(*) AS pending
         FROM clarifications
         WHERE status = 'pending' AND expires_at > ?2
           AND id NOT IN (SELECT id FROM approvals)";

    /// ?1 now: questions and approvals pending and unexpired, by the
    /// `(status, expires_at)` index.
    pub const COUNT_WAITING: &str = "SELECT coalesce(sum(a.id IS NULL), 0) AS questions,
                coalesce(sum(a.id IS NOT NULL), 0) AS approvals
         FROM clarifications c LEFT JOIN approvals a ON a.id = c.id
         WHERE c.status = 'pending' AND c.expires_at > ?1";

    /// ?1 id, ?2 binding, ?3 details, ?4 cap_sha256.
    pub const INSERT_APPROVAL: &str =
        "INSERT INTO approvals (id, binding, details, cap_sha256) VALUES (?1, ?2, ?3, ?4)";

    /// ?1 id: its approval row.
    pub const APPROVAL: &str =
        "SELECT binding, details, cap_sha256, decision, approver, decided_at,
            decided_binding, used_at
         FROM approvals WHERE id = ?1";

    /// ?1 id, ?2 at: the one write that makes an approval single-use.
    pub const CONSUME: &str = "UPDATE approvals SET used_at = ?2 WHERE id = ?1 AND used_at IS NULL";

    /// ?1 id, ?2 answer, ?3 choice, ?4 at: the decision's half on the
    /// clarification, only while it is a pending, unexpired approval.
    pub const DECIDE_CLARIFICATION: &str = "UPDATE clarifications
         SET status = 'answered', answer = ?2, choice = ?3, settled_at = ?4
         WHERE id = ?1 AND status = 'pending' AND expires_at > ?4
           AND EXISTS (SELECT 1 FROM approvals WHERE approvals.id = ?1 AND decision IS NULL)";

    /// ?1 id, ?2 decision, ?3 approver, ?4 at, ?5 the binding's SHA-256:
    /// its half on the approval, in the same transaction.
    pub const DECIDE_APPROVAL: &str = "UPDATE approvals
         SET decision = ?2, approver = ?3, decided_at = ?4, decided_binding = ?5
         WHERE id = ?1 AND decision IS NULL";

    /// ?1 1 for approvals (0: questions), ?2 1 for pending only, ?3 now,
    /// ?4 limit: clarifications with their approval rows, newest first.
    pub const LIST: &str = "SELECT c.*, a.binding AS a_binding, a.details AS a_details,
            a.cap_sha256 AS a_cap, a.decision AS a_decision, a.approver AS a_approver,
            a.decided_at AS a_decided_at, a.decided_binding AS a_decided_binding,
            a.used_at AS a_used_at
         FROM clarifications c LEFT JOIN approvals a ON a.id = c.id
         WHERE (a.id IS NOT NULL) = (?1 = 1)
           AND (?2 = 0 OR (c.status = 'pending' AND c.expires_at > ?3))
         ORDER BY c.created_at DESC, c.id LIMIT ?4";

    /// ?1 1 for pending only, ?2 now, ?3 limit: questions alone, newest
    /// first (the Worker keeps no approvals).
    pub const LIST_QUESTIONS: &str = "SELECT * FROM clarifications
         WHERE id NOT IN (SELECT id FROM approvals)
           AND (?1 = 0 OR (status = 'pending' AND expires_at > ?2))
         ORDER BY created_at DESC, id LIMIT ?3";

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
    /// before the expiry. An approval only expires here: its decision is
    /// `DECIDE_*`'s, an approver's.
    pub const SETTLE: &str =
        "UPDATE clarifications SET status = ?2, answer = ?3, choice = ?4, settled_at = ?5
         WHERE id = ?1 AND status = 'pending'
           AND (?6 OR (expires_at > ?5 AND NOT EXISTS (SELECT 1 FROM approvals WHERE approvals.id = ?1)))";

    /// ?1 now.
    pub const EXPIRED_PENDING: &str = "SELECT * FROM clarifications
         WHERE status = 'pending' AND expires_at <= ?1 AND task_token IS NOT NULL";

    /// ?1 now: every pending clarification past its expiry (the
    /// `pending_by_expiry` index).
    pub const EXPIRED_ANY: &str = "SELECT * FROM clarifications
         WHERE status = 'pending' AND expires_at <= ?1";
}
