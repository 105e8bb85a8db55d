//! Approval gates (README, "Approvals and notifications"): a call a policy
//! marks as needing approval does not run. It becomes a clarification
//! ("Run `…` on web-1?", Approve / Reject) bound to exactly what would run
//! (tool, server, the command's SHA-256, the server's pinned host key, the
//! caller), and answers `approval_required`. The repeated call with
//! `approval: <id>` runs only if that clarification was answered Approve,
//! has not expired, has not been used, and its binding matches the call
//! exactly; using it is one conditional write, so it runs once.

use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::json;
use sha2::{Digest, Sha256};

use super::{Clarification, Clarify, Status, now_ms, rfc3339, valid_id};
use crate::error::{ErrorCode, ToolError};

/// The choices of an approval, in this order: index 0 approves.
pub const OPTIONS: [&str; 2] = ["Approve", "Reject"];

/// What approving allows.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Binding {
    /// The tool (`ssh_run`).
    pub tool: String,
    /// The server (or cloud account) it runs on.
    pub server: String,
    /// Hex SHA-256 of the exact command.
    pub command_sha256: String,
    /// The server's pinned host-key fingerprint when approval was asked.
    pub host_key: String,
    /// Who asked, when the call had an identity; another caller cannot
    /// use the approval.
    pub caller: Option<String>,
}

/// The proof an approved call carries into its audit line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Receipt {
    /// The approval's (clarification's) id.
    pub id: String,
    /// Who approved: the answer page takes no login, so whoever held the
    /// link.
    pub approver: &'static str,
    /// When, RFC 3339.
    pub approved_at: String,
    /// As bound.
    pub command_sha256: String,
    /// As bound.
    pub host_key: String,
}

/// Hex SHA-256 of `text`.
pub fn sha256_hex(text: &str) -> String {
    Sha256::digest(text.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

fn refused(why: String) -> ToolError {
    ToolError::new(ErrorCode::Forbidden, why)
}

/// `approval_required`, carrying the pending approval.
fn required(c: &Clarification, base_url: &str, why: &str) -> ToolError {
    let view = c.view(now_ms(), base_url);
    ToolError::new(
        ErrorCode::ApprovalRequired,
        format!(
            "This call needs a person's approval ({why}). Approval {} waits at {}; \
             once it is approved, call again with the same arguments and \"approval\": \"{}\" \
             (until {}).",
            c.id,
            view["answer_url"].as_str().unwrap_or_default(),
            c.id,
            view["expires_at"].as_str().unwrap_or_default()
        ),
    )
    .with_detail(
        "approval",
        json!({
            "id": c.id,
            "status": view["status"],
            "answer_url": view["answer_url"],
            "expires_at": view["expires_at"],
        }),
    )
}

impl Clarify {
    /// Asks a person to approve `binding` with `question`, and waits up to
    /// `wait` (at most 25 s) for the answer. `Ok` (the approval used) when
    /// it was approved in that time; else `approval_required`, or the
    /// refusal if a person rejected it.
    pub async fn request_approval(
        &self,
        binding: &Binding,
        question: String,
        why: &str,
        wait: Duration,
    ) -> Result<Receipt, ToolError> {
        let c = self
            .ask(question, OPTIONS.map(String::from).to_vec(), None)
            .await?;
        let json =
            serde_json::to_string(binding).map_err(|e| ToolError::internal(e.to_string()))?;
        self.store
            .bind(&c.id, &json)
            .await
            .map_err(Self::store_error)?;
        if !wait.is_zero() {
            let waited = self
                .wait(&c.id, wait.min(Duration::from_secs(super::MAX_WAIT_SECS)))
                .await?;
            if waited.is_some_and(|w| w.status_at(now_ms()) != Status::Pending) {
                return self.redeem(&c.id, binding).await;
            }
        }
        Err(required(&c, &self.base_url(), why))
    }

    /// The gate: a call that names approval `id` uses it ([`Self::redeem`]);
    /// one that names none asks a person, with the question and the reason
    /// `ask` gives, and waits up to `wait` ([`Self::request_approval`]).
    pub async fn gate(
        &self,
        binding: &Binding,
        id: Option<&str>,
        ask: impl FnOnce() -> (String, String),
        wait: Duration,
    ) -> Result<Receipt, ToolError> {
        match id {
            Some(id) => self.redeem(id, binding).await,
            None => {
                let (question, why) = ask();
                self.request_approval(binding, question, &why, wait).await
            }
        }
    }

    /// Uses approval `id` for a call bound as `want`: `Ok` only if it was
    /// approved, is unexpired and unused, and matches exactly; it is then
    /// used. Anything else is refused with the reason (`approval_required`
    /// while a person has not answered yet).
    pub async fn redeem(&self, id: &str, want: &Binding) -> Result<Receipt, ToolError> {
        let not_found = || refused(format!("approval {id:?} does not exist"));
        if !valid_id(id) {
            return Err(not_found());
        }
        let c = self.get(id).await?.ok_or_else(not_found)?;
        let (json, used) = self
            .store
            .binding(id)
            .await
            .map_err(Self::store_error)?
            .ok_or_else(|| refused(format!("clarification {id} is not an approval")))?;
        let have: Binding = serde_json::from_str(&json)
            .map_err(|e| ToolError::internal(format!("approval {id} is unreadable: {e}")))?;
        if have.tool != want.tool {
            return Err(refused(format!(
                "approval {id} is for {}, not {}",
                have.tool, want.tool
            )));
        }
        if have.server != want.server {
            return Err(refused(format!(
                "approval {id} is for server {:?}, not {:?}",
                have.server, want.server
            )));
        }
        if have.command_sha256 != want.command_sha256 {
            return Err(refused(format!(
                "approval {id} is for another command (SHA-256 {}…): the command must be exactly the approved one",
                &have.command_sha256[..12.min(have.command_sha256.len())]
            )));
        }
        if have.host_key != want.host_key {
            return Err(refused(format!(
                "the host key pinned for {:?} changed since approval {id} (approved for {}, now {})",
                want.server, have.host_key, want.host_key
            )));
        }
        if have.caller != want.caller {
            return Err(refused(format!(
                "approval {id} was asked for by another caller"
            )));
        }
        let now = now_ms();
        match c.status_at(now) {
            Status::Pending => {
                return Err(required(&c, &self.base_url(), "no one has answered yet"));
            }
            Status::Expired => return Err(refused(format!("approval {id} expired unanswered"))),
            Status::Cancelled => return Err(refused(format!("approval {id} was withdrawn"))),
            Status::Answered if c.choice != Some(0) => {
                return Err(refused(format!(
                    "approval {id} was not approved (the answer was {:?})",
                    c.answer.as_deref().unwrap_or_default()
                )));
            }
            Status::Answered => {}
        }
        if now >= c.expires_at {
            return Err(refused(format!(
                "approval {id} expired at {}",
                rfc3339(c.expires_at)
            )));
        }
        if used.is_some()
            || !self
                .store
                .consume(id, now)
                .await
                .map_err(Self::store_error)?
        {
            return Err(refused(format!("approval {id} has already been used")));
        }
        Ok(Receipt {
            id: id.to_owned(),
            approver: "link holder",
            approved_at: c.settled_at.map(rfc3339).unwrap_or_default(),
            command_sha256: have.command_sha256,
            host_key: have.host_key,
        })
    }
}

#[cfg(test)]
mod tests {
    #[cfg(feature = "native")]
    use std::sync::Arc;

    use super::*;

    /// A clarify service on a SQLite file of its own (`test`), and an
    /// approved approval bound to `caller`.
    #[cfg(feature = "native")]
    async fn approved(test: &str, caller: Option<&str>) -> (Arc<Clarify>, String, Binding) {
        let dir =
            std::env::temp_dir().join(format!("tg-approvals-unit-{}-{test}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let store = super::super::sqlite::SqliteStore::open(&dir.join("c.db")).unwrap();
        let clarify = Arc::new(Clarify::new(
            Arc::new(store),
            None,
            "http://127.0.0.1:1".into(),
            Duration::from_secs(60),
        ));
        let binding = Binding {
            tool: "ssh_run".into(),
            server: "web-1".into(),
            command_sha256: sha256_hex("systemctl restart nginx"),
            host_key: "SHA256:abc".into(),
            caller: caller.map(String::from),
        };
        let e = clarify
            .request_approval(&binding, "Run it?".into(), "a test", Duration::ZERO)
            .await
            .unwrap_err();
        assert_eq!(e.code, ErrorCode::ApprovalRequired, "{}", e.message);
        let id = e.details.as_ref().unwrap()["approval"]["id"]
            .as_str()
            .unwrap()
            .to_owned();
        clarify
            .answer(&id, OPTIONS[0].into(), Some(0))
            .await
            .unwrap()
            .unwrap();
        (clarify, id, binding)
    }

    #[cfg(feature = "native")]
    #[tokio::test]
    async fn an_approval_is_the_callers_own() {
        let (clarify, id, binding) = approved("caller", Some("arn:aws:iam::1:user/alice")).await;
        for other in [Some("arn:aws:iam::1:user/bob"), None] {
            let want = Binding {
                caller: other.map(String::from),
                ..binding.clone()
            };
            let e = clarify.redeem(&id, &want).await.unwrap_err();
            assert_eq!(e.code, ErrorCode::Forbidden);
            assert!(e.message.contains("another caller"), "{}", e.message);
        }
        // Refusals do not use it up: its own caller still can, once.
        let receipt = clarify.redeem(&id, &binding).await.unwrap();
        assert_eq!(receipt.id, id);
    }

    #[cfg(feature = "native")]
    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn racing_uses_of_one_approval_run_once() {
        let (clarify, id, binding) = approved("race", None).await;
        let tries: Vec<_> = (0..16)
            .map(|_| {
                let (clarify, id, binding) = (clarify.clone(), id.clone(), binding.clone());
                tokio::spawn(async move { clarify.redeem(&id, &binding).await })
            })
            .collect();
        let mut ran = 0;
        for t in tries {
            match t.await.unwrap() {
                Ok(_) => ran += 1,
                Err(e) => assert!(e.message.contains("already been used"), "{}", e.message),
            }
        }
        assert_eq!(ran, 1, "sixteen racing uses of one approval");
    }

    #[test]
    fn the_command_hash_is_sha256() {
        // printf %s 'systemctl restart nginx' | sha256sum
        assert_eq!(
            sha256_hex("systemctl restart nginx"),
            "af72e7d42dc52c5e6f1871d2a03807f14cf40683321425bf1388c7d8952928ae"
        );
    }
}
