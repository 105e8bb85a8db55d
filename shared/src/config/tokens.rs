//! Named bearer tokens: `[[server.tokens]]` (callers) and
//! `[[approvals.approvers]]` (approvers), each `{name, token | token_env}`,
//! and the checks every list of them passes.

use std::fmt;

use serde::Deserialize;
use sha2::{Digest, Sha256};

use super::ConfigError;
use super::env::Env;

/// The fewest characters a named token may have.
pub const MIN_TOKEN_CHARS: usize = 16;

/// A bearer token and the identity it stands for. `Debug` never shows the
/// token.
#[derive(Clone, PartialEq, Eq)]
pub struct NamedToken {
    /// Who holds it: `^[a-zA-Z0-9._@-]{1,64}$`.
    pub name: String,
    /// The secret sent as `Authorization: Bearer <token>`.
    pub token: String,
}

impl fmt::Debug for NamedToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NamedToken")
            .field("name", &self.name)
            .field("token", &"<redacted>")
            .finish()
    }
}

/// The caller name of the single token (`--token`, `TOOLGATE_TOKEN`,
/// `server.token`): `token-` and the first 12 hex digits of its SHA-256, so
/// that servers with different tokens are different callers, and the name
/// tells nothing useful about the token.
pub fn single_token_name(token: &str) -> String {
    let digest = Sha256::digest(token.as_bytes());
    let hex: String = digest.iter().take(6).map(|b| format!("{b:02x}")).collect();
    format!("token-{hex}")
}

/// One `{name, token | token_env}` table as written.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct FileToken {
    name: String,
    token: Option<String>,
    token_env: Option<String>,
}

fn bad(list: &str, name: &str, reason: impl Into<String>) -> ConfigError {
    ConfigError::BadToken {
        table: if name.is_empty() {
            list.to_owned()
        } else {
            format!("{list} {name:?}")
        },
        reason: reason.into(),
    }
}

fn valid_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"._@-".contains(&b))
}

/// A token that fits in a header and is long enough to not be guessed.
pub(super) fn check_token(list: &str, name: &str, token: &str) -> Result<(), ConfigError> {
    if !token.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(bad(
            list,
            name,
            "the token must be printable ASCII without spaces",
        ));
    }
    if token.len() < MIN_TOKEN_CHARS {
        return Err(bad(
            list,
            name,
            format!("the token must be at least {MIN_TOKEN_CHARS} characters"),
        ));
    }
    Ok(())
}

/// The tables of `list` (`[[server.tokens]]`), each read and checked.
pub(super) fn load(
    list: &str,
    file: Vec<FileToken>,
    env: Env<'_>,
) -> Result<Vec<NamedToken>, ConfigError> {
    file.into_iter()
        .map(|f| {
            if !valid_name(&f.name) {
                return Err(bad(
                    list,
                    &f.name,
                    "a name must match ^[a-zA-Z0-9._@-]{1,64}$",
                ));
            }
            let token = match (f.token, f.token_env) {
                (Some(t), None) => t,
                (None, Some(var)) => env.text(&var).ok_or_else(|| {
                    bad(
                        list,
                        &f.name,
                        format!("token_env names {var}, which is not set"),
                    )
                })?,
                (Some(_), Some(_)) => {
                    return Err(bad(list, &f.name, "give token or token_env, not both"));
                }
                (None, None) => return Err(bad(list, &f.name, "give token or token_env")),
            };
            check_token(list, &f.name, &token)?;
            Ok(NamedToken {
                name: f.name,
                token,
            })
        })
        .collect()
}

/// No name and no token twice in `tokens` (`list` names them in errors).
pub(super) fn check_unique(list: &str, tokens: &[NamedToken]) -> Result<(), ConfigError> {
    for (i, a) in tokens.iter().enumerate() {
        for b in &tokens[..i] {
            if a.name == b.name {
                return Err(bad(list, &a.name, "two entries have this name"));
            }
            if a.token == b.token {
                return Err(bad(
                    list,
                    &a.name,
                    format!("has the same token as {:?}: give each its own", b.name),
                ));
            }
        }
    }
    Ok(())
}

/// A token must not be both a caller's and an approver's: the requester
/// would then hold the means to approve.
pub(super) fn check_apart(
    callers: &[NamedToken],
    approvers: &[NamedToken],
) -> Result<(), ConfigError> {
    for c in callers {
        if let Some(a) = approvers.iter().find(|a| a.token == c.token) {
            return Err(ConfigError::BadToken {
                table: format!("approver {:?}", a.name),
                reason: format!(
                    "its token is also the token of caller {:?}: an approver needs a token no caller holds",
                    c.name
                ),
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_single_tokens_name_is_a_digest_and_debug_hides_tokens() {
        // SHA-256("abc") = ba7816bf8f01cfea…
        assert_eq!(single_token_name("abc"), "token-ba7816bf8f01");
        let t = NamedToken {
            name: "ci".into(),
            token: "very-secret-token-value".into(),
        };
        let shown = format!("{t:?}");
        assert!(
            shown.contains("ci") && !shown.contains("very-secret"),
            "{shown}"
        );
    }

    #[test]
    fn names() {
        for ok in ["a", "ci-bot", "alice@example.com", "x.y_z", &"n".repeat(64)] {
            assert!(valid_name(ok), "{ok}");
        }
        for no in ["", "a b", "ä", "a/b", &"n".repeat(65), "a:b"] {
            assert!(!valid_name(no), "{no}");
        }
    }
}
