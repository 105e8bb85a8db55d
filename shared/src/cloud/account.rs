//! A cloud account: an MCP endpoint and how to authenticate to it.

use std::collections::BTreeMap;
use std::fmt;
use std::future::Future;
use std::pin::Pin;

/// Account ids name tools (`<account>__<tool>`), so they cannot hold `_`.
pub const ACCOUNT_ID_MAX: usize = 40;

/// One cloud account: its MCP server and the credentials for it. `Debug` never
/// prints the credentials.
#[derive(Clone, PartialEq, Eq)]
pub struct Account {
    /// Names the account's tools (`<id>__<tool>`); see [`validate_account_id`].
    pub id: String,
    /// The MCP endpoint (streamable HTTP).
    pub url: String,
    /// A disabled account stays in the configuration, but its tools are neither
    /// listed nor served.
    pub enabled: bool,
    /// Extra headers sent on every request.
    pub headers: BTreeMap<String, String>,
    /// Sent as `Authorization: Bearer`.
    pub token: Option<String>,
    /// The account's own tool names (`*` matches any run) whose calls wait
    /// for a person's approval (docs/approvals.md).
    pub approve: Vec<String>,
    /// `approvers = "client"`: the caller's own person may decide this
    /// account's approvals, in their MCP client (docs/approvals.md).
    pub client_approves: bool,
}

// Header values and tokens are credentials: never print them.
impl fmt::Debug for Account {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Account")
            .field("id", &self.id)
            .field("url", &self.url)
            .field("enabled", &self.enabled)
            .field("headers", &self.headers.keys().collect::<Vec<_>>())
            .field("token", &self.token.as_ref().map(|_| "<redacted>"))
            .field("approve", &self.approve)
            .field("client_approves", &self.client_approves)
            .finish()
    }
}

/// `^[a-zA-Z0-9-]{1,40}$`: no `_`, so no `__`, which separates the account
/// from the tool in an exported name.
pub fn validate_account_id(id: &str) -> Result<(), String> {
    let ok = (1..=ACCOUNT_ID_MAX).contains(&id.len())
        && id.chars().all(|c| c.is_ascii_alphanumeric() || c == '-');
    if ok {
        Ok(())
    } else {
        Err(format!(
            "cloud account id {id:?} must match ^[a-zA-Z0-9-]{{1,{ACCOUNT_ID_MAX}}}$ (letters, digits and '-'; '__' separates the account from the tool)"
        ))
    }
}

/// What an [`AccountSource`] returns: the accounts, or why they could not be
/// read.
pub type AccountsFuture<'a> =
    Pin<Box<dyn Future<Output = Result<Vec<Account>, String>> + Send + 'a>>;

/// Where accounts come from.
pub trait AccountSource: Send + Sync {
    /// A short name for logs: "config", "ssm:/toolgate/clouds/".
    fn describe(&self) -> String;
    /// Reads the accounts now.
    fn load(&self) -> AccountsFuture<'_>;
}

/// Accounts from `[clouds.NAME]` tables (validated when the config loads).
pub struct ConfigAccounts(pub Vec<Account>);

impl AccountSource for ConfigAccounts {
    fn describe(&self) -> String {
        "config".into()
    }
    fn load(&self) -> AccountsFuture<'_> {
        let accounts = self.0.clone();
        Box::pin(async move { Ok(accounts) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn account_ids() {
        for ok in ["aliyun-prod", "cf", "A-1", &"a".repeat(40)] {
            assert!(validate_account_id(ok).is_ok(), "{ok}");
        }
        for bad in ["", "a__b", "a_b", "a.b", "a b", "é", "a/b", &"a".repeat(41)] {
            let e = validate_account_id(bad).unwrap_err();
            assert!(e.contains("must match"), "{bad}: {e}");
        }
    }

    #[test]
    fn debug_hides_credentials() {
        let a = Account {
            id: "cf".into(),
            url: "https://mcp.example.com/mcp".into(),
            enabled: true,
            headers: [("X-Api-Key".to_owned(), "hunter2".to_owned())].into(),
            token: Some("s3cret".into()),
            approve: Vec::new(),
            client_approves: false,
        };
        let shown = format!("{a:?}");
        assert!(shown.contains("X-Api-Key") && shown.contains("<redacted>"));
        assert!(!shown.contains("hunter2") && !shown.contains("s3cret"));
    }
}
