//! The local store: one SQLite file (rusqlite, bundled), so nothing is lost
//! on restart. The answer is one conditional `UPDATE`, so two racing
//! answers cannot both win.

use std::path::Path;

use rusqlite::{OptionalExtension, params};

use super::store::{
    ApprovalRow, ClarifyStore, Decision, ListQuery, Pending, Settlement, StoreFuture, Waiting, sql,
};
use super::{Clarification, Status};

/// The local [`ClarifyStore`]: one SQLite file.
pub struct SqliteStore {
    db: crate::sqlite_file::SqliteFile,
}

impl SqliteStore {
    /// Opens (creating) the database file and its folder.
    pub fn open(path: &Path) -> Result<Self, String> {
        let db = crate::sqlite_file::SqliteFile::open(path, &SCHEMA)?;
        Ok(Self { db })
    }
}

/// The store's shape by version (`sqlite_file::Schema`): 2 added the
/// approvals' decision columns and the question's caller.
pub const SCHEMA: crate::sqlite_file::Schema = crate::sqlite_file::Schema {
    tables: &[sql::SCHEMA],
    upgrades: &[|c| add_approval_columns(c).and_then(|()| add_caller_column(c))],
    indexes: &[],
    // An approval spent, or a journal used up, must not come back after
    // the machine crashes.
    sync_each_commit: true,
};

/// A file written before approvals had their decision columns gains them
/// (empty: an approval answered through a link before then has no
/// approver, so it cannot be used).
fn add_approval_columns(conn: &rusqlite::Connection) -> rusqlite::Result<()> {
    let mut stmt = conn.prepare("SELECT name FROM pragma_table_info('approvals')")?;
    let have: Vec<String> = stmt
        .query_map([], |r| r.get(0))?
        .collect::<rusqlite::Result<_>>()?;
    for (name, kind) in sql::APPROVAL_COLUMNS_ADDED {
        if !have.iter().any(|h| h == name) {
            conn.execute_batch(&format!("ALTER TABLE approvals ADD COLUMN {name} {kind}"))?;
        }
    }
    Ok(())
}

/// A file written before questions recorded who asked gains the column
/// (their questions count for nobody in particular).
fn add_caller_column(conn: &rusqlite::Connection) -> rusqlite::Result<()> {
    for (name, kind) in sql::CLARIFICATION_COLUMNS_ADDED {
        let has: bool = conn.query_row(
            "SELECT count(*) FROM pragma_table_info('clarifications') WHERE name = ?1",
            params![name],
            |r| r.get(0),
        )?;
        if !has {
            conn.execute_batch(&format!(
                "ALTER TABLE clarifications ADD COLUMN {name} {kind}"
            ))?;
        }
    }
    Ok(())
}

/// The approval columns of a row from `sql::APPROVAL` (plain names) or
/// `sql::LIST` (`a_` names), when the row has them.
fn approval_row(r: &rusqlite::Row<'_>, prefixed: bool) -> rusqlite::Result<Option<ApprovalRow>> {
    let col = |plain: &'static str, listed: &'static str| if prefixed { listed } else { plain };
    let binding: Option<String> = r.get(col("binding", "a_binding"))?;
    let Some(binding) = binding else {
        return Ok(None);
    };
    Ok(Some(ApprovalRow {
        binding,
        details: r
            .get::<_, Option<String>>(col("details", "a_details"))?
            .unwrap_or_default(),
        cap_sha256: r.get(col("cap_sha256", "a_cap"))?,
        decision: r.get(col("decision", "a_decision"))?,
        approver: r.get(col("approver", "a_approver"))?,
        decided_at: r.get(col("decided_at", "a_decided_at"))?,
        decided_binding: r.get(col("decided_binding", "a_decided_binding"))?,
        used_at: r.get(col("used_at", "a_used_at"))?,
    }))
}

fn row(r: &rusqlite::Row<'_>) -> rusqlite::Result<Clarification> {
    let options: String = r.get("options")?;
    let status: String = r.get("status")?;
    let choice: Option<i64> = r.get("choice")?;
    Ok(Clarification {
        id: r.get("id")?,
        question: r.get("question")?,
        options: serde_json::from_str(&options).unwrap_or_default(),
        status: Status::parse(&status).unwrap_or(Status::Pending),
        answer: r.get("answer")?,
        choice: choice.map(|c| c as usize),
        created_at: r.get("created_at")?,
        expires_at: r.get("expires_at")?,
        settled_at: r.get("settled_at")?,
        task_token: r.get("task_token")?,
        notified: Default::default(),
    })
}

/// `c` with its notices (`sql::NOTICES`).
fn with_notices(
    conn: &rusqlite::Connection,
    mut c: Clarification,
) -> rusqlite::Result<Clarification> {
    let mut stmt = conn.prepare(sql::NOTICES)?;
    let rows = stmt.query_map(params![c.id], |r| {
        Ok((
            r.get::<_, String>(0)?,
            r.get::<_, String>(1)?,
            r.get::<_, String>(2)?,
        ))
    })?;
    for n in rows {
        let (channel, event, outcome) = n?;
        c.notified
            .entry(channel)
            .or_default()
            .insert(event, outcome);
    }
    Ok(c)
}

/// Inserts `c` as a new pending row (`sql::INSERT`).
fn insert_row(conn: &rusqlite::Connection, c: &Clarification) -> rusqlite::Result<()> {
    conn.execute(
        sql::INSERT,
        params![
            c.id,
            c.question,
            serde_json::to_string(&c.options).unwrap_or_else(|_| "[]".into()),
            c.created_at,
            c.expires_at,
            c.task_token
        ],
    )
    .map(|_| ())
}

impl ClarifyStore for SqliteStore {
    fn insert<'a>(&'a self, c: &'a Clarification) -> StoreFuture<'a, ()> {
        let c = c.clone();
        Box::pin(self.db.with(move |conn| insert_row(conn, &c)))
    }

    fn insert_asked<'a>(&'a self, c: &'a Clarification, caller: &'a str) -> StoreFuture<'a, ()> {
        let (c, caller) = (c.clone(), caller.to_owned());
        Box::pin(self.db.with(move |conn| {
            conn.execute(
                sql::INSERT_ASKED,
                params![
                    c.id,
                    c.question,
                    serde_json::to_string(&c.options).unwrap_or_else(|_| "[]".into()),
                    c.created_at,
                    c.expires_at,
                    c.task_token,
                    caller
                ],
            )
            .map(drop)
        }))
    }

    fn count_pending<'a>(&'a self, caller: &'a str, now: i64) -> StoreFuture<'a, Option<Pending>> {
        let caller = caller.to_owned();
        Box::pin(self.db.with(move |conn| {
            conn.query_row(sql::COUNT_PENDING, params![caller, now], |r| {
                Ok(Some(Pending {
                    mine: r.get::<_, i64>(0)? as u64,
                    all: r.get::<_, i64>(1)? as u64,
                }))
            })
        }))
    }

    fn count_waiting(&self, now: i64) -> StoreFuture<'_, Option<Waiting>> {
        Box::pin(self.db.with(move |conn| {
            conn.query_row(sql::COUNT_WAITING, params![now], |r| {
                Ok(Some(Waiting {
                    questions: r.get::<_, i64>(0)? as u64,
                    approvals: r.get::<_, i64>(1)? as u64,
                }))
            })
        }))
    }

    fn get<'a>(&'a self, id: &'a str) -> StoreFuture<'a, Option<Clarification>> {
        let id = id.to_owned();
        Box::pin(self.db.with(move |conn| {
            conn.query_row(sql::GET, params![id], row)
                .optional()?
                .map(|c| with_notices(conn, c))
                .transpose()
        }))
    }

    fn settle<'a>(&'a self, id: &'a str, s: &'a Settlement) -> StoreFuture<'a, bool> {
        let (id, s) = (id.to_owned(), s.clone());
        Box::pin(self.db.with(move |conn| {
            let expiring = s.status == Status::Expired;
            let changed = conn.execute(
                sql::SETTLE,
                params![
                    id,
                    s.status.as_str(),
                    s.answer,
                    s.choice.map(|c| c as i64),
                    s.at,
                    expiring
                ],
            )?;
            Ok(changed == 1)
        }))
    }

    fn due(&self, now: i64) -> StoreFuture<'_, Vec<Clarification>> {
        Box::pin(self.db.with(move |conn| {
            let mut stmt = conn.prepare(sql::EXPIRED_PENDING)?;
            let rows = stmt.query_map(params![now], row)?;
            rows.collect()
        }))
    }

    fn expired_pending(&self, now: i64) -> StoreFuture<'_, Vec<Clarification>> {
        Box::pin(self.db.with(move |conn| {
            let mut stmt = conn.prepare(sql::EXPIRED_ANY)?;
            let rows = stmt.query_map(params![now], row)?;
            rows.collect()
        }))
    }

    fn note<'a>(
        &'a self,
        id: &'a str,
        channel: &'a str,
        event: &'a str,
        outcome: &'a str,
    ) -> StoreFuture<'a, ()> {
        let args = (
            id.to_owned(),
            channel.to_owned(),
            event.to_owned(),
            outcome.to_owned(),
        );
        Box::pin(self.db.with(move |conn| {
            let (id, channel, event, outcome) = args;
            conn.execute(
                sql::NOTE,
                params![id, channel, event, outcome, super::now_ms()],
            )
            .map(|_| ())
        }))
    }

    fn insert_approval<'a>(
        &'a self,
        c: &'a Clarification,
        a: &'a ApprovalRow,
    ) -> StoreFuture<'a, ()> {
        let (c, a) = (c.clone(), a.clone());
        Box::pin(self.db.with(move |conn| {
            let tx = conn.unchecked_transaction()?;
            insert_row(&tx, &c)?;
            tx.execute(
                sql::INSERT_APPROVAL,
                params![c.id, a.binding, a.details, a.cap_sha256],
            )?;
            tx.commit()
        }))
    }

    fn approval<'a>(&'a self, id: &'a str) -> StoreFuture<'a, Option<ApprovalRow>> {
        let id = id.to_owned();
        Box::pin(self.db.with(move |conn| {
            Ok(conn
                .query_row(sql::APPROVAL, params![id], |r| approval_row(r, false))
                .optional()?
                .flatten())
        }))
    }

    fn decide<'a>(&'a self, id: &'a str, d: &'a Decision) -> StoreFuture<'a, bool> {
        let (id, d) = (id.to_owned(), d.clone());
        Box::pin(self.db.with(move |conn| {
            let tx = conn.unchecked_transaction()?;
            let (choice, answer) = d.choice();
            let won = tx.execute(
                sql::DECIDE_CLARIFICATION,
                params![id, answer, choice as i64, d.at],
            )? == 1
                && tx.execute(
                    sql::DECIDE_APPROVAL,
                    params![id, d.as_str(), d.approver, d.at, d.binding_sha256],
                )? == 1;
            if won {
                tx.commit()?;
            }
            Ok(won)
        }))
    }

    fn consume<'a>(&'a self, id: &'a str, at: i64) -> StoreFuture<'a, bool> {
        let id = id.to_owned();
        Box::pin(
            self.db
                .with(move |conn| Ok(conn.execute(sql::CONSUME, params![id, at])? == 1)),
        )
    }

    fn list(&self, q: ListQuery) -> StoreFuture<'_, Vec<(Clarification, Option<ApprovalRow>)>> {
        Box::pin(self.db.with(move |conn| {
            let mut stmt = conn.prepare(sql::LIST)?;
            let rows = stmt.query_map(
                params![q.approvals, q.pending_only, q.now, q.limit as i64],
                |r| Ok((row(r)?, approval_row(r, true)?)),
            )?;
            rows.collect()
        }))
    }
}
