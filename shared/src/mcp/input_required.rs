//! A tool's `input_required` value ([`crate::elicit::input_required`]) as
//! rmcp's `InputRequiredResult`, built field by field from the shapes the
//! tools here ask with (form and URL elicitations; string and enum
//! fields). Deserializing rmcp's request types instead would link their
//! decoders (a client's code, sampling's included) into every function,
//! python-execute's past its 20 MiB zip.

use std::collections::BTreeMap;

use rmcp::model::{
    ElicitRequest, ElicitRequestParams, ElicitationSchema, EnumSchema, InputRequest, InputRequests,
    InputRequiredResult, PrimitiveSchemaDefinition, StringSchema,
};
use serde_json::Value;

/// `v` as MCP's intermediate result; `None` when it is not a shape the
/// tools here make.
pub(super) fn of(v: &Value) -> Option<InputRequiredResult> {
    let state = v.get("requestState")?.as_str()?.to_owned();
    let mut requests = InputRequests::new();
    for (key, request) in v.get("inputRequests")?.as_object()? {
        let p = request.get("params")?;
        let message = p.get("message")?.as_str()?.to_owned();
        let params = match p.get("mode")?.as_str()? {
            "url" => ElicitRequestParams::UrlElicitationParams {
                meta: None,
                message,
                url: p.get("url")?.as_str()?.to_owned(),
                elicitation_id: String::new(),
            },
            "form" => ElicitRequestParams::FormElicitationParams {
                meta: None,
                message,
                requested_schema: schema(p.get("requestedSchema")?)?,
            },
            _ => return None,
        };
        requests.insert(
            key.clone(),
            InputRequest::Elicitation(ElicitRequest::new(params)),
        );
    }
    Some(InputRequiredResult::new(Some(requests), Some(state)))
}

fn strings(v: Option<&Value>) -> Vec<String> {
    v.and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|s| s.as_str().map(str::to_owned))
        .collect()
}

/// A form's schema: its string fields, and its choices as enums.
fn schema(s: &Value) -> Option<ElicitationSchema> {
    let mut properties = BTreeMap::new();
    for (name, p) in s.get("properties")?.as_object()? {
        let title = p
            .get("title")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        let field = match p.get("enum") {
            Some(values) => PrimitiveSchemaDefinition::Enum(
                EnumSchema::builder(strings(Some(values)))
                    .title(title)
                    .build(),
            ),
            None => {
                let mut field = StringSchema::new().title(title);
                if let Some(max) = p.get("maxLength").and_then(Value::as_u64) {
                    field = field.max_length(u32::try_from(max).ok()?);
                }
                PrimitiveSchemaDefinition::String(field)
            }
        };
        properties.insert(name.clone(), field);
    }
    let mut schema = ElicitationSchema::new(properties);
    schema.required = Some(strings(s.get("required")));
    Some(schema)
}
