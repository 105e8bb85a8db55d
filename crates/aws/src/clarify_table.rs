//! The AWS store: one DynamoDB table keyed by `id`. The answer is a
//! conditional update (`status = pending` and not expired), so two answers
//! cannot both win. Items carry a TTL attribute (`ttl`, a week past expiry,
//! so late readers still get 410 rather than 404 for a while).
//!
//! An item whose workflow waits (it holds a task token) also carries
//! `awaiting` and `due_at`, which put it in the sparse index `expiring`
//! (`awaiting`, `due_at`): the scheduled sweep queries that index for what
//! is due instead of scanning the table. `due_at` is the expiry while the
//! item is pending and the settling time once settled, and the item leaves
//! the index only when its workflow has been told: a callback that failed
//! is sent again by the next sweep.
//!
//! An approval is a clarification item with `approval` (its binding),
//! `approval_details` and, in link-holder mode, `approval_cap`, put in one
//! write. Its decision (`decision`, `approver`, `decided_at`, and the
//! SHA-256 of the binding decided, `decided_binding`) is written
//! only by a decision, which the ssh and cloud functions' IAM cannot make;
//! its use is one conditional write of `approval_used_at`, so it is used
//! once.
//!
//! A question (not an approval) carries `pending` until it is answered or
//! cancelled (the settling write removes it). That puts it in the sparse
//! index `pending` (`pending`, `expires_at`; projecting `caller`, who
//! asked), whose unexpired part is exactly the questions waiting now: the quotas count
//! them with one Query, never a Scan, reading at most about as many items
//! as the total bound allows.
//!
//! A notification's outcome is its own attribute, `notice:<channel>:<event>`
//! (channel names have no `:`), so that two instances recording at once
//! each write their own.

use std::collections::HashMap;

use aws_sdk_dynamodb::Client;

use crate::dynamo::{missing_index, n, s};
use aws_sdk_dynamodb::types::AttributeValue;

use toolgate_shared::clarify::store::{
    ApprovalRow, ClarifyStore, Decision, ListQuery, Pending, Settlement, StoreFuture,
};
use toolgate_shared::clarify::{Clarification, Status};

mod items;
use items::{NOTICE, approval_of, item_to};

/// How long an item outlives its expiry before DynamoDB's TTL removes it.
const KEEP_AFTER_EXPIRY_SECS: i64 = 7 * 86_400;

/// The sparse index of items whose workflow has not been told yet
/// (template.yaml, `ClarifyTable`), and its partition key's one value.
pub const EXPIRING_INDEX: &str = "expiring";
const AWAITING: &str = "task";

/// The sparse index of pending questions (template.yaml, `ClarifyTable`;
/// infra/terraform), and its partition key's one value.
pub const PENDING_INDEX: &str = "pending";
const QUESTION: &str = "question";

/// The AWS [`ClarifyStore`]: one DynamoDB table (see the module's notes).
pub struct DynamoStore {
    client: Client,
    table: String,
}

/// An SDK error with its whole chain of causes.
fn err(what: &str, e: impl std::error::Error) -> String {
    format!("DynamoDB {what}: {}", e)
}

type UpdateResult<T> = Result<
    T,
    aws_sdk_dynamodb::error::SdkError<aws_sdk_dynamodb::operation::update_item::UpdateItemError>,
>;

/// An unconditional UpdateItem's outcome (a condition that fails is an
/// error here).
fn updated<T>(out: UpdateResult<T>) -> Result<(), String> {
    out.map(drop).map_err(|e| err("UpdateItem", e))
}

/// A conditional UpdateItem's outcome: whether its condition held.
fn won<T>(out: UpdateResult<T>) -> Result<bool, String> {
    crate::dynamo::condition_held(out).map_err(|e| err("UpdateItem", e))
}

impl DynamoStore {
    /// A client from the environment's AWS config, for `table`.
    pub async fn from_env(table: &str) -> Self {
        let conf = aws_config::load_defaults(aws_config::BehaviorVersion::latest()).await;
        Self {
            client: Client::new(&conf),
            table: table.to_owned(),
        }
    }

    async fn insert_one(
        &self,
        c: &Clarification,
        a: Option<&ApprovalRow>,
        caller: Option<&str>,
    ) -> Result<(), String> {
        let mut item = HashMap::from([
            ("id".to_owned(), s(&c.id)),
            ("question".to_owned(), s(&c.question)),
            (
                "options".to_owned(),
                s(serde_json::to_string(&c.options).unwrap_or_else(|_| "[]".into())),
            ),
            ("status".to_owned(), s("pending")),
            ("created_at".to_owned(), n(c.created_at)),
            ("expires_at".to_owned(), n(c.expires_at)),
            (
                "ttl".to_owned(),
                n(c.expires_at / 1000 + KEEP_AFTER_EXPIRY_SECS),
            ),
        ]);
        // Who asked, for the per-caller count; a question (an approval is
        // not one) is in the `pending` index until settled.
        if let Some(caller) = caller {
            item.insert("caller".into(), s(caller));
        }
        if a.is_none() {
            item.insert("pending".into(), s(QUESTION));
        }
        if let Some(t) = &c.task_token {
            item.insert("task_token".into(), s(t));
            item.insert("awaiting".into(), s(AWAITING));
            item.insert("due_at".into(), n(c.expires_at));
        }
        if let Some(a) = a {
            item.insert("approval".into(), s(&a.binding));
            item.insert("approval_details".into(), s(&a.details));
            if let Some(cap) = &a.cap_sha256 {
                item.insert("approval_cap".into(), s(cap));
            }
        }
        self.client
            .put_item()
            .table_name(&self.table)
            .set_item(Some(item))
            .condition_expression("attribute_not_exists(id)")
            .send()
            .await
            .map(|_| ())
            .map_err(|e| err("PutItem", e))
    }

    /// Item `id`, read consistently.
    async fn item(&self, id: &str) -> Result<Option<HashMap<String, AttributeValue>>, String> {
        let out = self
            .client
            .get_item()
            .table_name(&self.table)
            .key("id", s(id))
            .consistent_read(true)
            .send()
            .await
            .map_err(|e| err("GetItem", e))?;
        Ok(out.item)
    }

    /// `name`'s secret: read; else put (one conditional write, so racing
    /// instances keep one) and read back. Its item's id is not a
    /// clarification's, so no route or index ever reads it.
    async fn secret_of(&self, name: &str, fresh: &str) -> Result<Option<String>, String> {
        let id = format!("secret:{name}");
        let kept = |item: Option<HashMap<String, AttributeValue>>| {
            item.and_then(|i| i.get("secret")?.as_s().ok().cloned())
        };
        if let Some(secret) = kept(self.item(&id).await?) {
            return Ok(Some(secret));
        }
        let put = self
            .client
            .put_item()
            .table_name(&self.table)
            .item("id", s(&id))
            .item("secret", s(fresh))
            .condition_expression("attribute_not_exists(id)")
            .send()
            .await;
        if let Err(e) = put
            && !e
                .as_service_error()
                .is_some_and(|se| se.is_conditional_check_failed_exception())
        {
            return Err(err("PutItem", e));
        }
        Ok(kept(self.item(&id).await?))
    }

    async fn get_one(&self, id: &str) -> Result<Option<Clarification>, String> {
        Ok(self.item(id).await?.as_ref().and_then(item_to))
    }

    async fn settle_one(&self, id: &str, st: &Settlement) -> Result<bool, String> {
        // Due at once (in the index while `awaiting` lasts) until `reported`.
        let mut update = "SET #st = :to, settled_at = :at, due_at = :at".to_owned();
        let mut req = self
            .client
            .update_item()
            .table_name(&self.table)
            .key("id", s(id))
            .expression_attribute_names("#st", "status")
            .expression_attribute_values(":to", s(st.status.as_str()))
            .expression_attribute_values(":at", n(st.at))
            .expression_attribute_values(":pending", s("pending"));
        if let Some(a) = &st.answer {
            update.push_str(", answer = :answer");
            req = req.expression_attribute_values(":answer", s(a));
        }
        if let Some(c) = st.choice {
            update.push_str(", choice = :choice");
            req = req.expression_attribute_values(":choice", n(c as i64));
        }
        // An approval only expires here: its decision is `decide_one`'s.
        let condition = if st.status == Status::Expired {
            "attribute_exists(id) AND #st = :pending"
        } else {
            "attribute_exists(id) AND #st = :pending AND expires_at > :at AND attribute_not_exists(approval)"
        };
        // An answered or cancelled question leaves the `pending` index in
        // the same write. An expired one may stay: the count reads only
        // unexpired items, and the ssh and cloud functions, which expire
        // approvals, may not name `pending` (template.yaml).
        if st.status != Status::Expired {
            update.push_str(" REMOVE #pq");
            req = req.expression_attribute_names("#pq", "pending");
        }
        won(req
            .update_expression(update)
            .condition_expression(condition)
            .send()
            .await)
    }

    /// What is due: a query of the `expiring` index (no Scan), whose reads
    /// are eventually consistent; `settle`'s condition re-checks each item,
    /// and a callback sent twice is refused by Step Functions, harmlessly.
    async fn query_due(&self, now: i64) -> Result<Vec<Clarification>, String> {
        let mut pages = self
            .client
            .query()
            .table_name(&self.table)
            .index_name(EXPIRING_INDEX)
            .key_condition_expression("awaiting = :task AND due_at <= :now")
            .expression_attribute_values(":task", s(AWAITING))
            .expression_attribute_values(":now", n(now))
            .into_paginator()
            .send();
        let mut out = Vec::new();
        while let Some(page) = pages.next().await {
            let page = page.map_err(|e| err("Query", e))?;
            out.extend(page.items().iter().filter_map(item_to));
        }
        Ok(out)
    }

    /// Questions pending and unexpired at `now`: `caller`'s, and all. A
    /// Query of `pending` (eventually consistent: the bound is soft
    /// anyway). A table without the index (made before it) counts nothing:
    /// `None`, with a warning.
    async fn count_pending_of(&self, caller: &str, now: i64) -> Result<Option<Pending>, String> {
        let mut pages = self
            .client
            .query()
            .table_name(&self.table)
            .index_name(PENDING_INDEX)
            .key_condition_expression("#pq = :q AND expires_at > :now")
            .projection_expression("#c")
            .expression_attribute_names("#pq", "pending")
            .expression_attribute_names("#c", "caller")
            .expression_attribute_values(":q", s(QUESTION))
            .expression_attribute_values(":now", n(now))
            .into_paginator()
            .send();
        let mut counted = Pending::default();
        while let Some(page) = pages.next().await {
            let page = match page {
                Ok(p) => p,
                Err(e) if missing_index(&e) => {
                    tracing::warn!(
                        index = PENDING_INDEX,
                        "the clarifications table has no index of pending questions: pending quotas are not enforced"
                    );
                    return Ok(None);
                }
                Err(e) => return Err(err("Query", e)),
            };
            for item in page.items() {
                counted.all += 1;
                if item
                    .get("caller")
                    .and_then(|v| v.as_s().ok())
                    .map(String::as_str)
                    == Some(caller)
                {
                    counted.mine += 1;
                }
            }
        }
        Ok(Some(counted))
    }

    async fn note_one(
        &self,
        id: &str,
        channel: &str,
        event: &str,
        outcome: &str,
    ) -> Result<(), String> {
        let out = self
            .client
            .update_item()
            .table_name(&self.table)
            .key("id", s(id))
            .update_expression("SET #n = :o")
            .condition_expression("attribute_exists(id)")
            .expression_attribute_names("#n", format!("{NOTICE}{channel}:{event}"))
            .expression_attribute_values(":o", s(outcome))
            .send()
            .await;
        updated(out)
    }

    async fn approval_one(&self, id: &str) -> Result<Option<ApprovalRow>, String> {
        Ok(self.item(id).await?.as_ref().and_then(approval_of))
    }

    async fn decide_one(&self, id: &str, d: &Decision) -> Result<bool, String> {
        let (choice, answer) = d.choice();
        won(self
            .client
            .update_item()
            .table_name(&self.table)
            .key("id", s(id))
            .update_expression(
                "SET #st = :answered, answer = :answer, choice = :choice, settled_at = :at, \
                 due_at = :at, decision = :decision, approver = :approver, decided_at = :at, \
                 decided_binding = :binding",
            )
            .condition_expression(
                "attribute_exists(approval) AND attribute_not_exists(decision) \
                 AND #st = :pending AND expires_at > :at",
            )
            .expression_attribute_names("#st", "status")
            .expression_attribute_values(":answered", s("answered"))
            .expression_attribute_values(":pending", s("pending"))
            .expression_attribute_values(":answer", s(answer))
            .expression_attribute_values(":choice", n(choice as i64))
            .expression_attribute_values(":at", n(d.at))
            .expression_attribute_values(":decision", s(d.as_str()))
            .expression_attribute_values(":approver", s(&d.approver))
            .expression_attribute_values(":binding", s(&d.binding_sha256))
            .send()
            .await)
    }

    /// A Scan: the inbox is an operator's occasional read of a table whose
    /// items leave a week after they expire.
    async fn list_all(
        &self,
        q: ListQuery,
    ) -> Result<Vec<(Clarification, Option<ApprovalRow>)>, String> {
        let kind = if q.approvals {
            "attribute_exists(approval)"
        } else {
            "attribute_not_exists(approval)"
        };
        let mut req = self
            .client
            .scan()
            .table_name(&self.table)
            .consistent_read(true);
        req = if q.pending_only {
            req.filter_expression(format!("{kind} AND #st = :pending AND expires_at > :now"))
                .expression_attribute_names("#st", "status")
                .expression_attribute_values(":pending", s("pending"))
                .expression_attribute_values(":now", n(q.now))
        } else {
            req.filter_expression(kind)
        };
        let mut pages = req.into_paginator().send();
        let mut out = Vec::new();
        while let Some(page) = pages.next().await {
            let page = page.map_err(|e| err("Scan", e))?;
            out.extend(
                page.items()
                    .iter()
                    .filter_map(|item| Some((item_to(item)?, approval_of(item)))),
            );
        }
        out.sort_by(|a, b| (b.0.created_at, &a.0.id).cmp(&(a.0.created_at, &b.0.id)));
        out.truncate(q.limit);
        Ok(out)
    }

    async fn consume_one(&self, id: &str, at: i64) -> Result<bool, String> {
        let out = self
            .client
            .update_item()
            .table_name(&self.table)
            .key("id", s(id))
            .update_expression("SET approval_used_at = :at")
            .condition_expression(
                "attribute_exists(approval) AND attribute_not_exists(approval_used_at)",
            )
            .expression_attribute_values(":at", n(at))
            .send()
            .await;
        won(out)
    }

    async fn reported_one(&self, id: &str) -> Result<(), String> {
        let out = self
            .client
            .update_item()
            .table_name(&self.table)
            .key("id", s(id))
            .update_expression("REMOVE awaiting, due_at")
            .condition_expression("attribute_exists(id)")
            .send()
            .await;
        updated(out)
    }
}

impl ClarifyStore for DynamoStore {
    fn insert<'a>(&'a self, c: &'a Clarification) -> StoreFuture<'a, ()> {
        Box::pin(self.insert_one(c, None, None))
    }
    fn insert_asked<'a>(&'a self, c: &'a Clarification, caller: &'a str) -> StoreFuture<'a, ()> {
        Box::pin(self.insert_one(c, None, Some(caller)))
    }
    fn insert_approval<'a>(
        &'a self,
        c: &'a Clarification,
        a: &'a ApprovalRow,
    ) -> StoreFuture<'a, ()> {
        Box::pin(self.insert_one(c, Some(a), None))
    }
    fn count_pending<'a>(&'a self, caller: &'a str, now: i64) -> StoreFuture<'a, Option<Pending>> {
        Box::pin(self.count_pending_of(caller, now))
    }
    fn get<'a>(&'a self, id: &'a str) -> StoreFuture<'a, Option<Clarification>> {
        Box::pin(self.get_one(id))
    }
    fn settle<'a>(&'a self, id: &'a str, st: &'a Settlement) -> StoreFuture<'a, bool> {
        Box::pin(self.settle_one(id, st))
    }
    fn due(&self, now: i64) -> StoreFuture<'_, Vec<Clarification>> {
        Box::pin(self.query_due(now))
    }
    fn reported<'a>(&'a self, id: &'a str) -> StoreFuture<'a, ()> {
        Box::pin(self.reported_one(id))
    }
    fn note<'a>(
        &'a self,
        id: &'a str,
        channel: &'a str,
        event: &'a str,
        outcome: &'a str,
    ) -> StoreFuture<'a, ()> {
        Box::pin(self.note_one(id, channel, event, outcome))
    }
    fn approval<'a>(&'a self, id: &'a str) -> StoreFuture<'a, Option<ApprovalRow>> {
        Box::pin(self.approval_one(id))
    }
    fn decide<'a>(&'a self, id: &'a str, d: &'a Decision) -> StoreFuture<'a, bool> {
        Box::pin(self.decide_one(id, d))
    }
    fn list(&self, q: ListQuery) -> StoreFuture<'_, Vec<(Clarification, Option<ApprovalRow>)>> {
        Box::pin(self.list_all(q))
    }
    fn consume<'a>(&'a self, id: &'a str, at: i64) -> StoreFuture<'a, bool> {
        Box::pin(self.consume_one(id, at))
    }
    fn secret<'a>(&'a self, name: &'a str, fresh: &'a str) -> StoreFuture<'a, Option<String>> {
        Box::pin(self.secret_of(name, fresh))
    }
}
