//! Tool specs in the formats agents read (`GET /tools?format=`).

use serde_json::{Value, json};

use crate::error::ToolError;
use crate::registry::{Registry, exported_name};
use crate::tool::ToolSpec;

/// A format `GET /tools?format=` answers in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// Toolgate's own: each [`ToolSpec`] as it is.
    Native,
    /// OpenAI function calling, under exported names.
    OpenAi,
    /// Anthropic tool use, under exported names.
    Anthropic,
    /// MCP's tool listing as `/mcp` gives it by default: exported names,
    /// output schemas and annotations.
    Mcp,
}

impl Format {
    /// Every format's name, as `?format=` takes it.
    pub const ALL: [&'static str; 4] = ["native", "openai", "anthropic", "mcp"];

    /// The format named `s`; any other name is `invalid_input`, listing the
    /// known ones.
    pub fn parse(s: &str) -> Result<Self, ToolError> {
        match s {
            "native" => Ok(Self::Native),
            "openai" => Ok(Self::OpenAi),
            "anthropic" => Ok(Self::Anthropic),
            "mcp" => Ok(Self::Mcp),
            other => Err(ToolError::invalid_input(format!(
                "Unknown format {other:?}; expected one of: {}",
                Self::ALL.join(", ")
            ))),
        }
    }
}

fn one(spec: &ToolSpec, format: Format) -> Value {
    match format {
        Format::Native => serde_json::to_value(spec).expect("ToolSpec serializes"),
        Format::OpenAi => json!({
            "type": "function",
            "function": {
                "name": exported_name(&spec.name),
                "description": spec.description,
                "parameters": spec.input_schema,
            }
        }),
        Format::Anthropic => json!({
            "name": exported_name(&spec.name),
            "description": spec.description,
            "input_schema": spec.input_schema,
        }),
        Format::Mcp => {
            let mut t = json!({
                "name": exported_name(&spec.name),
                "description": spec.description,
                "inputSchema": spec.input_schema,
            });
            if let Some(out) = spec.mcp_output_schema() {
                t["outputSchema"] = out.clone();
            }
            if !spec.hints.is_empty() {
                t["annotations"] = json!(spec.hints);
            }
            t
        }
    }
}

/// `{"tools": [...]}` in the requested format: the list agents paste as-is.
pub fn export(registry: &Registry, format: Format) -> Value {
    export_specs(registry.tools().iter().map(|t| t.spec()), format)
}

/// As [`export`], for specs that no running tool holds (`toolgate tools`).
pub fn export_specs<'a>(specs: impl IntoIterator<Item = &'a ToolSpec>, format: Format) -> Value {
    let tools: Vec<Value> = specs.into_iter().map(|s| one(s, format)).collect();
    json!({ "tools": tools })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tool::testing::Echo as Fake;
    use std::sync::Arc;

    fn registry() -> Registry {
        let mut r = Registry::new();
        r.add(Arc::new(Fake(ToolSpec {
            name: "python.execute".into(),
            description: "runs".into(),
            input_schema: json!({"type": "object"}),
            output_schema: json!({"type": "object", "title": "out"}),
            ..Default::default()
        })))
        .unwrap();
        r
    }

    #[test]
    fn function_calling_formats_use_exported_names() {
        let r = registry();
        let oa = export(&r, Format::OpenAi);
        assert_eq!(oa["tools"][0]["function"]["name"], "python__execute");
        assert_eq!(oa["tools"][0]["function"]["parameters"]["type"], "object");
        let an = export(&r, Format::Anthropic);
        assert_eq!(an["tools"][0]["name"], "python__execute");
        assert_eq!(an["tools"][0]["input_schema"]["type"], "object");
        let re = regex_lite_check(an["tools"][0]["name"].as_str().unwrap());
        assert!(re, "exported name must match ^[a-zA-Z0-9_-]{{1,64}}$");
    }

    fn regex_lite_check(s: &str) -> bool {
        (1..=64).contains(&s.len())
            && s.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    }

    #[test]
    fn native_keeps_the_canonical_name_and_mcp_the_portable_one() {
        let r = registry();
        let n = export(&r, Format::Native);
        assert_eq!(n["tools"][0]["name"], "python.execute");
        assert_eq!(n["tools"][0]["output_schema"]["title"], "out");
        let m = export(&r, Format::Mcp);
        assert_eq!(m["tools"][0]["name"], "python__execute");
        assert_eq!(m["tools"][0]["inputSchema"]["type"], "object");
        assert_eq!(m["tools"][0]["outputSchema"]["title"], "out");
    }

    #[test]
    fn both_names_resolve_and_unknown_is_typed() {
        let r = registry();
        assert!(r.get("python.execute").is_ok());
        assert!(r.get("python__execute").is_ok());
        let e = r.get("python_execute").err().unwrap();
        assert_eq!(e.code, crate::error::ErrorCode::UnknownTool);
    }

    #[test]
    fn the_name_mapping_goes_both_ways() {
        let mut r = Registry::new();
        for name in [
            "python.execute",
            "py.execute",
            "aliyun-prod__DescribeInstances",
        ] {
            r.add(Arc::new(Fake(ToolSpec {
                name: name.into(),
                description: String::new(),
                input_schema: json!({}),
                output_schema: json!({}),
                ..Default::default()
            })))
            .unwrap();
        }
        for t in r.tools() {
            let canonical = t.spec().name.clone();
            let exported = exported_name(&canonical);
            assert!(!exported.contains('.'));
            assert_eq!(r.get(&exported).unwrap().spec().name, canonical);
            assert_eq!(r.get(&canonical).unwrap().spec().name, canonical);
        }
        assert_eq!(exported_name("py.execute"), "py__execute");
        assert_eq!(
            exported_name("aliyun-prod__DescribeInstances"),
            "aliyun-prod__DescribeInstances"
        );
    }

    #[test]
    fn unknown_format_is_invalid_input() {
        let e = Format::parse("xml").unwrap_err();
        assert_eq!(e.code, crate::error::ErrorCode::InvalidInput);
        assert!(e.message.contains("native, openai, anthropic, mcp"));
    }

    #[test]
    fn duplicate_names_are_refused() {
        let mut r = registry();
        let dup = Arc::new(Fake(ToolSpec {
            name: "python__execute".into(),
            description: String::new(),
            input_schema: json!({}),
            output_schema: json!({}),
            ..Default::default()
        }));
        assert!(r.add(dup).is_err());
    }
}
