//! `GET /openapi.json`: an OpenAPI 3.1 document of the HTTP API, generated
//! from the registry's tool specs so that it cannot drift from them.

use serde_json::{Map, Value, json};

use crate::error::ErrorCode;
use crate::registry::{Registry, exported_name};
use crate::spec_export::Format;

/// The codes a tool call can answer: every one (python.execute's sessions
/// answer `not_found`, `conflict`, `expired` and `not_configured` too).
fn call_errors() -> impl Iterator<Item = ErrorCode> {
    ErrorCode::ALL.into_iter()
}

fn error_response(description: &str) -> Value {
    json!({
        "description": description,
        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}
    })
}

/// What each code means, as the document says it.
fn meaning(c: ErrorCode) -> &'static str {
    match c {
        ErrorCode::InvalidInput => {
            "Invalid input: not a JSON object, a missing, bad or unknown field, a wrong content type"
        }
        ErrorCode::Unauthorized => "Missing or wrong bearer token",
        ErrorCode::Forbidden => "Out of the caller's scope, or refused by a server's policy",
        ErrorCode::UnknownTool => "No such tool",
        ErrorCode::TooLarge => {
            "Request body over the tool's limit (1 MiB, more for python.execute's files)"
        }
        ErrorCode::Internal => "The service failed (never the script itself)",
        ErrorCode::UpstreamUnavailable => {
            "A cloud account's MCP server or an SSH server is down, too slow, or refused (host key)"
        }
        ErrorCode::NotFound => {
            "No such clarification or session (a session ended over a day ago, or never was)"
        }
        ErrorCode::Conflict => {
            "The clarification is already answered or cancelled, or the session is busy with another call"
        }
        ErrorCode::Expired => "The clarification expired, or the session ended (idle too long)",
        ErrorCode::NotConfigured => {
            "The deployment is missing a part this needs (its bearer secret, or a sessions table)"
        }
        ErrorCode::Unavailable => {
            "The server is shutting down and stopped this call: make it again (another instance, or this one once restarted)"
        }
        ErrorCode::QuotaExceeded => {
            "A quota is used up (live sessions, stored session bytes, request bytes waiting for the sandbox, pending clarifications): the message names it and its setting; try again once some are released"
        }
        ErrorCode::ApprovalRequired => {
            "The call needs a person's approval first: error.approval has its id, expiry and what it is for; once an approver approved it, call again with \"approval\": its id"
        }
    }
}

/// One response per status the codes answer with; codes that share a
/// status (404: `unknown_tool`, `not_found`) share its description.
fn error_responses(codes: &[ErrorCode]) -> Map<String, Value> {
    let mut by_status: std::collections::BTreeMap<u16, Vec<&str>> = Default::default();
    for c in codes {
        by_status.entry(c.status()).or_default().push(meaning(*c));
    }
    by_status
        .into_iter()
        .map(|(status, what)| (status.to_string(), error_response(&what.join("; or: "))))
        .collect()
}

/// The document. `authenticated` adds the bearer scheme to every operation
/// but `/healthz`; `tasks`, the task routes (`/tools/{name}/task` for each
/// tool, `/tasks/{id}`), and `Prefer: respond-async` on the tools' routes:
/// 202 with the task where this process runs the tool, a 307 to the task
/// route where a peer does (AWS: the route goes to the peer's function).
/// Every runtime serves the same tools over `/mcp` too.
pub fn document(registry: &Registry, authenticated: bool, tasks: bool) -> Value {
    let security = if authenticated {
        json!([{"bearerAuth": []}])
    } else {
        json!([])
    };
    let mut paths = Map::new();
    for tool in registry.tools() {
        let spec = tool.spec();
        let mut responses = Map::new();
        responses.insert(
            "200".into(),
            json!({
                "description": "The tool's result",
                "content": {"application/json": {"schema": spec.output_schema}}
            }),
        );
        responses.extend(error_responses(&call_errors().collect::<Vec<_>>()));
        let mut op = json!({
            "operationId": exported_name(&spec.name),
            "summary": format!("Call {}", spec.name),
            "description": spec.description,
            "security": security,
            "requestBody": {
                "required": true,
                "content": {"application/json": {"schema": spec.input_schema}}
            },
            "responses": responses,
        });
        if tasks {
            let prefer = json!([{
                "name": "Prefer", "in": "header", "required": false,
                "description": "respond-async[, wait=N] (N <= 25 s): a call still running then answers 202 with its task",
                "schema": {"type": "string"}
            }]);
            let mut task_op = op.clone();
            task_op["operationId"] = json!(format!("{}_task", exported_name(&spec.name)));
            task_op["summary"] = json!(format!("Call {} as a task", spec.name));
            task_op["parameters"] = prefer.clone();
            task_op["responses"]["202"] =
                task_response("The call runs on as this task (Location: /tasks/{id})");
            paths.insert(
                format!("/tools/{}/task", spec.name),
                json!({ "post": task_op }),
            );
            op["parameters"] = prefer;
            if tool.runs_in().is_none() {
                op["responses"]["202"] =
                    task_response("The call runs on as this task (Location: /tasks/{id})");
            } else {
                // On AWS the tool's route goes to its own function, which
                // sends the call to the task route.
                op["responses"]["307"] = json!({
                    "description": "Send the same request to the task route (Location: <name>/task, relative)"
                });
            }
        }
        paths.insert(format!("/tools/{}", spec.name), json!({ "post": op }));
    }
    let mut list_responses = Map::new();
    list_responses.insert(
        "200".into(),
        json!({
            "description": "Tool specs in the requested format",
            "content": {"application/json": {"schema": {
                "type": "object",
                "properties": {"tools": {"type": "array", "items": {"type": "object"}}},
                "required": ["tools"]
            }}}
        }),
    );
    list_responses.extend(error_responses(&[
        ErrorCode::InvalidInput,
        ErrorCode::Unauthorized,
    ]));
    paths.insert(
        "/tools".into(),
        json!({"get": {
            "operationId": "list_tools",
            "summary": "List the tools with their JSON Schemas",
            "security": security,
            "parameters": [{
                "name": "format", "in": "query", "required": false,
                "schema": {"type": "string", "enum": Format::ALL, "default": "native"}
            }],
            "responses": list_responses,
        }}),
    );
    if registry.get(crate::tools::clarify::NAME).is_ok() {
        clarification_paths(&mut paths);
    }
    if tasks {
        task_paths(&mut paths, &security);
    }
    paths.insert(
        "/healthz".into(),
        json!({"get": {
            "operationId": "healthz",
            "summary": "Liveness, the tools served, and the sandbox's walls",
            "security": [],
            "responses": {"200": {
                "description": "Healthy",
                "content": {"application/json": {"schema": {
                    "type": "object",
                    "properties": {
                        "status": {"const": "ok"},
                        "tools": {"type": "array", "items": {"type": "string"}}
                    },
                    "required": ["status", "tools"]
                }}}
            }}
        }}),
    );
    let codes: Vec<&str> = call_errors().map(|c| c.as_str()).collect();
    json!({
        "openapi": "3.1.0",
        "info": {
            "title": "Toolgate",
            "version": env!("CARGO_PKG_VERSION"),
            "description": "Tools for hosted AI agents. Each tool is one POST operation whose request body is the tool's arguments. The same tools are served over MCP at /mcp."
        },
        "paths": paths,
        "components": {
            "schemas": {"Task": task_schema(), "Error": {
                "type": "object",
                "properties": {"error": {
                    "type": "object",
                    "properties": {
                        "code": {"type": "string", "enum": codes},
                        "message": {"type": "string"}
                    },
                    "required": ["code", "message"]
                }},
                "required": ["error"]
            }},
            "securitySchemes": {"bearerAuth": {"type": "http", "scheme": "bearer"}}
        }
    })
}

/// A task as its routes answer it: the task, and once completed the call's
/// `result` or `error`.
fn task_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "task": {
                "type": "object",
                "properties": {
                    "id": {"type": "string"},
                    "tool": {"type": "string"},
                    "status": {"type": "string", "enum": ["working", "completed", "cancelled"]},
                    "created_at": {"type": "string"},
                    "updated_at": {"type": "string"},
                    "expires_at": {"type": "string"},
                    "poll_interval_ms": {"type": "integer"}
                },
                "required": ["id", "tool", "status", "created_at", "updated_at", "expires_at", "poll_interval_ms"]
            },
            "result": {"description": "The call's 200 body, once completed"},
            "error": {"description": "The call's error object, once completed"}
        },
        "required": ["task"]
    })
}

fn task_response(description: &str) -> Value {
    json!({
        "description": description,
        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Task"}}}
    })
}

/// `GET /tasks/{id}` and `POST /tasks/{id}/cancel`.
fn task_paths(paths: &mut Map<String, Value>, security: &Value) {
    let id = json!({"name": "id", "in": "path", "required": true, "schema": {"type": "string"}});
    let responses = |what: &str| {
        let mut r = Map::new();
        r.insert("200".into(), task_response(what));
        r.extend(error_responses(&[
            ErrorCode::InvalidInput,
            ErrorCode::Unauthorized,
            ErrorCode::NotFound,
            ErrorCode::Internal,
            ErrorCode::UpstreamUnavailable,
        ]));
        r
    };
    paths.insert(
        "/tasks/{id}".into(),
        json!({"get": {
            "operationId": "read_task",
            "summary": "A task's state, and its outcome once completed; ?wait=N long-polls up to 25 s",
            "security": security,
            "parameters": [id, {
                "name": "wait", "in": "query", "required": false,
                "schema": {"type": "integer", "minimum": 0, "maximum": 25}
            }],
            "responses": responses("The task"),
        }}),
    );
    paths.insert(
        "/tasks/{id}/cancel".into(),
        json!({"post": {
            "operationId": "cancel_task",
            "summary": "Cancel a task (its work is stopped), answered once it stopped",
            "security": security,
            "parameters": [id],
            "responses": responses("The task, cancelled unless it had ended"),
        }}),
    );
}

/// The answer routes of `clarify`: no bearer token (the id is the capability).
fn clarification_paths(paths: &mut Map<String, Value>) {
    let id = json!({"name": "id", "in": "path", "required": true, "schema": {"type": "string"}});
    let state = json!({
        "type": "object",
        "properties": {
            "status": {"type": "string", "enum": ["pending", "answered", "expired", "cancelled"]},
            "id": {"type": "string"},
            "question": {"type": "string"},
            "options": {"type": "array", "items": {"type": "string"}},
            "answer_url": {"type": "string"},
            "expires_at": {"type": "string"},
            "answer": {"type": "string"},
            "choice": {"type": ["integer", "null"]},
            "answered_at": {"type": "string"},
            "cancelled_at": {"type": "string"}
        },
        "required": ["status", "id", "question", "options", "answer_url", "expires_at"]
    });
    let ok = |what: &str| json!({"description": what, "content": {"application/json": {"schema": state}}});
    let mut read = Map::new();
    read.insert(
        "200".into(),
        json!({
            "description": "The state (JSON), or the page for people (Accept: text/html)",
            "content": {"application/json": {"schema": state}, "text/html": {"schema": {"type": "string"}}}
        }),
    );
    read.extend(error_responses(&[
        ErrorCode::InvalidInput,
        ErrorCode::NotFound,
    ]));
    let settle = |what: &str| {
        let mut r = Map::new();
        r.insert("200".into(), ok(what));
        r.extend(error_responses(&[
            ErrorCode::InvalidInput,
            ErrorCode::NotFound,
            ErrorCode::Conflict,
            ErrorCode::Expired,
        ]));
        r
    };
    let answered = settle("Answered");
    let cancelled = settle("Cancelled");
    paths.insert(
        "/clarifications/{id}".into(),
        json!({"get": {
            "operationId": "read_clarification",
            "summary": "A clarification's state; ?wait=N long-polls up to 25 s",
            "security": [],
            "parameters": [id, {
                "name": "wait", "in": "query", "required": false,
                "schema": {"type": "integer", "minimum": 0, "maximum": 25}
            }],
            "responses": read,
        }}),
    );
    paths.insert(
        "/clarifications/{id}/answer".into(),
        json!({"post": {
            "operationId": "answer_clarification",
            "summary": "Answer with text, or with an option's index",
            "security": [],
            "parameters": [id],
            "requestBody": {"required": true, "content": {"application/json": {"schema": {
                "type": "object",
                "properties": {"answer": {"type": "string", "minLength": 1}, "choice": {"type": "integer", "minimum": 0}}
            }}}},
            "responses": answered,
        }}),
    );
    paths.insert(
        "/clarifications/{id}/cancel".into(),
        json!({"post": {
            "operationId": "cancel_clarification",
            "summary": "Withdraw the question (a waiting workflow fails with Clarify.Cancelled)",
            "security": [],
            "parameters": [id],
            "responses": cancelled,
        }}),
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tool::ToolSpec;
    use crate::tool::testing::Echo as Fake;
    use std::sync::Arc;

    #[test]
    fn one_operation_per_tool_from_its_spec() {
        let mut r = Registry::new();
        let input = json!({"type": "object", "properties": {"code": {"type": "string"}}});
        r.add(Arc::new(Fake(ToolSpec {
            name: "python.execute".into(),
            description: "runs".into(),
            input_schema: input.clone(),
            output_schema: json!({"type": "object", "title": "out"}),
            ..Default::default()
        })))
        .unwrap();
        let d = document(&r, true, false);
        let op = &d["paths"]["/tools/python.execute"]["post"];
        assert_eq!(op["operationId"], "python__execute");
        assert_eq!(
            op["requestBody"]["content"]["application/json"]["schema"],
            input
        );
        assert_eq!(
            op["responses"]["200"]["content"]["application/json"]["schema"]["title"],
            "out"
        );
        // Every status a call can answer, sessions' included.
        for code in [
            "400", "401", "403", "404", "409", "410", "413", "428", "429", "500", "502", "503",
        ] {
            assert!(op["responses"][code].is_object(), "{code}");
        }
        let not_found = op["responses"]["404"]["description"].as_str().unwrap();
        assert!(
            not_found.contains("No such tool") && not_found.contains("session"),
            "{not_found}"
        );
        assert_eq!(op["security"], json!([{"bearerAuth": []}]));
        assert_eq!(
            document(&r, false, false)["paths"]["/tools/python.execute"]["post"]["security"],
            json!([])
        );
        assert_eq!(d["paths"]["/healthz"]["get"]["security"], json!([]));
        assert!(d["paths"].get("/tasks/{id}").is_none());
        // Where calls run as tasks: the preference, its 202, the routes.
        let t = document(&r, true, true);
        let op = &t["paths"]["/tools/python.execute"]["post"];
        assert_eq!(op["parameters"][0]["name"], "Prefer");
        assert_eq!(
            op["responses"]["202"]["content"]["application/json"]["schema"]["$ref"],
            "#/components/schemas/Task"
        );
        assert!(t["paths"]["/tasks/{id}"]["get"]["responses"]["404"].is_object());
        assert!(t["paths"]["/tasks/{id}/cancel"]["post"].is_object());
    }
}
