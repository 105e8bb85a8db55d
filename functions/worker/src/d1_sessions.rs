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

use toolgate_shared::files::Files;
use toolgate_shared::sessions::store::{Claim, Lease, Record, SessionStore, StoreFuture, sql};

/// D1 holds at most 2,000,000 bytes in a row: a session's state and files
/// together stay under this (the state as bytes, the files as base64 JSON).
pub const ROW_LIMIT: usize = 1_900_000;

thread_local! {
    /// The table is created once per isolate, on first use.
    static READY: Cell<bool> = const { Cell::new(false) };
}

/// Held rows, the state as hex.
const HELD_HEX: &str =
    "SELECT hex(state) AS state, files FROM sessions WHERE id = ?1 AND lease = ?2";

pub struct D1Sessions {
    db: SendWrapper<D1Database>,
}

#[derive(Deserialize)]
struct Held {
    state: String,
    files: String,
}

#[derive(Deserialize)]
struct Peek {
    owner: String,
    expires_at: f64,
}

fn text(s: &str) -> JsValue {
    JsValue::from_str(s)
}

/// Unix milliseconds are below 2^53, exact as JavaScript numbers.
fn int(n: i64) -> JsValue {
    JsValue::from_f64(n as f64)
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
        crate::d1::create_once(&self.db, sql::SCHEMA, &READY).await
    }

    async fn changes(&self, query: &str, args: &[JsValue]) -> Result<usize, String> {
        self.ready().await?;
        let result = self
            .db
            .prepare(query)
            .bind(args)
            .map_err(|e| e.to_string())?
            .run()
            .await
            .map_err(|e| e.to_string())?;
        Ok(result
            .meta()
            .map_err(|e| e.to_string())?
            .and_then(|m| m.changes)
            .unwrap_or(0))
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
            self.changes(sql::PURGE, &[int(now - 86_400_000)]).await?;
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
                let row: Option<Held> = self
                    .db
                    .prepare(HELD_HEX)
                    .bind(&[text(id), text(&lease.token)])
                    .map_err(|e| e.to_string())?
                    .first(None)
                    .await
                    .map_err(|e| e.to_string())?;
                let row = row.ok_or("a held session vanished")?;
                let wire = serde_json::from_str(&row.files).map_err(|e| e.to_string())?;
                return Ok(Claim::Held(Record {
                    state: hex(&row.state)?,
                    files: toolgate_shared::files::from_wire(wire, u64::MAX)?,
                }));
            }
            let peek: Option<Peek> = self
                .db
                .prepare(sql::PEEK)
                .bind(&[text(id)])
                .map_err(|e| e.to_string())?
                .first(None)
                .await
                .map_err(|e| e.to_string())?;
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
            let args = [
                text(id),
                text(token),
                blob,
                text(&files_json(files)),
                int(expires_at),
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
}
