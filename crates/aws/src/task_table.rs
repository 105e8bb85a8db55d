//! Tasks in the clarify table, two items each:
//! - `task:<id>`, written only by the gateway: `tool`, `caller`, `runner`
//!   (the function), `created_at`, `expires_at`;
//! - `run:<runner>:<id>`, which the runner's role also reaches (its
//!   `dynamodb:LeadingKeys` are `run:<its name>:*`): `status`,
//!   `created_at`, `updated_at`, and once they happen `started_at` and
//!   `run_by` and `run_token` (the take-up), `cancel` (asked to stop) and
//!   `outcome` (the tool's result or error as JSON, bounded by the function
//!   that writes it).
//!
//! Both carry DynamoDB's `ttl`. Every change of a run is one conditional
//! write.

use std::collections::HashMap;

use aws_sdk_dynamodb::Client;
use aws_sdk_dynamodb::types::AttributeValue;
use serde_json::Value;

use crate::dynamo::{Item, condition_held, n, num, s, text};
use toolgate_shared::error::{ErrorCode, ToolError};
use toolgate_shared::tasks::rows::{Row, TaskRows, decode_outcome, encode_outcome};
use toolgate_shared::tasks::{Status, Task, TaskFuture};

/// How long an item outlives its expiry before DynamoDB's TTL removes it
/// (reads check `expires_at` themselves).
const KEEP_AFTER_EXPIRY_SECS: i64 = 86_400;

/// The AWS [`TaskRows`]: items in one DynamoDB table.
pub struct TaskTable {
    client: Client,
    table: String,
}

fn key(id: &str) -> HashMap<String, AttributeValue> {
    HashMap::from([("id".to_owned(), s(format!("task:{id}")))])
}

fn run_key(runner: &str, id: &str) -> HashMap<String, AttributeValue> {
    HashMap::from([("id".to_owned(), s(format!("run:{runner}:{id}")))])
}

fn failed(what: &str, e: impl std::fmt::Display) -> ToolError {
    ToolError::new(
        ErrorCode::UpstreamUnavailable,
        format!("the task table cannot be reached ({what}): {e}"),
    )
}

/// A conditional write's outcome: whether its condition held.
fn won<T, E, R>(
    out: Result<T, aws_sdk_dynamodb::error::SdkError<E, R>>,
    what: &str,
) -> Result<bool, ToolError>
where
    E: std::error::Error + aws_sdk_dynamodb::error::ProvideErrorMetadata + 'static,
    R: std::fmt::Debug + 'static,
{
    condition_held(out).map_err(|e| failed(what, aws_sdk_dynamodb::error::DisplayErrorContext(e)))
}

impl TaskTable {
    /// A client from the environment's AWS config, for `table`.
    pub async fn from_env(table: &str) -> Self {
        let conf = aws_config::load_defaults(aws_config::BehaviorVersion::latest()).await;
        Self {
            client: Client::new(&conf),
            table: table.to_owned(),
        }
    }

    async fn item(
        &self,
        key: HashMap<String, AttributeValue>,
    ) -> Result<Option<HashMap<String, AttributeValue>>, ToolError> {
        let out = self
            .client
            .get_item()
            .table_name(&self.table)
            .set_key(Some(key))
            .consistent_read(true)
            .send()
            .await
            .map_err(|e| failed("GetItem", aws_sdk_dynamodb::error::DisplayErrorContext(e)))?;
        Ok(out.item)
    }

    /// Writes a new item; the SDK's retry of a put that landed writes the
    /// same item again (its `created_at` matches).
    async fn put(&self, item: HashMap<String, AttributeValue>) -> Result<(), ToolError> {
        let created = item.get("created_at").cloned().unwrap_or_else(|| n(0));
        let out = self
            .client
            .put_item()
            .table_name(&self.table)
            .set_item(Some(item))
            .condition_expression("attribute_not_exists(id) OR created_at = :created")
            .expression_attribute_values(":created", created)
            .send()
            .await;
        match won(out, "PutItem")? {
            true => Ok(()),
            false => Err(ToolError::internal("a task with this id exists already")),
        }
    }
}

fn row_of(id: &str, task: &Item, run: &Item) -> Option<Row> {
    let status = match text(run, "status")?.as_str() {
        "working" => Status::Working,
        "completed" => Status::Completed,
        "cancelled" => Status::Cancelled,
        _ => return None,
    };
    Some(Row {
        task: Task {
            id: id.to_owned(),
            tool: text(task, "tool")?,
            status,
            created_at: num(task, "created_at")?,
            updated_at: num(run, "updated_at")?,
            outcome: text(run, "outcome").map(|o| decode_outcome(&o)),
        },
        caller: text(task, "caller").unwrap_or_default(),
        runner: text(task, "runner")?,
        started_at: num(run, "started_at"),
        run_by: num(run, "run_by"),
        cancel: run
            .get("cancel")
            .and_then(|v| v.as_bool().ok())
            .copied()
            .unwrap_or(false),
    })
}

impl TaskRows for TaskTable {
    fn create<'a>(
        &'a self,
        task: &'a Task,
        caller: &'a str,
        runner: &'a str,
    ) -> TaskFuture<'a, ()> {
        Box::pin(async move {
            let ttl = n(task.expires_at() / 1000 + KEEP_AFTER_EXPIRY_SECS);
            let mut run = run_key(runner, &task.id);
            run.extend([
                ("status".to_owned(), s(task.status.as_str())),
                ("created_at".to_owned(), n(task.created_at)),
                ("updated_at".to_owned(), n(task.updated_at)),
                ("ttl".to_owned(), ttl.clone()),
            ]);
            // The run first: a task item is read only with its run.
            self.put(run).await?;
            let mut item = key(&task.id);
            item.extend([
                ("tool".to_owned(), s(&task.tool)),
                ("caller".to_owned(), s(caller)),
                ("runner".to_owned(), s(runner)),
                ("created_at".to_owned(), n(task.created_at)),
                ("expires_at".to_owned(), n(task.expires_at())),
                ("ttl".to_owned(), ttl),
            ]);
            self.put(item).await
        })
    }

    fn get<'a>(&'a self, id: &'a str) -> TaskFuture<'a, Option<Row>> {
        Box::pin(async move {
            let Some(task) = self.item(key(id)).await? else {
                return Ok(None);
            };
            let Some(runner) = text(&task, "runner") else {
                return Ok(None);
            };
            let Some(run) = self.item(run_key(&runner, id)).await? else {
                return Ok(None);
            };
            Ok(row_of(id, &task, &run))
        })
    }

    fn stop_asked<'a>(&'a self, runner: &'a str, id: &'a str) -> TaskFuture<'a, bool> {
        Box::pin(async move {
            let run = self.item(run_key(runner, id)).await?;
            Ok(run.is_none_or(|r| {
                r.contains_key("cancel") || text(&r, "status").as_deref() != Some("working")
            }))
        })
    }

    fn start<'a>(
        &'a self,
        runner: &'a str,
        id: &'a str,
        created_after: i64,
        run_by: Option<i64>,
    ) -> TaskFuture<'a, bool> {
        Box::pin(async move {
            let now = toolgate_shared::clarify::now_ms();
            let mut update = self
                .client
                .update_item()
                .table_name(&self.table)
                .set_key(Some(run_key(runner, id)))
                // This take-up's token: the SDK's retry of a write that
                // landed wins again, where a second delivery cannot.
                .condition_expression(
                    "(#s = :working AND attribute_not_exists(started_at) \
                     AND attribute_not_exists(cancel) AND created_at > :after) \
                     OR run_token = :token",
                )
                .expression_attribute_values(":token", s(toolgate_shared::clarify::new_id()?))
                .expression_attribute_names("#s", "status")
                .expression_attribute_values(":working", s("working"))
                .expression_attribute_values(":after", n(created_after))
                .expression_attribute_values(":now", n(now));
            update = match run_by {
                Some(by) => update
                    .update_expression("SET started_at = :now, run_by = :by, run_token = :token")
                    .expression_attribute_values(":by", n(by)),
                None => update.update_expression("SET started_at = :now, run_token = :token"),
            };
            won(update.send().await, "UpdateItem")
        })
    }

    fn end<'a>(
        &'a self,
        runner: &'a str,
        id: &'a str,
        status: Status,
        outcome: Option<&'a Result<Value, ToolError>>,
        unstarted: bool,
    ) -> TaskFuture<'a, bool> {
        Box::pin(async move {
            let mut condition = "#s = :working".to_owned();
            if unstarted {
                condition.push_str(" AND attribute_not_exists(started_at)");
            }
            let mut update = self
                .client
                .update_item()
                .table_name(&self.table)
                .set_key(Some(run_key(runner, id)))
                .condition_expression(condition)
                .expression_attribute_names("#s", "status")
                .expression_attribute_values(":working", s("working"))
                .expression_attribute_values(":status", s(status.as_str()))
                .expression_attribute_values(":now", n(toolgate_shared::clarify::now_ms()));
            update = match outcome {
                Some(o) => update
                    .update_expression("SET #s = :status, updated_at = :now, outcome = :outcome")
                    .expression_attribute_values(":outcome", s(encode_outcome(o))),
                None => update.update_expression("SET #s = :status, updated_at = :now"),
            };
            won(update.send().await, "UpdateItem")
        })
    }

    fn request_cancel<'a>(&'a self, runner: &'a str, id: &'a str) -> TaskFuture<'a, bool> {
        Box::pin(async move {
            let out = self
                .client
                .update_item()
                .table_name(&self.table)
                .set_key(Some(run_key(runner, id)))
                .condition_expression("#s = :working")
                .update_expression("SET cancel = :yes")
                .expression_attribute_names("#s", "status")
                .expression_attribute_values(":working", s("working"))
                .expression_attribute_values(":yes", AttributeValue::Bool(true))
                .send()
                .await;
            won(out, "UpdateItem")
        })
    }
}
