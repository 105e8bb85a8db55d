//! A plain tool added the way ARCHITECTURE.md's "A plain tool" says: its own
//! code (here the `tool` module, as its crate would hold it) with a
//! `with_<tool>` on `Toolset`, one line in the assembler, and nothing else:
//! the registry, the transports, `/healthz` and the errors come with it.

use serde_json::{Value, json};
use toolgate_e2e::lambda_events::{fixture, http_parts, invoke};
use toolgate_lambda::Function;
use toolgate_shared::config::Config;
use toolgate_shared::toolset::Toolset;

/// What a tool crate holds: the tool, its spec, and `with_upper`.
mod tool {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicU64, Ordering};

    use serde_json::{Value, json};
    use toolgate_shared::config::Config;
    use toolgate_shared::error::ToolError;
    use toolgate_shared::tool::{CallContext, Hints, Tool, ToolFuture, ToolSpec};
    use toolgate_shared::toolset::Toolset;

    pub struct Upper {
        spec: ToolSpec,
        calls: Arc<AtomicU64>,
    }

    impl Tool for Upper {
        fn spec(&self) -> &ToolSpec {
            &self.spec
        }

        fn call<'a>(&'a self, args: Value, _: &'a CallContext) -> ToolFuture<'a> {
            Box::pin(async move {
                let text = args["text"]
                    .as_str()
                    .ok_or_else(|| ToolError::invalid_input("\"text\" must be a string"))?;
                self.calls.fetch_add(1, Ordering::Relaxed);
                Ok(json!({ "text": text.to_uppercase() }))
            })
        }
    }

    pub trait WithUpper: Sized {
        fn with_upper(self, cfg: &Config) -> impl Future<Output = Result<Self, String>> + Send;
    }

    impl WithUpper for Toolset {
        async fn with_upper(mut self, _cfg: &Config) -> Result<Self, String> {
            let calls = Arc::new(AtomicU64::new(0));
            self.registry.add(Arc::new(Upper {
                spec: ToolSpec {
                    name: "text.upper".into(),
                    description: "Upper-cases a text.".into(),
                    input_schema: json!({
                        "type": "object",
                        "properties": {"text": {"type": "string"}},
                        "required": ["text"]
                    }),
                    output_schema: json!({"type": "object"}),
                    hints: Hints::read_only(false),
                    mcp_result: false,
                },
                calls: calls.clone(),
            }))?;
            self.add_health(
                "upper",
                Arc::new(move || json!({"calls": calls.load(Ordering::Relaxed)})),
            );
            Ok(self)
        }
    }
}

use tool::WithUpper;

fn call_event(tool: &str, args: &Value) -> Value {
    let mut e = fixture("apigw_v2_call.json");
    e["rawPath"] = json!(format!("/tools/{tool}"));
    e["requestContext"]["http"]["path"] = e["rawPath"].clone();
    e["pathParameters"]["name"] = json!(tool);
    e["body"] = json!(args.to_string());
    e["headers"]["content-length"] = json!(args.to_string().len().to_string());
    e
}

#[tokio::test(flavor = "multi_thread")]
async fn a_tool_added_by_one_line_is_served_on_every_path() {
    let cfg = Config::from_parts("", "(test)", &|_: &str| None).expect("config");
    // The one line in the assembler.
    let tools = Toolset::new().with_upper(&cfg).await.expect("upper");
    let f = Function::new(&tools);

    // Over API Gateway.
    for _ in 0..2 {
        let (status, _, body) = http_parts(
            &invoke(&f, call_event("text.upper", &json!({"text": "hi"})))
                .await
                .unwrap(),
        );
        assert_eq!(status, 200, "{body}");
        assert_eq!(body, json!({"text": "HI"}));
    }
    // Its own input error, in the contract's shape.
    let (status, _, body) = http_parts(
        &invoke(&f, call_event("text.upper", &json!({"text": 7})))
            .await
            .unwrap(),
    );
    assert_eq!(status, 400, "{body}");
    assert_eq!(body["error"]["code"], "invalid_input", "{body}");
    assert_eq!(body["error"]["message"], "\"text\" must be a string");

    // A direct invocation (Step Functions).
    let out = invoke(
        &f,
        json!({"tool": "text.upper", "arguments": {"text": "step"}}),
    )
    .await
    .unwrap();
    assert_eq!(out, json!({"text": "STEP"}));

    // Listed and reporting on /healthz.
    let (status, _, health) =
        http_parts(&invoke(&f, fixture("apigw_v2_healthz.json")).await.unwrap());
    assert_eq!(status, 200, "{health}");
    assert_eq!(health["upper"]["calls"], 3, "{health}");
}
