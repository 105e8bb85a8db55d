//! python.execute's sessions on D1: the same SQL as the local SQLite store
//! (`sessions::store::sql`), so a call's hold on a session is one
//! conditional `UPDATE`. The state is a BLOB, read back as hex (D1 hands
//! BLOBs to JavaScript as arrays of numbers).

use std::cell::Cell;

use serde::Deserialize;
use worker::D1Database;
use worker::js_sys::Uint8Array;
use worker::send::{SendFuture, SendWrapper};
use worker::wasm_bindgen::JsValue;

use crate::d1::{first, int, run, text};
use toolgate_shared::files::Files;
use toolgate_shared::sessions::store::{
    Claim, FORGET_AFTER_MS, Lease, Record, SessionStore, StoreFuture, Usage, sql,
};

/// D1 holds at most 2,000,000 bytes in a row: a session's state and files
/// together stay under this (the state as bytes, the files as base64 JSON).
pub const ROW_LIMIT: usize = 1_900_000;

thread_local! {
    /// The table is created once per isolate, on first use.
    static READY: Cell<bool> = const { Cell::new(false) };
    /// A table from before `bytes` is brought up to date once per isolate.
    static MIGRATED: Cell<bool> = const { Cell::new(false) };
}

/// A held row's files and state size.
const HELD: &str = "SELECT length(state) AS size, files FROM sessions WHERE id = ?1 AND lease = ?2";

/// Part of a held row's state, as hex (D1 hands BLOBs to JavaScript as
/// arrays of numbers). In parts because D1 refuses any value over 2,000,000
/// bytes (SQLITE_TOOBIG), and the hex of a state over 1 MB is one.
const STATE_PART: &str =
    "SELECT hex(substr(state, ?3, ?4)) AS part FROM sessions WHERE id = ?1 AND lease = ?2";

/// Bytes of state per part: 1 MiB of hex, half the limit.
const PART_BYTES: usize = 512 * 1024;

pub struct D1Sessions {
    db: SendWrapper<D1Database>,
}

#[derive(Deserialize)]
struct Held {
    size: Option<f64>,
    files: String,
}

#[derive(Deserialize)]
struct Part {
    part: String,
}

#[derive(Deserialize)]
struct Peek {
    owner: String,
    expires_at: f64,
}

#[derive(Deserialize)]
struct Owned {
    sessions: f64,
    bytes: f64,
}

#[derive(Deserialize)]
struct Total {
    bytes: f64,
}

fn hex(s: &str) -> Result<Vec<u8>, String> {
    let bytes = s.as_bytes();
    if !bytes.len().is_multiple_of(2) {
        return Err("a stored state is damaged".into());
    }
    bytes
        .chunks(2)
        .map(|p| {
            std::str::from_utf8(p)
                .ok()
                .and_then(|h| u8::from_str_radix(h, 16).ok())
                .ok_or_else(|| "a stored state is damaged".to_owned())
        })
        .collect()
}

/// The files as the row holds them: base64 by name, as JSON.
pub fn files_json(files: &Files) -> String {
    serde_json::to_string(&toolgate_shared::files::to_wire(files)).unwrap_or_else(|_| "{}".into())
}

impl D1Sessions {
    pub fn new(db: D1Database) -> Self {
        Self {
            db: SendWrapper::new(db),
        }
    }

    async fn ready(&self) -> Result<(), String> {
        crate::d1::create_once(&self.db, sql::SCHEMA, &READY).await?;
        if MIGRATED.with(Cell::get) {
            return Ok(());
        }
        // A table made before sessions counted their bytes gains the
        // column (a table that has it refuses: nothing to do), then the
        // indexes that count them.
        if let Err(e) = self.db.prepare(sql::ADD_BYTES).run().await {
            let e = e.to_string();
            if !e.contains("duplicate column") {
                return Err(format!("adding a column: {e}"));
            }
        }
        for index in sql::USAGE_INDEXES
            .split(';')
            .map(str::trim)
            .filter(|s| !s.is_empty())
        {
            self.db
                .prepare(index)
                .run()
                .await
                .map_err(|e| format!("creating an index: {e}"))?;
        }
        MIGRATED.with(|r| r.set(true));
        Ok(())
    }

    /// A row this call holds: its files, and its state read in parts.
    async fn held(&self, id: &str, token: &str) -> Result<Record, String> {
        let row: Held = first(&self.db, HELD, &[text(id), text(token)])
            .await?
            .ok_or("a held session vanished")?;
        let size = row.size.unwrap_or(0.0) as usize;
        let mut state = Vec::with_capacity(size);
        // SQL's substr counts from 1.
        for start in (0..size).step_by(PART_BYTES) {
            let args = [
                text(id),
                text(token),
                int(start as i64 + 1),
                int(PART_BYTES as i64),
            ];
            let part: Part = first(&self.db, STATE_PART, &args)
                .await?
                .ok_or("a held session vanished")?;
            state.extend(hex(&part.part)?);
        }
        // Decoded only: names stored under older rules still load; a
        // column that does not decode is an error, never "no files".
        let wire = serde_json::from_str(&row.files)
            .map_err(|e| format!("a stored session's files are unreadable: {e}"))?;
        Ok(Record {
            state,
            files: toolgate_shared::files::decode_wire(wire)
                .map_err(|e| format!("a stored session's files are unreadable: {e}"))?,
        })
    }

    async fn changes(&self, query: &str, args: &[JsValue]) -> Result<usize, String> {
        self.ready().await?;
        run(&self.db, query, args).await
    }
}

impl SessionStore for D1Sessions {
    fn create<'a>(
        &'a self,
        id: &'a str,
        owner: &'a str,
        lease: &'a Lease,
        expires_at: i64,
    ) -> StoreFuture<'a, ()> {
        Box::pin(SendFuture::new(async move {
            let now = toolgate_shared::clock::unix_ms();
            // Sessions expired a day ago are forgotten (until then: 410).
            self.changes(sql::PURGE, &[int(now - FORGET_AFTER_MS)])
                .await?;
            let args = [
                text(id),
                text(owner),
                text(&lease.token),
                int(lease.until),
                int(now),
                int(expires_at),
            ];
            self.changes(sql::CREATE, &args).await.map(drop)
        }))
    }

    fn claim<'a>(
        &'a self,
        id: &'a str,
        owner: &'a str,
        lease: &'a Lease,
        now: i64,
    ) -> StoreFuture<'a, Claim> {
        Box::pin(SendFuture::new(async move {
            let args = [
                text(id),
                text(owner),
                text(&lease.token),
                int(lease.until),
                int(now),
            ];
            if self.changes(sql::CLAIM, &args).await? == 1 {
                return match self.held(id, &lease.token).await {
                    Ok(record) => Ok(Claim::Held(record)),
                    // Not left held until the lease runs out: the next call
                    // gets the same error at once, not "busy".
                    Err(e) => {
                        let _ = self
                            .changes(sql::RELEASE, &[text(id), text(&lease.token)])
                            .await;
                        Err(e)
                    }
                };
            }
            let peek: Option<Peek> = first(&self.db, sql::PEEK, &[text(id)]).await?;
            Ok(Claim::refused(
                peek.as_ref()
                    .map(|p| (p.owner.as_str(), p.expires_at as i64)),
                owner,
                now,
            ))
        }))
    }

    fn save<'a>(
        &'a self,
        id: &'a str,
        token: &'a str,
        state: &'a [u8],
        files: &'a Files,
        expires_at: i64,
    ) -> StoreFuture<'a, bool> {
        Box::pin(SendFuture::new(async move {
            let blob: JsValue = Uint8Array::from(state).into();
            let files = files_json(files);
            let bytes = (state.len() + files.len()) as i64;
            let args = [
                text(id),
                text(token),
                blob,
                text(&files),
                int(expires_at),
                int(bytes),
            ];
            Ok(self.changes(sql::SAVE, &args).await? == 1)
        }))
    }

    fn release<'a>(&'a self, id: &'a str, token: &'a str) -> StoreFuture<'a, ()> {
        Box::pin(SendFuture::new(async move {
            self.changes(sql::RELEASE, &[text(id), text(token)])
                .await
                .map(drop)
        }))
    }

    fn extend<'a>(&'a self, id: &'a str, token: &'a str, until: i64) -> StoreFuture<'a, bool> {
        Box::pin(SendFuture::new(async move {
            let args = [text(id), text(token), int(until)];
            Ok(self.changes(sql::EXTEND, &args).await? == 1)
        }))
    }

    fn usage<'a>(&'a self, owner: &'a str, now: i64) -> StoreFuture<'a, Option<Usage>> {
        Box::pin(SendFuture::new(async move {
            self.ready().await?;
            let mine: Option<Owned> = first(&self.db, sql::USAGE, &[text(owner), int(now)]).await?;
            let all: Option<Total> = first(&self.db, sql::TOTAL, &[int(now)]).await?;
            Ok(Some(Usage {
                sessions: mine.as_ref().map_or(0.0, |m| m.sessions) as u64,
                bytes: mine.as_ref().map_or(0.0, |m| m.bytes) as u64,
                total_bytes: all.map_or(0.0, |t| t.bytes) as u64,
            }))
        }))
    }
}
