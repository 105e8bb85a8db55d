//! `[approvals]` and `TOOLGATE_APPROVER*` (docs/approvals.md, "Who can approve"): who
//! may decide approvals. Approvers are identities of their own, never
//! callers: a token in both lists stops start-up (checked in `Config`).

use serde::Deserialize;

use super::ConfigError;
use super::env::Env;
use super::tokens::{self, FileToken, NamedToken};

/// The JWT claim that lists a user's groups unless told otherwise.
pub const DEFAULT_JWT_CLAIM: &str = "cognito:groups";

/// Who may decide approvals.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApprovalsConfig {
    /// Approvers' bearer tokens (`[[approvals.approvers]]`, and
    /// `TOOLGATE_APPROVER_TOKEN` as one named `approver`); each is the
    /// identity `token:<name>`.
    pub approvers: Vec<NamedToken>,
    /// Whoever holds a channel's capability link may decide
    /// (`TOOLGATE_APPROVALS_LINK_HOLDER`); off by default.
    pub link_holder: bool,
    /// A JWT whose `jwt_claim` holds this group is an approver, `jwt:<sub>`
    /// (`TOOLGATE_APPROVERS_JWT_GROUP`).
    pub jwt_group: Option<String>,
    /// The claim that lists the JWT's groups (`TOOLGATE_APPROVERS_JWT_CLAIM`).
    pub jwt_claim: String,
    /// The app clients people sign in with (`TOOLGATE_APPROVERS_JWT_AUDIENCE`,
    /// the template's `ApproversJwtAudience`): a JWT issued to one of them
    /// (`aud`, or an access token's `client_id`) is a person's, never an
    /// agent's.
    pub jwt_audience: Vec<String>,
    /// IAM user ARNs that are approvers, `iam:<arn>`
    /// (`TOOLGATE_APPROVERS_IAM`, comma-separated).
    pub iam_approvers: Vec<String>,
    /// Slack user ids allowed to decide from Slack, or `*` for anyone in a
    /// workspace whose signed payloads arrive (`TOOLGATE_APPROVERS_SLACK_USERS`).
    pub slack_users: Vec<String>,
    /// The Slack app's signing secret, which proves a click came from
    /// Slack (`TOOLGATE_SLACK_SIGNING_SECRET`, or on AWS the SSM
    /// SecureString `TOOLGATE_SLACK_SIGNING_SECRET_PARAMETER` names).
    pub slack_signing_secret: Option<super::notify::Secret>,
}

impl Default for ApprovalsConfig {
    fn default() -> Self {
        Self {
            approvers: Vec::new(),
            link_holder: false,
            jwt_group: None,
            jwt_claim: DEFAULT_JWT_CLAIM.into(),
            jwt_audience: Vec::new(),
            iam_approvers: Vec::new(),
            slack_users: Vec::new(),
            slack_signing_secret: None,
        }
    }
}

/// `[approvals]` as written.
#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub(super) struct FileApprovals {
    #[serde(default)]
    approvers: Vec<FileToken>,
    link_holder: Option<bool>,
    jwt_group: Option<String>,
    jwt_claim: Option<String>,
    jwt_audience: Option<Vec<String>>,
    iam_approvers: Option<Vec<String>>,
    slack_users: Option<Vec<String>>,
}

const LIST: &str = "[[approvals.approvers]]";

/// The name `TOOLGATE_APPROVER_TOKEN`'s approver goes by.
pub const ENV_APPROVER: &str = "approver";

/// `arn:<partition>:iam::<12 digits>:user/<path and name>`: a user, who is
/// one person. An assumed role's ARN names a session its assumer chooses.
fn iam_user_arn(a: &str) -> bool {
    let parts: Vec<&str> = a.splitn(6, ':').collect();
    matches!(parts.as_slice(), ["arn", partition, "iam", "", account, resource]
        if partition.starts_with("aws")
            && account.len() == 12
            && account.bytes().all(|b| b.is_ascii_digit())
            && resource.strip_prefix("user/").is_some_and(|n| !n.is_empty() && !n.contains(char::is_whitespace)))
}

impl ApprovalsConfig {
    /// The file's table, then the environment, checked.
    pub(super) fn load(file: FileApprovals, env: Env<'_>) -> Result<Self, ConfigError> {
        let mut a = Self {
            approvers: tokens::load(LIST, file.approvers, env)?,
            link_holder: file.link_holder.unwrap_or(false),
            jwt_group: file.jwt_group,
            jwt_claim: file.jwt_claim.unwrap_or_else(|| DEFAULT_JWT_CLAIM.into()),
            jwt_audience: file.jwt_audience.unwrap_or_default(),
            iam_approvers: file.iam_approvers.unwrap_or_default(),
            slack_users: file.slack_users.unwrap_or_default(),
            slack_signing_secret: super::notify::secret_from_env(
                env,
                "TOOLGATE_SLACK_SIGNING_SECRET",
                "TOOLGATE_SLACK_SIGNING_SECRET_PARAMETER",
            )
            .map_err(|reason| ConfigError::BadNotify {
                channel: "Slack app".into(),
                reason,
            })?,
        };
        if let Some(t) = env.text("TOOLGATE_APPROVER_TOKEN") {
            tokens::check_token("TOOLGATE_APPROVER_TOKEN", "", &t)?;
            a.approvers.push(NamedToken {
                name: ENV_APPROVER.into(),
                token: t,
            });
        }
        tokens::check_unique(LIST, &a.approvers)?;
        if let Some(b) = env.flag("TOOLGATE_APPROVALS_LINK_HOLDER")? {
            a.link_holder = b;
        }
        if let Some(v) = env.text("TOOLGATE_APPROVERS_JWT_GROUP") {
            a.jwt_group = Some(v);
        }
        if let Some(v) = env.text("TOOLGATE_APPROVERS_JWT_CLAIM") {
            a.jwt_claim = v;
        }
        if let Some(v) = env.list("TOOLGATE_APPROVERS_JWT_AUDIENCE") {
            a.jwt_audience = v;
        }
        if let Some(v) = env.list("TOOLGATE_APPROVERS_IAM") {
            a.iam_approvers = v;
        }
        if let Some(v) = env.list("TOOLGATE_APPROVERS_SLACK_USERS") {
            a.slack_users = v;
        }
        a.validate()?;
        Ok(a)
    }

    fn validate(&self) -> Result<(), ConfigError> {
        let blank = |v: &str| v.trim().is_empty() || v.chars().any(char::is_whitespace);
        if let Some(g) = &self.jwt_group
            && blank(g)
        {
            return Err(ConfigError::BadValue {
                name: "approvals jwt_group",
                what: "a group name without spaces",
                value: g.clone(),
            });
        }
        if blank(&self.jwt_claim) {
            return Err(ConfigError::BadValue {
                name: "approvals jwt_claim",
                what: "a claim name without spaces",
                value: self.jwt_claim.clone(),
            });
        }
        if let Some(arn) = self.iam_approvers.iter().find(|a| !iam_user_arn(a)) {
            return Err(ConfigError::BadValue {
                name: "approvals iam_approvers",
                what: "IAM user ARNs (arn:aws:iam::123456789012:user/alice): not roles, whose sessions anyone allowed to assume the role can name",
                value: arn.clone(),
            });
        }
        let slack_id = |u: &str| {
            u == "*"
                || ((2..=32).contains(&u.len())
                    && u.bytes()
                        .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit()))
        };
        if let Some(u) = self.slack_users.iter().find(|u| !slack_id(u)) {
            return Err(ConfigError::BadValue {
                name: "approvals slack_users",
                what: "Slack user ids (U012ABCDEF) or *",
                value: u.clone(),
            });
        }
        Ok(())
    }
}
