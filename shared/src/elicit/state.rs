//! `requestState`: what a tool needs to take a retry, sealed so that a
//! client can neither read a changed one into being nor hand one to
//! another caller (MCP makes it attacker-controlled input). It is
//! HMAC-SHA256 over the claims, with the tool, the caller and the
//! arguments' hash bound in and an expiry; every instance sharing the key
//! can open it. Format: `ts1.<base64url claims JSON>.<base64url MAC>`.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use hmac::{Hmac, KeyInit, Mac};
use serde::{Deserialize, Serialize};
use sha2::Sha256;

use crate::error::{ErrorCode, ToolError};

const VERSION: &str = "ts1";

/// The key every instance of a deployment seals with.
#[derive(Clone)]
pub struct StateKey(Vec<u8>);

impl std::fmt::Debug for StateKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("StateKey(hidden)")
    }
}

/// What a sealed state says.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Claims {
    /// The tool that issued it.
    pub tool: String,
    /// Who called ("" when the call had no identity).
    pub caller: String,
    /// Hex SHA-256 of the call's arguments, canonical.
    pub args: String,
    /// What the tool waits on (a clarification's id).
    pub subject: String,
    /// How it asked: `form`, or `url` (whose reply carries no content).
    pub asked: String,
    /// When it stops being taken, Unix milliseconds.
    pub exp: i64,
}

impl StateKey {
    /// The shortest secret taken, in bytes.
    pub const MIN_SECRET: usize = 32;

    /// A key from a configured secret of at least [`Self::MIN_SECRET`] bytes.
    pub fn from_secret(secret: &[u8]) -> Result<Self, String> {
        if secret.len() < Self::MIN_SECRET {
            return Err(format!(
                "the MCP state key must be at least {} bytes, got {}",
                Self::MIN_SECRET,
                secret.len()
            ));
        }
        Ok(Self(secret.to_vec()))
    }

    fn mac(&self, body: &str) -> Hmac<Sha256> {
        let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(&self.0)
            .expect("HMAC takes a key of any length");
        mac.update(VERSION.as_bytes());
        mac.update(b".");
        mac.update(body.as_bytes());
        mac
    }

    /// `claims`, sealed.
    pub fn seal(&self, claims: &Claims) -> String {
        let body = B64.encode(serde_json::to_vec(claims).expect("claims serialize"));
        let tag = B64.encode(self.mac(&body).finalize().into_bytes());
        format!("{VERSION}.{body}.{tag}")
    }

    /// The claims of `sealed` if this key sealed it, unchanged, and it is
    /// for `tool`, `caller` and `args` and unexpired at `now_ms`; else the
    /// refusal a caller gets.
    pub fn open(
        &self,
        sealed: &str,
        tool: &str,
        caller: &str,
        args: &str,
        now_ms: i64,
    ) -> Result<Claims, ToolError> {
        let not_ours = || {
            ToolError::invalid_input(
                "\"requestState\" is not one this server issued, or it was changed: call again without it",
            )
        };
        let mut parts = sealed.splitn(3, '.');
        let (Some(VERSION), Some(body), Some(tag)) = (parts.next(), parts.next(), parts.next())
        else {
            return Err(not_ours());
        };
        let tag = B64.decode(tag).map_err(|_| not_ours())?;
        self.mac(body).verify_slice(&tag).map_err(|_| not_ours())?;
        let claims: Claims = B64
            .decode(body)
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok())
            .ok_or_else(not_ours)?;
        if claims.caller != caller {
            return Err(ToolError::new(
                ErrorCode::Forbidden,
                "\"requestState\" was issued to another caller",
            ));
        }
        if claims.tool != tool || claims.args != args {
            return Err(ToolError::invalid_input(
                "\"requestState\" was issued for another call: send the arguments of the call that got it",
            ));
        }
        if now_ms >= claims.exp {
            return Err(ToolError::new(
                ErrorCode::Expired,
                "\"requestState\" has expired: call again without it",
            ));
        }
        Ok(claims)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(b: u8) -> StateKey {
        StateKey::from_secret(&[b; 32]).unwrap()
    }

    fn claims() -> Claims {
        Claims {
            tool: "clarify".into(),
            caller: "token:agent".into(),
            args: "ab".repeat(32),
            subject: "0".repeat(40),
            asked: "form".into(),
            exp: 2_000,
        }
    }

    fn open(k: &StateKey, s: &str) -> Result<Claims, ToolError> {
        k.open(s, "clarify", "token:agent", &"ab".repeat(32), 1_000)
    }

    #[test]
    fn a_sealed_state_opens_only_as_issued() {
        let k = key(7);
        let sealed = k.seal(&claims());
        assert_eq!(open(&k, &sealed).unwrap(), claims());
        // Another deployment's key, a changed byte anywhere, a cut one.
        assert_eq!(
            open(&key(8), &sealed).unwrap_err().code,
            ErrorCode::InvalidInput
        );
        for at in [5, sealed.len() / 2, sealed.len() - 2] {
            let mut b = sealed.clone().into_bytes();
            b[at] = if b[at] == b'A' { b'B' } else { b'A' };
            let changed = String::from_utf8(b).unwrap();
            assert!(open(&k, &changed).is_err(), "{changed}");
        }
        assert!(open(&k, &sealed[..sealed.len() - 3]).is_err());
        assert!(open(&k, "").is_err());
        assert!(open(&k, "ts1..").is_err());
        // Claims re-sealed by hand without the key.
        let (head, _) = sealed.rsplit_once('.').unwrap();
        assert!(open(&k, &format!("{head}.AAAA")).is_err());
    }

    #[test]
    fn a_state_is_bound_to_its_caller_call_and_time() {
        let k = key(7);
        let sealed = k.seal(&claims());
        let e = k
            .open(&sealed, "clarify", "token:other", &"ab".repeat(32), 1_000)
            .unwrap_err();
        assert_eq!(e.code, ErrorCode::Forbidden);
        let e = k
            .open(&sealed, "clarify", "token:agent", &"cd".repeat(32), 1_000)
            .unwrap_err();
        assert_eq!(e.code, ErrorCode::InvalidInput);
        let e = k
            .open(&sealed, "ssh_run", "token:agent", &"ab".repeat(32), 1_000)
            .unwrap_err();
        assert_eq!(e.code, ErrorCode::InvalidInput);
        let e = k
            .open(&sealed, "clarify", "token:agent", &"ab".repeat(32), 2_000)
            .unwrap_err();
        assert_eq!(e.code, ErrorCode::Expired);
    }

    #[test]
    fn short_secrets_are_refused() {
        assert!(StateKey::from_secret(&[1; 31]).is_err());
        assert!(StateKey::from_secret(&[1; 32]).is_ok());
    }
}
