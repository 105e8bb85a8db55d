//! The clarify store on D1: the same SQL as the local SQLite store
//! (`clarify::store::sql`), so an answer is one conditional `UPDATE` and two
//! racing answers cannot both win.

use std::cell::Cell;

use serde::Deserialize;
use serde::de::DeserializeOwned;
use worker::send::{SendFuture, SendWrapper};
use worker::wasm_bindgen::JsValue;
use worker::{D1Database, D1PreparedStatement};

use toolgate_shared::clarify::store::{
    ApprovalRow, ClarifyStore, ListQuery, Pending, Settlement, StoreFuture, sql,
};
use toolgate_shared::clarify::{Clarification, Status};

pub const BINDING: &str = "DB";

thread_local! {
    /// The table is created once per isolate, on first use.
    static READY: Cell<bool> = const { Cell::new(false) };
    /// Columns added to a table made before them, once per isolate.
    static MIGRATED: Cell<bool> = const { Cell::new(false) };
    /// The secrets' table, created once per isolate, on first use.
    static SECRETS_READY: Cell<bool> = const { Cell::new(false) };
    /// Secrets read, kept for the isolate's life: each request builds its
    /// own store, so a store's own cache would last one request.
    static SECRETS: std::cell::RefCell<Vec<(String, String)>> =
        const { std::cell::RefCell::new(Vec::new()) };
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

/// [`sql::COUNT_PENDING`]'s row (D1 numbers are JavaScript numbers).
#[derive(Deserialize)]
struct Counted {
    mine: f64,
    pending: f64,
}

#[derive(Deserialize)]
struct Notice {
    channel: String,
    event: String,
    outcome: String,
}

pub fn text(s: &str) -> JsValue {
    JsValue::from_str(s)
}

fn opt_text(s: Option<&str>) -> JsValue {
    s.map_or(JsValue::NULL, JsValue::from_str)
}

/// Unix milliseconds are below 2^53, exact as JavaScript numbers.
pub fn int(n: i64) -> JsValue {
    JsValue::from_f64(n as f64)
}

fn prepared(db: &D1Database, query: &str, args: &[JsValue]) -> Result<D1PreparedStatement, String> {
    db.prepare(query).bind(args).map_err(|e| e.to_string())
}

/// Runs `query`: how many rows it changed.
pub async fn run(db: &D1Database, query: &str, args: &[JsValue]) -> Result<usize, String> {
    let result = prepared(db, query, args)?
        .run()
        .await
        .map_err(|e| e.to_string())?;
    Ok(result
        .meta()
        .map_err(|e| e.to_string())?
        .and_then(|m| m.changes)
        .unwrap_or(0))
}

/// The first row `query` answers, if any.
pub async fn first<T: DeserializeOwned>(
    db: &D1Database,
    query: &str,
    args: &[JsValue],
) -> Result<Option<T>, String> {
    prepared(db, query, args)?
        .first(None)
        .await
        .map_err(|e| e.to_string())
}

/// Every row `query` answers.
pub async fn all<T: DeserializeOwned>(
    db: &D1Database,
    query: &str,
    args: &[JsValue],
) -> Result<Vec<T>, String> {
    prepared(db, query, args)?
        .all()
        .await
        .map_err(|e| e.to_string())?
        .results()
        .map_err(|e| e.to_string())
}

impl D1Store {
    pub fn new(db: D1Database) -> Self {
        Self {
            db: SendWrapper::new(db),
        }
    }

    async fn ready(&self) -> Result<(), String> {
        create_once(&self.db, sql::SCHEMA, &READY).await?;
        if MIGRATED.with(Cell::get) {
            return Ok(());
        }
        // Who asked (for the pending quotas): a table that has the column
        // refuses, and there is nothing to do.
        for (name, kind) in sql::CLARIFICATION_COLUMNS_ADDED {
            let add = format!("ALTER TABLE clarifications ADD COLUMN {name} {kind}");
            if let Err(e) = self.db.prepare(&add).run().await {
                let e = e.to_string();
                if !e.contains("duplicate column") {
                    return Err(format!("adding a column: {e}"));
                }
            }
        }
        MIGRATED.with(|r| r.set(true));
        Ok(())
    }
}

impl D1Store {
    /// A new clarification's row; with who asked, for the pending quotas.
    async fn insert_row(&self, c: &Clarification, caller: Option<&str>) -> Result<(), String> {
        self.ready().await?;
        let options = serde_json::to_string(&c.options).unwrap_or_else(|_| "[]".into());
        let mut args = vec![
            text(&c.id),
            text(&c.question),
            text(&options),
            int(c.created_at),
            int(c.expires_at),
            opt_text(c.task_token.as_deref()),
        ];
        let query = match caller {
            Some(caller) => {
                args.push(text(caller));
                sql::INSERT_ASKED
            }
            None => sql::INSERT,
        };
        run(&self.db, query, &args).await.map(drop)
    }
}

impl ClarifyStore for D1Store {
    fn insert<'a>(&'a self, c: &'a Clarification) -> StoreFuture<'a, ()> {
        Box::pin(SendFuture::new(self.insert_row(c, None)))
    }

    fn insert_asked<'a>(&'a self, c: &'a Clarification, caller: &'a str) -> StoreFuture<'a, ()> {
        Box::pin(SendFuture::new(self.insert_row(c, Some(caller))))
    }

    fn count_pending<'a>(&'a self, caller: &'a str, now: i64) -> StoreFuture<'a, Option<Pending>> {
        Box::pin(SendFuture::new(async move {
            self.ready().await?;
            let row: Option<Counted> =
                first(&self.db, sql::COUNT_PENDING, &[text(caller), int(now)]).await?;
            Ok(Some(row.map_or_else(Pending::default, |r| Pending {
                mine: r.mine as u64,
                all: r.pending as u64,
            })))
        }))
    }

    fn get<'a>(&'a self, id: &'a str) -> StoreFuture<'a, Option<Clarification>> {
        Box::pin(SendFuture::new(async move {
            self.ready().await?;
            let row: Option<Row> = first(&self.db, sql::GET, &[text(id)]).await?;
            let Some(mut c) = row.map(Clarification::from) else {
                return Ok(None);
            };
            let notices: Vec<Notice> = all(&self.db, sql::NOTICES, &[text(id)]).await?;
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
            let args = [
                text(id),
                text(channel),
                text(event),
                text(outcome),
                int(toolgate_shared::clarify::now_ms()),
            ];
            run(&self.db, sql::NOTE, &args).await.map(drop)
        }))
    }

    fn settle<'a>(&'a self, id: &'a str, s: &'a Settlement) -> StoreFuture<'a, bool> {
        Box::pin(SendFuture::new(async move {
            self.ready().await?;
            let expiring = i64::from(s.status == Status::Expired);
            let args = [
                text(id),
                text(s.status.as_str()),
                opt_text(s.answer.as_deref()),
                s.choice.map_or(JsValue::NULL, |c| int(c as i64)),
                int(s.at),
                int(expiring),
            ];
            Ok(run(&self.db, sql::SETTLE, &args).await? == 1)
        }))
    }

    fn due(&self, now: i64) -> StoreFuture<'_, Vec<Clarification>> {
        Box::pin(SendFuture::new(async move {
            self.ready().await?;
            let rows: Vec<Row> = all(&self.db, sql::EXPIRED_PENDING, &[int(now)]).await?;
            Ok(rows.into_iter().map(Clarification::from).collect())
        }))
    }

    fn secret<'a>(&'a self, name: &'a str, fresh: &'a str) -> StoreFuture<'a, Option<String>> {
        #[derive(Deserialize)]
        struct Kept {
            value: String,
        }
        let known =
            SECRETS.with_borrow(|s| s.iter().find(|(n, _)| n == name).map(|(_, v)| v.clone()));
        Box::pin(SendFuture::new(async move {
            if known.is_some() {
                return Ok(known);
            }
            create_once(&self.db, sql::SECRETS_SCHEMA, &SECRETS_READY).await?;
            let by_name = [text(name)];
            let read = || first::<Kept>(&self.db, sql::SECRET, &by_name);
            let kept = match read().await? {
                Some(k) => k,
                None => {
                    run(&self.db, sql::KEEP_SECRET, &[text(name), text(fresh)]).await?;
                    let Some(k) = read().await? else {
                        return Ok(None);
                    };
                    k
                }
            };
            SECRETS.with_borrow_mut(|s| s.push((name.to_owned(), kept.value.clone())));
            Ok(Some(kept.value))
        }))
    }

    /// Questions only: the Worker gates no tool, so it keeps no approvals.
    fn list(&self, q: ListQuery) -> StoreFuture<'_, Vec<(Clarification, Option<ApprovalRow>)>> {
        Box::pin(SendFuture::new(async move {
            if q.approvals {
                return Ok(Vec::new());
            }
            self.ready().await?;
            let args = [
                int(i64::from(q.pending_only)),
                int(q.now),
                int(q.limit as i64),
            ];
            let rows: Vec<Row> = all(&self.db, sql::LIST_QUESTIONS, &args).await?;
            Ok(rows
                .into_iter()
                .map(|r| (Clarification::from(r), None))
                .collect())
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
