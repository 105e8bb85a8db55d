//! The local store: one SQLite file (rusqlite, bundled), so nothing is lost
//! on restart. The answer is one conditional `UPDATE`, so two racing
//! answers cannot both win.

use std::path::Path;

use rusqlite::{OptionalExtension, params};

use super::store::{ClarifyStore, Settlement, StoreFuture, sql};
use super::{Clarification, Status};

/// The local [`ClarifyStore`]: one SQLite file.
pub struct SqliteStore {
    db: crate::sqlite_file::SqliteFile,
}

impl SqliteStore {
    /// Opens (creating) the database file and its folder.
    pub fn open(path: &Path) -> Result<Self, String> {
        Ok(Self {
            db: crate::sqlite_file::SqliteFile::open(path, sql::SCHEMA)?,
        })
    }
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

impl ClarifyStore for SqliteStore {
    fn insert<'a>(&'a self, c: &'a Clarification) -> StoreFuture<'a, ()> {
        let c = c.clone();
        Box::pin(self.db.with(move |conn| {
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

    fn bind<'a>(&'a self, id: &'a str, binding: &'a str) -> StoreFuture<'a, ()> {
        let (id, binding) = (id.to_owned(), binding.to_owned());
        Box::pin(
            self.db
                .with(move |conn| conn.execute(sql::BIND, params![id, binding]).map(|_| ())),
        )
    }

    fn binding<'a>(&'a self, id: &'a str) -> StoreFuture<'a, Option<(String, Option<i64>)>> {
        let id = id.to_owned();
        Box::pin(self.db.with(move |conn| {
            conn.query_row(sql::BINDING, params![id], |r| Ok((r.get(0)?, r.get(1)?)))
                .optional()
        }))
    }

    fn consume<'a>(&'a self, id: &'a str, at: i64) -> StoreFuture<'a, bool> {
        let id = id.to_owned();
        Box::pin(
            self.db
                .with(move |conn| Ok(conn.execute(sql::CONSUME, params![id, at])? == 1)),
        )
    }
}
