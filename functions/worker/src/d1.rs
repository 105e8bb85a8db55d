//! The clarify store on D1: the same SQL as the local SQLite store
//! (`clarify::store::sql`), so an answer is one conditional `UPDATE` and two
//! racing answers cannot both win.

use std::cell::Cell;

use serde::Deserialize;
use worker::D1Database;
use worker::send::{SendFuture, SendWrapper};
use worker::wasm_bindgen::JsValue;

use toolgate_shared::clarify::store::{ClarifyStore, Settlement, StoreFuture, sql};
use toolgate_shared::clarify::{Clarification, Status};

pub const BINDING: &str = "DB";

thread_local! {
    /// The table is created once per isolate, on first use.
    static READY: Cell<bool> = const { Cell::new(false) };
}

pub struct D1Store {
    db: SendWrapper<D1Database>,
}

#[derive(Deserialize)]
struct Row {
    id: String,
    question: String,
    options: String,
    status: String,
    answer: Option<String>,
    choice: Option<i64>,
    created_at: i64,
    expires_at: i64,
    settled_at: Option<i64>,
    task_token: Option<String>,
}

impl From<Row> for Clarification {
    fn from(r: Row) -> Self {
        Self {
            id: r.id,
            question: r.question,
            options: serde_json::from_str(&r.options).unwrap_or_default(),
            status: Status::parse(&r.status).unwrap_or(Status::Pending),
            answer: r.answer,
            choice: r.choice.and_then(|c| usize::try_from(c).ok()),
            created_at: r.created_at,
            expires_at: r.expires_at,
            settled_at: r.settled_at,
            task_token: r.task_token,
            notified: Default::default(),
        }
    }
}

#[derive(Deserialize)]
struct Notice {
    channel: String,
    event: String,
    outcome: String,
}

fn text(s: &str) -> JsValue {
    JsValue::from_str(s)
}

fn opt_text(s: Option<&str>) -> JsValue {
    s.map_or(JsValue::NULL, JsValue::from_str)
}

/// Unix milliseconds are below 2^53, exact as JavaScript numbers.
fn int(n: i64) -> JsValue {
    JsValue::from_f64(n as f64)
}

impl D1Store {
    pub fn new(db: D1Database) -> Self {
        Self {
            db: SendWrapper::new(db),
        }
    }

    async fn ready(&self) -> Result<(), String> {
        create_once(&self.db, sql::SCHEMA, &READY).await
    }
}

impl ClarifyStore for D1Store {
    fn insert<'a>(&'a self, c: &'a Clarification) -> StoreFuture<'a, ()> {
        Box::pin(SendFuture::new(async move {
            self.ready().await?;
            let options = serde_json::to_string(&c.options).unwrap_or_else(|_| "[]".into());
            self.db
                .prepare(sql::INSERT)
                .bind(&[
                    text(&c.id),
                    text(&c.question),
                    text(&options),
                    int(c.created_at),
                    int(c.expires_at),
                    opt_text(c.task_token.as_deref()),
                ])
                .map_err(|e| e.to_string())?
                .run()
                .await
                .map_err(|e| e.to_string())?;
            Ok(())
        }))
    }

    fn get<'a>(&'a self, id: &'a str) -> StoreFuture<'a, Option<Clarification>> {
        Box::pin(SendFuture::new(async move {
            self.ready().await?;
            let row: Option<Row> = self
                .db
                .prepare(sql::GET)
                .bind(&[text(id)])
                .map_err(|e| e.to_string())?
                .first(None)
                .await
                .map_err(|e| e.to_string())?;
            let Some(mut c) = row.map(Clarification::from) else {
                return Ok(None);
            };
            let notices: Vec<Notice> = self
                .db
                .prepare(sql::NOTICES)
                .bind(&[text(id)])
                .map_err(|e| e.to_string())?
                .all()
                .await
                .map_err(|e| e.to_string())?
                .results()
                .map_err(|e| e.to_string())?;
            for n in notices {
                c.notified
                    .entry(n.channel)
                    .or_default()
                    .insert(n.event, n.outcome);
            }
            Ok(Some(c))
        }))
    }

    fn note<'a>(
        &'a self,
        id: &'a str,
        channel: &'a str,
        event: &'a str,
        outcome: &'a str,
    ) -> StoreFuture<'a, ()> {
        Box::pin(SendFuture::new(async move {
            self.ready().await?;
            self.db
                .prepare(sql::NOTE)
                .bind(&[
                    text(id),
                    text(channel),
                    text(event),
                    text(outcome),
                    int(toolgate_shared::clarify::now_ms()),
                ])
                .map_err(|e| e.to_string())?
                .run()
                .await
                .map_err(|e| e.to_string())?;
            Ok(())
        }))
    }

    fn settle<'a>(&'a self, id: &'a str, s: &'a Settlement) -> StoreFuture<'a, bool> {
        Box::pin(SendFuture::new(async move {
            self.ready().await?;
            let expiring = i64::from(s.status == Status::Expired);
            let result = self
                .db
                .prepare(sql::SETTLE)
                .bind(&[
                    text(id),
                    text(s.status.as_str()),
                    opt_text(s.answer.as_deref()),
                    s.choice.map_or(JsValue::NULL, |c| int(c as i64)),
                    int(s.at),
                    int(expiring),
                ])
                .map_err(|e| e.to_string())?
                .run()
                .await
                .map_err(|e| e.to_string())?;
            let changes = result
                .meta()
                .map_err(|e| e.to_string())?
                .and_then(|m| m.changes)
                .unwrap_or(0);
            Ok(changes == 1)
        }))
    }

    fn due(&self, now: i64) -> StoreFuture<'_, Vec<Clarification>> {
        Box::pin(SendFuture::new(async move {
            self.ready().await?;
            let rows: Vec<Row> = self
                .db
                .prepare(sql::EXPIRED_PENDING)
                .bind(&[int(now)])
                .map_err(|e| e.to_string())?
                .all()
                .await
                .map_err(|e| e.to_string())?
                .results()
                .map_err(|e| e.to_string())?;
            Ok(rows.into_iter().map(Clarification::from).collect())
        }))
    }
}

/// Runs `schema`'s statements once per isolate (`done` remembers).
pub async fn create_once(
    db: &D1Database,
    schema: &str,
    done: &'static std::thread::LocalKey<Cell<bool>>,
) -> Result<(), String> {
    if done.with(Cell::get) {
        return Ok(());
    }
    for statement in schema.split(';').map(str::trim).filter(|s| !s.is_empty()) {
        db.prepare(statement)
            .run()
            .await
            .map_err(|e| format!("creating a table: {e}"))?;
    }
    done.with(|r| r.set(true));
    Ok(())
}
