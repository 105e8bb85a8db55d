use super::*;

#[test]
fn an_accounts_definitions_sit_where_its_refs_point() {
    let own = json!({
        "type": "object",
        "properties": {"w": {"$ref": "#/$defs/Weather"}},
        "$defs": {"Weather": {"type": "object"}}
    });
    let wrapped = result_schema(own.as_object());
    assert_eq!(wrapped["$defs"], own["$defs"]);
    assert_eq!(wrapped["properties"]["structuredContent"], own);
    assert!(result_schema(None).get("$defs").is_none());
}
