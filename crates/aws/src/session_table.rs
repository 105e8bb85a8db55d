//! The AWS session store: one DynamoDB table of python-execute's own,
//! keyed by `id`. A session is a small item (owner, expiry, lease) and its
//! saved state and files as parts of at most `PART_BYTES` each (an item
//! holds at most 400 KB), keyed `<id>#<lease>#<n>`: a call writes its parts
//! under its own lease, then switches the session to them in one
//! conditional update (only while it still holds the lease), then deletes
//! the old ones. A reader never sees half a state. Items carry `ttl`, a day
//! past expiry, so expired sessions answer `expired` for a while.
//!
//! A session item also carries `bytes` (its [`stored_size`], as last
//! saved), which the index `by_owner` (`owner`, `expires_at`; projecting
//! `bytes`) holds with it: an owner's usage is one Query of that index,
//! never a Scan. Parts carry no `owner` and stay out of it. The bytes of
//! every session together would need a Scan (or a counter no TTL
//! deletion updates), so [`Usage::total_bytes`] is 0 here: the total bound
//! is not enforced on AWS.

use std::collections::HashMap;

use aws_sdk_dynamodb::Client;

use crate::dynamo::{missing_index, n, s};
use aws_sdk_dynamodb::error::DisplayErrorContext;
use aws_sdk_dynamodb::primitives::Blob;
use aws_sdk_dynamodb::types::{AttributeValue, ReturnValue};

use toolgate_shared::files::Files;
use toolgate_shared::sessions::store::{
    Claim, FORGET_AFTER_MS, Lease, Record, SessionStore, StoreFuture, Usage, stored_size,
};

/// Well under DynamoDB's 400 KB item limit, with the key and `ttl`.
const PART_BYTES: usize = 350_000;
/// How long an item outlives its session's expiry: as long as the session
/// answers `expired` (DynamoDB's TTL deletes it up to two days later).
const KEEP_AFTER_EXPIRY_SECS: i64 = FORGET_AFTER_MS / 1000;
/// The index of sessions by owner and expiry (template.yaml,
/// `SessionsTable`; infra/terraform).
pub const BY_OWNER_INDEX: &str = "by_owner";

/// The AWS [`SessionStore`] (see the module's notes).
pub struct DynamoSessions {
    client: Client,
    table: String,
}

type Item = HashMap<String, AttributeValue>;

fn num(item: &Item, k: &str) -> Option<i64> {
    item.get(k)?.as_n().ok()?.parse().ok()
}
fn text<'a>(item: &'a Item, k: &str) -> Option<&'a str> {
    item.get(k)?.as_s().ok().map(String::as_str)
}
fn err(what: &str, e: impl std::fmt::Display) -> String {
    format!("DynamoDB {what}: {e}")
}
fn ttl(expires_at: i64) -> AttributeValue {
    n(expires_at / 1000 + KEEP_AFTER_EXPIRY_SECS)
}
fn part_key(id: &str, version: &str, i: usize) -> String {
    format!("{id}#{version}#{i}")
}

/// State and files as one payload: the state's length (4 bytes LE), the
/// state, then the files as JSON (base64 by name).
fn encode(state: &[u8], files: &Files) -> Vec<u8> {
    let mut out = (state.len() as u32).to_le_bytes().to_vec();
    out.extend_from_slice(state);
    out.extend(serde_json::to_vec(&toolgate_shared::files::to_wire(files)).unwrap_or_default());
    out
}

fn decode(payload: &[u8]) -> Result<Record, String> {
    let bad = || "a stored session is damaged".to_owned();
    let len = u32::from_le_bytes(
        payload
            .get(..4)
            .ok_or_else(bad)?
            .try_into()
            .map_err(|_| bad())?,
    ) as usize;
    let state = payload.get(4..4 + len).ok_or_else(bad)?.to_vec();
    let wire = serde_json::from_slice(&payload[4 + len..]).map_err(|_| bad())?;
    // Decoded only: names stored under older rules still load.
    let files = toolgate_shared::files::decode_wire(wire).map_err(|_| bad())?;
    Ok(Record { state, files })
}

impl DynamoSessions {
    /// A client from the environment's AWS config, for `table`.
    pub async fn from_env(table: &str) -> Self {
        let conf = aws_config::load_defaults(aws_config::BehaviorVersion::latest()).await;
        Self {
            client: Client::new(&conf),
            table: table.to_owned(),
        }
    }

    async fn get(&self, key: &str) -> Result<Option<Item>, String> {
        let out = self
            .client
            .get_item()
            .table_name(&self.table)
            .key("id", s(key))
            .consistent_read(true)
            .send()
            .await
            .map_err(|e| err("GetItem", DisplayErrorContext(e)))?;
        Ok(out.item)
    }

    async fn delete_parts(&self, id: &str, version: &str, count: usize) {
        for i in 0..count {
            if let Err(e) = self
                .client
                .delete_item()
                .table_name(&self.table)
                .key("id", s(part_key(id, version, i)))
                .send()
                .await
            {
                // Its `ttl` removes it later.
                tracing::warn!(error = %DisplayErrorContext(e), "an old session part was not deleted");
            }
        }
    }

    async fn create_one(
        &self,
        id: &str,
        owner: &str,
        lease: &Lease,
        expires_at: i64,
    ) -> Result<(), String> {
        self.client
            .put_item()
            .table_name(&self.table)
            .item("id", s(id))
            .item("owner", s(owner))
            .item("expires_at", n(expires_at))
            .item("ttl", ttl(expires_at))
            .item("lease", s(&lease.token))
            .item("lease_until", n(lease.until))
            .item("parts", n(0))
            .item("bytes", n(0))
            .condition_expression("attribute_not_exists(id)")
            .send()
            .await
            .map(drop)
            .map_err(|e| err("PutItem", DisplayErrorContext(e)))
    }

    async fn claim_one(
        &self,
        id: &str,
        owner: &str,
        lease: &Lease,
        now: i64,
    ) -> Result<Claim, String> {
        let taken = self
            .client
            .update_item()
            .table_name(&self.table)
            .key("id", s(id))
            .update_expression("SET lease = :t, lease_until = :u")
            .condition_expression("#o = :o AND expires_at > :now AND lease_until <= :now")
            .expression_attribute_names("#o", "owner")
            .expression_attribute_values(":t", s(&lease.token))
            .expression_attribute_values(":u", n(lease.until))
            .expression_attribute_values(":o", s(owner))
            .expression_attribute_values(":now", n(now))
            .return_values(ReturnValue::AllNew)
            .send()
            .await;
        let meta = match taken {
            Ok(out) => out.attributes.unwrap_or_default(),
            Err(e)
                if e.as_service_error()
                    .is_some_and(|se| se.is_conditional_check_failed_exception()) =>
            {
                let found = self.get(id).await?;
                return Ok(Claim::refused(
                    found.as_ref().map(|m| {
                        (
                            text(m, "owner").unwrap_or_default(),
                            num(m, "expires_at").unwrap_or(0),
                        )
                    }),
                    owner,
                    now,
                ));
            }
            Err(e) => return Err(err("UpdateItem", DisplayErrorContext(e))),
        };
        let parts = num(&meta, "parts").unwrap_or(0) as usize;
        if parts == 0 {
            return Ok(Claim::Held(Record::default()));
        }
        let version = text(&meta, "version").unwrap_or_default().to_owned();
        let mut payload = Vec::new();
        for i in 0..parts {
            let part = self
                .get(&part_key(id, &version, i))
                .await?
                .ok_or("a stored session is missing a part")?;
            let data = part
                .get("data")
                .and_then(|v| v.as_b().ok())
                .ok_or("a stored session part holds no data")?;
            payload.extend_from_slice(data.as_ref());
        }
        match decode(&payload) {
            Ok(record) => Ok(Claim::Held(record)),
            // Not left held until the lease runs out: the next call gets
            // the same error at once, not "busy".
            Err(e) => {
                let _ = self.release_one(id, &lease.token).await;
                Err(e)
            }
        }
    }

    async fn save_one(
        &self,
        id: &str,
        token: &str,
        state: &[u8],
        files: &Files,
        expires_at: i64,
    ) -> Result<bool, String> {
        let payload = encode(state, files);
        let bytes = stored_size(state, files) as i64;
        let chunks: Vec<&[u8]> = payload.chunks(PART_BYTES).collect();
        for (i, chunk) in chunks.iter().enumerate() {
            self.client
                .put_item()
                .table_name(&self.table)
                .item("id", s(part_key(id, token, i)))
                .item("data", AttributeValue::B(Blob::new(chunk.to_vec())))
                .item("ttl", ttl(expires_at))
                .send()
                .await
                .map_err(|e| err("PutItem", DisplayErrorContext(e)))?;
        }
        let switched = self
            .client
            .update_item()
            .table_name(&self.table)
            .key("id", s(id))
            .update_expression(
                "SET version = :t, parts = :p, expires_at = :e, #ttl = :ttl, lease_until = :zero, #b = :b REMOVE lease",
            )
            .condition_expression("lease = :t")
            .expression_attribute_names("#ttl", "ttl")
            .expression_attribute_names("#b", "bytes")
            .expression_attribute_values(":t", s(token))
            .expression_attribute_values(":p", n(chunks.len() as i64))
            .expression_attribute_values(":e", n(expires_at))
            .expression_attribute_values(":ttl", ttl(expires_at))
            .expression_attribute_values(":zero", n(0))
            .expression_attribute_values(":b", n(bytes))
            .return_values(ReturnValue::AllOld)
            .send()
            .await;
        match switched {
            Ok(out) => {
                let old = out.attributes.unwrap_or_default();
                if let (Some(v), Some(p)) = (text(&old, "version"), num(&old, "parts")) {
                    self.delete_parts(id, v, p as usize).await;
                }
                Ok(true)
            }
            Err(e)
                if e.as_service_error()
                    .is_some_and(|se| se.is_conditional_check_failed_exception()) =>
            {
                self.delete_parts(id, token, chunks.len()).await;
                Ok(false)
            }
            Err(e) => Err(err("UpdateItem", DisplayErrorContext(e))),
        }
    }

    /// `owner`'s live sessions and their bytes: a Query of `by_owner`
    /// (eventually consistent: the bound is soft anyway). A table without
    /// the index (made before it) counts nothing: `None`, with a warning.
    async fn usage_of(&self, owner: &str, now: i64) -> Result<Option<Usage>, String> {
        let mut pages = self
            .client
            .query()
            .table_name(&self.table)
            .index_name(BY_OWNER_INDEX)
            .key_condition_expression("#o = :o AND expires_at > :now")
            .projection_expression("#b")
            .expression_attribute_names("#o", "owner")
            .expression_attribute_names("#b", "bytes")
            .expression_attribute_values(":o", s(owner))
            .expression_attribute_values(":now", n(now))
            .into_paginator()
            .send();
        let mut usage = Usage::default();
        while let Some(page) = pages.next().await {
            let page = match page {
                Ok(p) => p,
                Err(e) if missing_index(&e) => {
                    tracing::warn!(
                        index = BY_OWNER_INDEX,
                        "the sessions table has no index by owner: session quotas are not enforced"
                    );
                    return Ok(None);
                }
                Err(e) => return Err(err("Query", DisplayErrorContext(e))),
            };
            for item in page.items() {
                usage.sessions += 1;
                usage.bytes += num(item, "bytes").unwrap_or(0).max(0) as u64;
            }
        }
        Ok(Some(usage))
    }

    async fn extend_one(&self, id: &str, token: &str, until: i64) -> Result<bool, String> {
        let r = self
            .client
            .update_item()
            .table_name(&self.table)
            .key("id", s(id))
            .update_expression("SET lease_until = :u")
            .condition_expression("lease = :t")
            .expression_attribute_values(":t", s(token))
            .expression_attribute_values(":u", n(until))
            .send()
            .await;
        match r {
            Ok(_) => Ok(true),
            Err(e)
                if e.as_service_error()
                    .is_some_and(|se| se.is_conditional_check_failed_exception()) =>
            {
                Ok(false)
            }
            Err(e) => Err(err("UpdateItem", DisplayErrorContext(e))),
        }
    }

    async fn release_one(&self, id: &str, token: &str) -> Result<(), String> {
        let r = self
            .client
            .update_item()
            .table_name(&self.table)
            .key("id", s(id))
            .update_expression("SET lease_until = :zero REMOVE lease")
            .condition_expression("lease = :t")
            .expression_attribute_values(":t", s(token))
            .expression_attribute_values(":zero", n(0))
            .send()
            .await;
        match r {
            Ok(_) => Ok(()),
            Err(e)
                if e.as_service_error()
                    .is_some_and(|se| se.is_conditional_check_failed_exception()) =>
            {
                Ok(())
            }
            Err(e) => Err(err("UpdateItem", DisplayErrorContext(e))),
        }
    }
}

/// The `owner` a session without a caller's identity is stored under:
/// `owner` keys the `by_owner` index, which takes no empty string; no
/// identity holds a control character.
const NO_IDENTITY: &str = "\u{1}no identity";

/// `owner` as the table keeps it.
fn stored_owner(owner: &str) -> &str {
    if owner.is_empty() { NO_IDENTITY } else { owner }
}

impl SessionStore for DynamoSessions {
    fn create<'a>(
        &'a self,
        id: &'a str,
        owner: &'a str,
        lease: &'a Lease,
        expires_at: i64,
    ) -> StoreFuture<'a, ()> {
        Box::pin(self.create_one(id, stored_owner(owner), lease, expires_at))
    }
    fn claim<'a>(
        &'a self,
        id: &'a str,
        owner: &'a str,
        lease: &'a Lease,
        now: i64,
    ) -> StoreFuture<'a, Claim> {
        Box::pin(self.claim_one(id, stored_owner(owner), lease, now))
    }
    fn save<'a>(
        &'a self,
        id: &'a str,
        token: &'a str,
        state: &'a [u8],
        files: &'a Files,
        expires_at: i64,
    ) -> StoreFuture<'a, bool> {
        Box::pin(self.save_one(id, token, state, files, expires_at))
    }
    fn release<'a>(&'a self, id: &'a str, token: &'a str) -> StoreFuture<'a, ()> {
        Box::pin(self.release_one(id, token))
    }
    fn extend<'a>(&'a self, id: &'a str, token: &'a str, until: i64) -> StoreFuture<'a, bool> {
        Box::pin(self.extend_one(id, token, until))
    }
    fn usage<'a>(&'a self, owner: &'a str, now: i64) -> StoreFuture<'a, Option<Usage>> {
        Box::pin(self.usage_of(stored_owner(owner), now))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_payload_reads_back_and_damage_is_an_error() {
        let files = Files::from([("a/b.bin".to_string(), vec![0, 255])]);
        let p = encode(b"state", &files);
        assert_eq!(
            decode(&p).unwrap(),
            Record {
                state: b"state".to_vec(),
                files
            }
        );
        assert!(decode(&p[..3]).is_err());
        assert!(decode(&[9, 0, 0, 0, 1]).is_err());
    }
}
