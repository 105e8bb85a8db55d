//! An approval asked in the caller's own MCP client (MCP 2026-07-28, URL
//! mode): the client shows its person the approval's page, where whoever may
//! decide signs in: the approvers, and where the operator's policy says
//! `approvers = "client"`, the caller's own person. The URL carries no
//! capability (MCP forbids a pre-authenticated URL, and the agent may read
//! it), so the client and its model learn nothing that decides. The retry,
//! on any instance, names the approval in a sealed `requestState`, waits a
//! while for the decision, and runs the call once it is approved, exactly
//! as a repeated call with `approval: <id>` would.

use std::time::Duration;

use serde_json::{Value, json};

use super::{Approvals, Binding, Details, Receipt, canonical, sha256_hex};
use crate::clarify::{Clarification, Clarify, Status, approval_view, now_ms};
use crate::elicit::state::{Claims, StateKey};
use crate::elicit::{Elicit, Reply, input_required};
use crate::error::{ErrorCode, ToolError};
use crate::tool::CallContext;

/// `approvers = "client"`: the caller's own person may decide too.
pub const CLIENT: &str = "client";
/// `approvers = "channels"` (the default): the configured approvers only.
pub const CHANNELS: &str = "channels";

/// The key the approval is asked under in `inputRequests`, and what its
/// sealed state says it asked.
const KEY: &str = "approval";

/// An `approvers` setting as written (absent: the channels only).
pub fn client_approves(setting: Option<&str>) -> Result<bool, String> {
    match setting {
        None | Some(CHANNELS) => Ok(false),
        Some(CLIENT) => Ok(true),
        Some(other) => Err(format!(
            "approvers {other:?} is unknown (\"{CHANNELS}\" or \"{CLIENT}\")"
        )),
    }
}

/// What a gated call does next.
#[derive(Debug)]
pub enum Gated {
    /// Run it, under this approval.
    Run(Receipt),
    /// Answer the client with this `input_required` value: its person is
    /// sent to the approval's page.
    Ask(Value),
}

/// The caller's MCP client, where its person can be sent to an approval's
/// page, and the call it is about.
pub struct InClient {
    elicit: Elicit,
    key: StateKey,
    caller: String,
    args: String,
    client_approves: bool,
    /// When the call's transport stops waiting (API Gateway's limit).
    deadline: Option<crate::clock::Instant>,
}

impl InClient {
    /// `ctx`'s client, when it opens links and this deployment seals
    /// states; `args` are the call's arguments as sent, and
    /// `client_approves` the target's policy. A retry whose state this
    /// instance cannot open is refused: asking anew would lose the wait.
    pub async fn of(
        clarify: &Clarify,
        ctx: &CallContext,
        args: &Value,
        client_approves: bool,
    ) -> Result<Option<Self>, ToolError> {
        // A retry is taken whatever it declares now: asking anew would
        // lose the approval it waits on.
        let Some(elicit) = ctx.elicit.as_ref().filter(|e| e.url || e.state.is_some()) else {
            return Ok(None);
        };
        if !clarify.seals_states() {
            return Ok(None);
        }
        let Some(key) = clarify.state_key().await else {
            if elicit.state.is_some() {
                return Err(ToolError::new(
                    ErrorCode::Unavailable,
                    crate::elicit::STATE_UNREADABLE,
                ));
            }
            return Ok(None);
        };
        Ok(Some(Self {
            elicit: elicit.clone(),
            key,
            caller: ctx.caller.clone().unwrap_or_default(),
            args: sha256_hex(&canonical(args)),
            client_approves,
            deadline: ctx.deadline,
        }))
    }

    /// The retry's `requestState`, if this call is one.
    pub(super) fn state(&self) -> Option<&str> {
        self.elicit.state.as_deref()
    }

    /// How long a retry may wait for a decision.
    fn link_wait(&self) -> Duration {
        crate::elicit::link_wait(self.deadline)
    }

    /// The binding an approval asked here carries: asked through MCP, and
    /// who may decide it.
    fn bind(&self, binding: &Binding) -> Binding {
        Binding {
            via: Some("mcp".into()),
            client_approves: self.client_approves,
            ..binding.clone()
        }
    }

    /// The input request sending the person to approval `c`'s page.
    fn ask(&self, approvals: &Approvals, binding: &Binding, c: &Clarification) -> Value {
        let state = self.key.seal(&Claims {
            tool: binding.tool.clone(),
            caller: self.caller.clone(),
            args: self.args.clone(),
            subject: c.id.clone(),
            asked: KEY.into(),
            exp: c.expires_at,
        });
        let who = if self.client_approves {
            "You may decide it yourself on its page (sign in there as yourself); an approver may too."
        } else {
            "An approver decides it: this deployment's policy does not let the caller's own person approve it. Give the page's link to an approver; once they decide, the call goes on."
        };
        let url = approval_view::inbox_url(&approvals.clarify.base_url(), &c.id);
        let params = json!({
            "mode": "url",
            "message": format!("Approval needed: {}. {who}", c.question),
            "url": url,
        });
        input_required(vec![(KEY, params)], state)
    }
}

impl Approvals {
    /// The gate for a call from `client`: asks approvers as
    /// [`Self::request`] does, but without waiting (the person needs the
    /// link first), and a pending approval is answered with the client's
    /// input request rather than `approval_required`; its retry
    /// ([`Self::resume`]) waits for the decision and uses the approval.
    pub(super) async fn request_in_client(
        &self,
        client: &InClient,
        binding: &Binding,
        arg: &str,
        details: Details,
    ) -> Result<Gated, ToolError> {
        let binding = client.bind(binding);
        match self.ask(&binding, details, Duration::ZERO).await? {
            super::Asked::Decided(c) => self.redeem(&c.id, &binding, arg).await.map(Gated::Run),
            super::Asked::Pending(c, _) => Ok(Gated::Ask(client.ask(self, &binding, &c))),
        }
    }

    /// The client's retry with `state`: the approval it names, decided in
    /// the meantime (or within [`crate::elicit::LINK_WAIT`] once the person opened its
    /// page), is used; still pending, the person is asked again. Dismissed
    /// or declined, nothing runs: the call answers `approval_required`
    /// while the approval waits for approvers, else says where it stands.
    pub(super) async fn resume(
        &self,
        client: &InClient,
        state: &str,
        binding: &Binding,
        arg: &str,
    ) -> Result<Gated, ToolError> {
        let claims =
            client
                .key
                .open(state, &binding.tool, &client.caller, &client.args, now_ms())?;
        if claims.asked != KEY {
            return Err(ToolError::invalid_input(
                "\"requestState\" was issued for another call: send the arguments of the call that got it",
            ));
        }
        let id = claims.subject;
        let binding = client.bind(binding);
        let reply = client.elicit.response(KEY).and_then(Reply::parse);
        let c = match reply {
            Some(Reply::Accept(_)) => self.clarify.wait(&id, client.link_wait()).await?,
            _ => self.clarify.get(&id).await?,
        };
        let Some(c) = c else {
            return Err(super::refused(format!("approval {id:?} does not exist")));
        };
        let pending = c.status_at(now_ms()) == Status::Pending;
        match reply {
            Some(Reply::Decline | Reply::Cancel) => Err(self.not_run(&id, &binding, arg).await),
            _ if pending && client.elicit.url => Ok(Gated::Ask(client.ask(self, &binding, &c))),
            // Decided (or, for a client that no longer opens links, still
            // pending: `approval_required`).
            _ => self.redeem(&id, &binding, arg).await.map(Gated::Run),
        }
    }

    /// Why a call whose person declined or dismissed the page did not run:
    /// `approval_required` while approval `id` waits for approvers; once
    /// decided, where it stands.
    async fn not_run(&self, id: &str, binding: &Binding, arg: &str) -> ToolError {
        let (c, row) = match (self.clarify.get(id).await, self.clarify.approval(id).await) {
            (Ok(Some(c)), Ok(Some(row))) => (c, row),
            (Err(e), _) | (_, Err(e)) => return e,
            _ => return super::refused(format!("approval {id:?} does not exist")),
        };
        let status = approval_view::status(&c, &row, now_ms());
        if status == "pending" {
            // As any client is told: the repeated call may name it later.
            let why = serde_json::from_str::<Details>(&row.details)
                .map(|d| d.why)
                .unwrap_or_default();
            return super::required(&c, binding, &why, arg);
        }
        super::refused(format!(
            "The person at the MCP client did not go on with approval {id}, so nothing ran; it is {status}: a call with the same arguments and \"{arg}\": \"{id}\" uses it if it was approved"
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_setting_is_one_of_two_words() {
        assert_eq!(client_approves(None), Ok(false));
        assert_eq!(client_approves(Some("channels")), Ok(false));
        assert_eq!(client_approves(Some("client")), Ok(true));
        let e = client_approves(Some("anyone")).unwrap_err();
        assert_eq!(
            e,
            "approvers \"anyone\" is unknown (\"channels\" or \"client\")"
        );
    }
}
