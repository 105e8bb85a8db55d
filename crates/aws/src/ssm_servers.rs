//! Servers from SSM Parameter Store: `{prefix}/{name}` holds the JSON
//! document ([`ServerDoc`]) and `{prefix}/{name}/private-key` the key as a
//! SecureString. One recursive, decrypting `GetParametersByPath` reads both.

use std::collections::BTreeMap;
use std::sync::Arc;

use toolgate_shared::ssh::doc::ServerDoc;
use toolgate_shared::ssh::inventory::{Server, ServerSource, ServersFuture};

/// Servers from SSM Parameter Store under one prefix (see the module's notes).
pub struct SsmServers {
    client: aws_sdk_ssm::Client,
    prefix: String,
}

impl SsmServers {
    /// A client from the environment's AWS config (region, credentials, and
    /// `AWS_ENDPOINT_URL` when set).
    pub async fn from_env(prefix: &str) -> Self {
        Self {
            client: crate::ssm::client_from_env().await,
            prefix: crate::ssm::normalize_prefix(prefix),
        }
    }

    async fn load_all(&self) -> Result<Vec<Server>, String> {
        let mut docs = BTreeMap::new();
        let mut keys = BTreeMap::new();
        for (name, value) in crate::ssm::parameters_under(&self.client, &self.prefix, true).await? {
            let rest = name.strip_prefix(&self.prefix).unwrap_or(&name);
            match rest.split_once('/') {
                None => {
                    docs.insert(rest.to_owned(), value);
                }
                Some((server, "private-key")) => {
                    keys.insert(server.to_owned(), Arc::<str>::from(value));
                }
                Some(_) => {
                    tracing::warn!(parameter = name, "ignoring an unknown server parameter")
                }
            }
        }
        let mut servers = Vec::new();
        for (name, doc) in docs {
            // One bad entry must not hide the others.
            let parsed = serde_json::from_str::<ServerDoc>(&doc)
                .map_err(|e| format!("not a valid server document: {e}"))
                .and_then(|d| {
                    let key = keys
                        .get(&name)
                        .cloned()
                        .ok_or_else(|| format!("{}{name}/private-key is missing", self.prefix))?;
                    d.into_server(&name, key)
                });
            match parsed {
                Ok(s) => servers.push(s),
                Err(e) => tracing::error!(
                    parameter = format!("{}{name}", self.prefix),
                    error = %e,
                    "skipping server"
                ),
            }
        }
        Ok(servers)
    }
}

impl ServerSource for SsmServers {
    fn describe(&self) -> String {
        format!("ssm:{}", self.prefix)
    }
    fn load(&self) -> ServersFuture<'_> {
        Box::pin(self.load_all())
    }
}
