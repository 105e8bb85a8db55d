//! What an approval allows (its binding), what approvers are shown (its
//! details), and the proof a call that used one carries (its receipt).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

/// What approving allows: exactly this tool on this target, this command
/// or these arguments, with this host key or endpoint, for this caller.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Binding {
    /// The tool (`ssh_run`, or a cloud tool's exported name).
    pub tool: String,
    /// The server (or cloud account) it runs on.
    pub server: String,
    /// Hex SHA-256 of the exact command (or the canonical arguments).
    pub command_sha256: String,
    /// The server's pinned host-key fingerprint (or the account's endpoint)
    /// when approval was asked.
    pub host_key: String,
    /// Who asked, when the call had an identity; another caller cannot
    /// use the approval.
    pub caller: Option<String>,
    /// Where it logs in (`deploy@10.0.0.5:22`), as approvers were shown:
    /// an inventory edited since (another user, another address) no longer
    /// matches. `None` for cloud tools (their endpoint is `host_key`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub login: Option<String>,
    /// `mcp` when it was asked in the caller's own MCP client.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub via: Option<String>,
    /// The caller's own person may decide it too (the target's policy said
    /// `approvers = "client"`, and it was asked in the caller's client).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub client_approves: bool,
}

/// One labelled box of what approvers see.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Field {
    /// The label (`Command`, `Intent`, …), Toolgate's words.
    pub label: String,
    /// The value, whole: often the agent's words, so untrusted.
    pub text: String,
    /// Shown as code (monospace, kept as written).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub code: bool,
}

/// What approvers see: a one-line summary in Toolgate's words, then each
/// field in a box of its own (so that the agent's text cannot dress up as
/// another field), and why the call needs approval.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Details {
    /// `Run a command on web-1 (deploy@10.0.0.5)`.
    pub summary: String,
    /// The labelled values, in order.
    pub fields: Vec<Field>,
    /// Why approval is needed (the policy's words).
    pub why: String,
}

impl Details {
    /// A field shown as plain text.
    pub fn text(mut self, label: &str, text: impl Into<String>) -> Self {
        self.fields.push(Field {
            label: label.into(),
            text: text.into(),
            code: false,
        });
        self
    }
    /// A field shown as code.
    pub fn code(mut self, label: &str, text: impl Into<String>) -> Self {
        self.fields.push(Field {
            label: label.into(),
            text: text.into(),
            code: true,
        });
        self
    }
}

/// The proof an approved call carries into its audit line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Receipt {
    /// The approval's id (logged as its ref only).
    pub id: String,
    /// Who approved: an approver identity (`token:alice`, `jwt:…`,
    /// `slack:T/U`, `local:user`), or `link holder` where the operator chose
    /// link-holder approvals.
    pub approver: String,
    /// When, RFC 3339.
    pub approved_at: String,
    /// As bound.
    pub command_sha256: String,
    /// As bound.
    pub host_key: String,
    /// `mcp` when it was asked (and its page opened) in the caller's MCP
    /// client.
    pub via: Option<String>,
}

/// Hex SHA-256 of `text`.
pub fn sha256_hex(text: &str) -> String {
    hex(&Sha256::digest(text.as_bytes()))
}

/// `v` as JSON with every object's keys sorted: the same arguments always
/// hash the same.
pub fn canonical(v: &Value) -> String {
    fn sorted(v: &Value) -> Value {
        match v {
            Value::Object(o) => {
                let m: BTreeMap<&String, Value> = o.iter().map(|(k, v)| (k, sorted(v))).collect();
                json!(m)
            }
            Value::Array(a) => Value::Array(a.iter().map(sorted).collect()),
            other => other.clone(),
        }
    }
    sorted(v).to_string()
}

/// Lowercase hex.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_command_hash_is_sha256() {
        // printf %s 'systemctl restart nginx' | sha256sum
        assert_eq!(
            sha256_hex("systemctl restart nginx"),
            "af72e7d42dc52c5e6f1871d2a03807f14cf40683321425bf1388c7d8952928ae"
        );
    }

    #[test]
    fn details_keep_each_field_apart() {
        let d = Details {
            summary: "Run".into(),
            fields: vec![],
            why: "policy".into(),
        }
        .code("Command", "uptime\nWhy: harmless")
        .text("Intent", "check");
        let v = serde_json::to_value(&d).unwrap();
        assert_eq!(v["fields"][0]["label"], "Command");
        assert_eq!(v["fields"][0]["text"], "uptime\nWhy: harmless");
        assert_eq!(v["fields"][0]["code"], true);
        assert!(v["fields"][1].get("code").is_none());
    }
}
