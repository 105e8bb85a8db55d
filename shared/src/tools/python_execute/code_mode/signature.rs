//! Python signatures generated from the tools' input schemas, so that a
//! model writes a correct call the first time (`tools.help()`).

use serde_json::Value;

/// A Python signature for a tool taking `schema`'s object:
/// `ssh_run(server_name: str, command: str, timeout: int = None) -> dict`.
pub fn signature(name: &str, schema: &Value) -> String {
    let required: Vec<&str> = schema["required"]
        .as_array()
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let mut params: Vec<(bool, String)> = Vec::new();
    if let Some(props) = schema["properties"].as_object() {
        for (p, s) in props {
            let ty = py_type(s);
            let needed = required.contains(&p.as_str());
            params.push((
                needed,
                if needed {
                    format!("{p}: {ty}")
                } else {
                    format!("{p}: {ty} = None")
                },
            ));
        }
    }
    // Keyword-only, required first: Python refuses a default before one
    // without.
    params.sort_by_key(|(needed, _)| !needed);
    let params: Vec<String> = params.into_iter().map(|(_, p)| p).collect();
    if params.is_empty() {
        format!("{name}() -> dict")
    } else {
        format!("{name}(*, {}) -> dict", params.join(", "))
    }
}

fn py_type(schema: &Value) -> String {
    if let Some(e) = schema["enum"].as_array() {
        let values: Vec<String> = e.iter().map(|v| v.to_string()).collect();
        return format!("Literal[{}]", values.join(", "));
    }
    let one = |t: &str| match t {
        "string" => "str".to_owned(),
        "integer" => "int".to_owned(),
        "number" => "float".to_owned(),
        "boolean" => "bool".to_owned(),
        "array" => format!("list[{}]", py_type(&schema["items"])),
        "object" => "dict".to_owned(),
        "null" => "None".to_owned(),
        _ => "Any".to_owned(),
    };
    match &schema["type"] {
        Value::String(t) => one(t),
        Value::Array(ts) => ts
            .iter()
            .filter_map(Value::as_str)
            .map(one)
            .collect::<Vec<_>>()
            .join(" | "),
        _ => "Any".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn signatures_read_as_python() {
        let schema = json!({
            "type": "object",
            "properties": {
                "timeout": {"type": "integer"},
                "server_name": {"type": "string"},
                "mode": {"enum": ["a", "b"]},
                "tags": {"type": "array", "items": {"type": "string"}},
                "limit": {"type": ["integer", "null"]},
            },
            "required": ["server_name"],
        });
        assert_eq!(
            signature("ssh_run", &schema),
            "ssh_run(*, server_name: str, limit: int | None = None, mode: Literal[\"a\", \"b\"] = None, \
             tags: list[str] = None, timeout: int = None) -> dict"
        );
        assert_eq!(
            signature("list_servers", &json!({"type": "object"})),
            "list_servers() -> dict"
        );
    }
}
