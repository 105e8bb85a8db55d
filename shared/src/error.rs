//! The error contract of the HTTP API (docs/contracts.md#error-codes): `{"error":{"code","message"}}`.

use serde::Serialize;

/// The error codes of docs/contracts.md#error-codes, each with its HTTP status.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorCode {
    InvalidInput,
    Unauthorized,
    Forbidden,
    UnknownTool,
    TooLarge,
    Internal,
    /// A cloud account's MCP server or an SSH server is down, slow past its
    /// timeout, or failed.
    UpstreamUnavailable,
    /// No such clarification.
    NotFound,
    /// The clarification is already answered or cancelled.
    Conflict,
    /// The clarification expired unanswered.
    Expired,
    /// The deployment lacks something it needs to serve (the Worker's
    /// bearer secret).
    NotConfigured,
}

impl ErrorCode {
    /// Every code, in declaration order.
    pub const ALL: [ErrorCode; 11] = [
        Self::InvalidInput,
        Self::Unauthorized,
        Self::Forbidden,
        Self::UnknownTool,
        Self::TooLarge,
        Self::Internal,
        Self::UpstreamUnavailable,
        Self::NotFound,
        Self::Conflict,
        Self::Expired,
        Self::NotConfigured,
    ];

    pub fn status(self) -> u16 {
        match self {
            Self::InvalidInput => 400,
            Self::Unauthorized => 401,
            Self::Forbidden => 403,
            Self::UnknownTool => 404,
            Self::TooLarge => 413,
            Self::Internal => 500,
            Self::UpstreamUnavailable => 502,
            Self::NotFound => 404,
            Self::Conflict => 409,
            Self::Expired => 410,
            Self::NotConfigured => 503,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::InvalidInput => "invalid_input",
            Self::Unauthorized => "unauthorized",
            Self::Forbidden => "forbidden",
            Self::UnknownTool => "unknown_tool",
            Self::TooLarge => "too_large",
            Self::Internal => "internal",
            Self::UpstreamUnavailable => "upstream_unavailable",
            Self::NotFound => "not_found",
            Self::Conflict => "conflict",
            Self::Expired => "expired",
            Self::NotConfigured => "not_configured",
        }
    }
}

/// A failed call: the caller's fault (4xx) or ours (500). A tool's own
/// outcome, such as a script raising, is a result, never a `ToolError`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}: {message}", code.as_str())]
pub struct ToolError {
    pub code: ErrorCode,
    pub message: String,
}

impl ToolError {
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
        }
    }
    pub fn invalid_input(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::InvalidInput, message)
    }
    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::Internal, message)
    }
    pub fn unknown_tool(name: &str) -> Self {
        Self::new(ErrorCode::UnknownTool, format!("Unknown tool: {name:?}"))
    }

    /// The JSON body of the contract.
    pub fn body(&self) -> serde_json::Value {
        serde_json::json!({"error": {"code": self.code.as_str(), "message": self.message}})
    }
}
