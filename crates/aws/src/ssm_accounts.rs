//! Cloud accounts from SSM Parameter Store: `{prefix}{account}` holds JSON
//! `{"url", "enabled", "headers", "token_parameter"}`; `token_parameter`
//! names a SecureString holding the bearer token.

use std::collections::BTreeMap;

use serde::Deserialize;

use toolgate_shared::cloud::account::{
    Account, AccountSource, AccountsFuture, validate_account_id,
};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Document {
    url: String,
    #[serde(default = "yes")]
    enabled: bool,
    #[serde(default)]
    headers: BTreeMap<String, String>,
    token_parameter: Option<String>,
    #[serde(default)]
    approve: Vec<String>,
    approvers: Option<String>,
}

fn yes() -> bool {
    true
}

/// Cloud accounts from SSM Parameter Store under one prefix (see the module's
/// notes).
pub struct SsmAccounts {
    client: aws_sdk_ssm::Client,
    prefix: String,
}

impl SsmAccounts {
    /// A client from the environment's AWS config (region, credentials, and
    /// `AWS_ENDPOINT_URL` when set).
    pub async fn from_env(prefix: &str) -> Self {
        Self {
            client: crate::ssm::client_from_env().await,
            prefix: crate::ssm::normalize_prefix(prefix),
        }
    }

    async fn load_all(&self) -> Result<Vec<Account>, String> {
        let mut accounts = Vec::new();
        for (name, value) in crate::ssm::parameters_under(&self.client, &self.prefix, false).await?
        {
            let id = name.strip_prefix(&self.prefix).unwrap_or(&name);
            // One bad entry must not hide the other accounts.
            match self.account(id, &value).await {
                Ok(a) => accounts.push(a),
                Err(e) => {
                    tracing::error!(parameter = name, error = %e, "skipping cloud account")
                }
            }
        }
        Ok(accounts)
    }

    async fn account(&self, id: &str, value: &str) -> Result<Account, String> {
        validate_account_id(id)?;
        let doc: Document = serde_json::from_str(value)
            .map_err(|e| format!("not a valid account document: {e}"))?;
        let token = match &doc.token_parameter {
            Some(name) => {
                let out = self
                    .client
                    .get_parameter()
                    .name(name)
                    .with_decryption(true)
                    .send()
                    .await
                    .map_err(|e| {
                        format!(
                            "token parameter {name}: {}",
                            aws_sdk_ssm::error::DisplayErrorContext(e)
                        )
                    })?;
                out.parameter().and_then(|p| p.value()).map(str::to_owned)
            }
            None => None,
        };
        Ok(Account {
            id: id.to_owned(),
            url: doc.url,
            enabled: doc.enabled,
            headers: doc.headers,
            token,
            approve: doc.approve,
            client_approves: toolgate_shared::approvals::client_approves(doc.approvers.as_deref())
                .map_err(|e| format!("approvers: {e}"))?,
        })
    }
}

impl AccountSource for SsmAccounts {
    fn describe(&self) -> String {
        format!("ssm:{}", self.prefix)
    }
    fn load(&self) -> AccountsFuture<'_> {
        Box::pin(self.load_all())
    }
}
