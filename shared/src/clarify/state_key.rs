//! The key that seals the state an MCP client's retry brings back
//! (`crate::elicit::state`): given (configured, or a key file beside the
//! SQLite store), or kept in the store itself and read when first needed.

use crate::elicit::state::StateKey;

use super::{Clarify, new_secret};

/// Where the key that seals MCP retry states comes from.
pub(super) enum StateKeySource {
    /// None: questions are not asked in MCP clients.
    None,
    /// Configured, or a key file beside the SQLite store.
    Given(StateKey),
    /// Kept in the store itself, made by the first instance that needs it
    /// and read once per service (DynamoDB, D1).
    Stored(std::sync::Mutex<Option<StateKey>>),
}

/// The store's secret that seals MCP retry states ([`super::ClarifyStore::secret`]).
const STATE_SECRET: &str = "mcp-state-key";

impl Clarify {
    /// Asks questions in the caller's own MCP client where it can, sealing
    /// the retry's state with `key`.
    pub fn with_state_key(mut self, key: StateKey) -> Self {
        self.state_key = StateKeySource::Given(key);
        self
    }

    /// Asks questions in the caller's own MCP client where it can, sealing
    /// the retry's state with a key kept in the store: made once by the
    /// first instance that asks, so that every instance opens the others'
    /// states without a secret to configure.
    pub fn with_stored_state_key(mut self) -> Self {
        self.state_key = StateKeySource::Stored(std::sync::Mutex::new(None));
        self
    }

    /// Whether questions can be asked in MCP clients here (there is a key,
    /// or the store keeps one).
    pub fn seals_states(&self) -> bool {
        !matches!(self.state_key, StateKeySource::None)
    }

    /// The key retries' states are sealed with; `None` where there is none,
    /// or the store could not give its own (said in the log: the question
    /// is then asked as for any other client).
    pub async fn state_key(&self) -> Option<StateKey> {
        let cache = match &self.state_key {
            StateKeySource::None => return None,
            StateKeySource::Given(k) => return Some(k.clone()),
            StateKeySource::Stored(cache) => cache,
        };
        if let Some(k) = cache.lock().unwrap_or_else(|p| p.into_inner()).clone() {
            return Some(k);
        }
        let kept = async {
            let fresh = new_secret().map_err(|e| e.message)?;
            match self.store.secret(STATE_SECRET, &fresh).await? {
                Some(s) => StateKey::from_secret(s.as_bytes()),
                None => Err("the clarify store keeps no secrets".into()),
            }
        };
        match kept.await {
            Ok(k) => {
                *cache.lock().unwrap_or_else(|p| p.into_inner()) = Some(k.clone());
                Some(k)
            }
            Err(e) => {
                tracing::warn!(error = %e, "no MCP state key: questions are asked as for other clients");
                None
            }
        }
    }
}
