//! What the DynamoDB stores (clarifications, sessions, tasks) share.

use std::collections::HashMap;

use aws_sdk_dynamodb::error::{ProvideErrorMetadata, SdkError};
use aws_sdk_dynamodb::types::AttributeValue;

/// An item as the SDK reads it.
pub(crate) type Item = HashMap<String, AttributeValue>;

/// A string attribute of `item`.
pub(crate) fn text(item: &Item, k: &str) -> Option<String> {
    item.get(k).and_then(|v| v.as_s().ok()).cloned()
}

/// A whole-number attribute of `item`.
pub(crate) fn num(item: &Item, k: &str) -> Option<i64> {
    item.get(k)
        .and_then(|v| v.as_n().ok())
        .and_then(|x| x.parse::<i64>().ok())
}

/// A conditional write's outcome: whether its condition held, or the
/// error that was not the condition's.
pub(crate) fn condition_held<T, E: ProvideErrorMetadata, R>(
    out: Result<T, SdkError<E, R>>,
) -> Result<bool, SdkError<E, R>> {
    match out {
        Ok(_) => Ok(true),
        Err(e)
            if e.as_service_error()
                .and_then(|se| se.code())
                .is_some_and(|c| c == "ConditionalCheckFailedException") =>
        {
            Ok(false)
        }
        Err(e) => Err(e),
    }
}

/// A string attribute.
pub(crate) fn s(v: impl Into<String>) -> AttributeValue {
    AttributeValue::S(v.into())
}

/// A number attribute.
pub(crate) fn n(v: i64) -> AttributeValue {
    AttributeValue::N(v.to_string())
}

/// Whether a Query failed because the table has no such index (a table
/// made before the index): DynamoDB says "…does not have the specified
/// index", moto "Invalid index".
pub(crate) fn missing_index<E: ProvideErrorMetadata, R>(e: &SdkError<E, R>) -> bool {
    e.as_service_error()
        .and_then(|se| se.message())
        .is_some_and(|m| m.contains("index"))
}
