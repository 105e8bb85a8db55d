//! What the DynamoDB stores (clarifications, sessions) share.

use aws_sdk_dynamodb::error::{ProvideErrorMetadata, SdkError};
use aws_sdk_dynamodb::types::AttributeValue;

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
