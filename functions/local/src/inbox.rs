//! `toolgate approvals …` and `toolgate clarifications …`: the operator's
//! inbox on the command line. Against a server (`--url`, or `TOOLGATE_URL`)
//! it signs in with an approver token (`TOOLGATE_APPROVER_TOKEN`, or
//! `--token-file`); without one it opens this machine's own store, as the
//! local operator (`local:<user>`): whoever can open the data folder (0700)
//! owns the server.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use clap::{Args, Subcommand};
use serde_json::{Value, json};
use toolgate_shared::approvals::Approvals;
use toolgate_shared::approvals::shown::{visible_plain, warning};
use toolgate_shared::config::Config;
use toolgate_shared::http::identity::Approver;

/// Where the inbox is and who signs in.
#[derive(Args, Clone)]
pub struct Target {
    /// A Toolgate server's base URL (else this machine's own store).
    #[arg(long, global = true, env = "TOOLGATE_URL")]
    url: Option<String>,
    /// A file holding the approver token (else TOOLGATE_APPROVER_TOKEN).
    #[arg(long, global = true)]
    token_file: Option<PathBuf>,
    /// Print JSON instead of text.
    #[arg(long, global = true)]
    json: bool,
}

/// `toolgate approvals …`.
#[derive(Subcommand, Clone)]
pub enum ApprovalsCmd {
    /// The approvals waiting for a decision (`--all`: every recent one).
    List {
        /// Every recent approval, not only pending ones.
        #[arg(long)]
        all: bool,
    },
    /// One approval, whole: every field made visible.
    Show {
        /// The approval's id.
        id: String,
    },
    /// Approve it (the caller may then run the call once).
    Approve {
        /// The approval's id.
        id: String,
    },
    /// Reject it.
    Reject {
        /// The approval's id.
        id: String,
    },
}

/// `toolgate clarifications …`.
#[derive(Subcommand, Clone)]
pub enum ClarificationsCmd {
    /// The questions waiting for an answer (`--all`: every recent one).
    List {
        /// Every recent question, not only pending ones.
        #[arg(long)]
        all: bool,
    },
    /// One question.
    Show {
        /// The clarification's id.
        id: String,
    },
    /// Answer it, in words or with `--choice N`.
    Answer {
        /// The clarification's id.
        id: String,
        /// The answer in your own words.
        text: Option<String>,
        /// The index of one of its options.
        #[arg(long)]
        choice: Option<u64>,
    },
    /// Withdraw it unanswered.
    Cancel {
        /// The clarification's id.
        id: String,
    },
}

impl Target {
    /// A server's inbox (`--url`), not this machine's.
    pub fn remote(&self) -> bool {
        self.url.is_some()
    }
}

/// The inbox, local or remote.
enum Inbox {
    /// This machine's store, as its operator.
    Local(Arc<Approvals>, Approver),
    /// A server, as an approver.
    Remote {
        url: String,
        token: String,
        client: reqwest::Client,
    },
}

fn fail(msg: &str) -> ExitCode {
    eprintln!("toolgate: {msg}");
    ExitCode::from(2)
}

/// The local operator's identity: the Unix user running the command, by
/// its user id (never `$USER`, which the caller sets).
fn operator() -> Approver {
    // SAFETY: geteuid has no preconditions and cannot fail.
    let uid = unsafe { libc::geteuid() };
    let user = user_name(uid).unwrap_or_else(|| format!("uid{uid}"));
    Approver {
        id: format!("local:{user}"),
        via: "cli",
        person: false,
    }
}

/// The name of user `uid` in the system's user database, if it has one.
fn user_name(uid: libc::uid_t) -> Option<String> {
    let mut buf = vec![0u8; 16 * 1024];
    // SAFETY: an all-zero passwd is a valid value for getpwuid_r to fill.
    let mut pwd: libc::passwd = unsafe { std::mem::zeroed() };
    let mut found: *mut libc::passwd = std::ptr::null_mut();
    // SAFETY: every pointer is valid for the call: `pwd` and `found` are
    // live locals, and `buf` is writable for its whole length.
    let rc = unsafe {
        libc::getpwuid_r(
            uid,
            &mut pwd,
            buf.as_mut_ptr().cast(),
            buf.len(),
            &mut found,
        )
    };
    if rc != 0 || found.is_null() || pwd.pw_name.is_null() {
        return None;
    }
    // SAFETY: on success pw_name points at a NUL-terminated string inside
    // `buf`, which is still alive.
    let name = unsafe { std::ffi::CStr::from_ptr(pwd.pw_name) };
    Some(name.to_string_lossy().into_owned())
}

/// `cfg` is this machine's config, needed only for its own store.
async fn open(cfg: Option<&Config>, t: &Target) -> Result<Inbox, String> {
    let Some(url) = &t.url else {
        let cfg = cfg.ok_or("no config to find this machine's store in")?;
        toolgate_shared::sqlite_file::keep_private(&cfg.data_dir);
        let approvals = toolgate_shared::toolset::Toolset::new()
            .with_backends(toolgate_aws::Aws::backends())
            .open_approvals(cfg)
            .await?;
        return Ok(Inbox::Local(approvals, operator()));
    };
    let token = match &t.token_file {
        Some(p) => std::fs::read_to_string(p)
            .map_err(|e| format!("cannot read {}: {e}", p.display()))?
            .trim()
            .to_owned(),
        None => std::env::var("TOOLGATE_APPROVER_TOKEN").map_err(|_| {
            "an approver token is needed for --url: set TOOLGATE_APPROVER_TOKEN or give --token-file"
                .to_owned()
        })?,
    };
    let client = reqwest::Client::builder()
        .timeout(std::time::Duration::from_secs(30))
        .build()
        .map_err(|e| e.to_string())?;
    Ok(Inbox::Remote {
        url: url.trim_end_matches('/').to_owned(),
        token,
        client,
    })
}

impl Inbox {
    /// A request to the server: its JSON, or the contract error's message.
    async fn http(&self, method: &str, path: &str, body: Option<Value>) -> Result<Value, String> {
        let Self::Remote { url, token, client } = self else {
            return Err("not a server".into());
        };
        let mut req = match method {
            "POST" => client.post(format!("{url}{path}")),
            _ => client.get(format!("{url}{path}")),
        }
        .bearer_auth(token);
        if let Some(b) = body {
            req = req.json(&b);
        }
        let res = req
            .send()
            .await
            .map_err(|e| format!("cannot reach {url}: {e}"))?;
        let status = res.status();
        let v: Value = res
            .json()
            .await
            .map_err(|e| format!("{url}{path} answered {status} without JSON: {e}"))?;
        if status.is_success() {
            Ok(v)
        } else {
            Err(format!(
                "{status}: {}",
                v["error"]["message"].as_str().unwrap_or("no message")
            ))
        }
    }
}

fn message(e: toolgate_shared::error::ToolError) -> String {
    e.message
}

/// Runs `toolgate approvals …`.
pub async fn approvals(cfg: Option<Config>, t: Target, cmd: ApprovalsCmd) -> ExitCode {
    let inbox = match open(cfg.as_ref(), &t).await {
        Ok(i) => i,
        Err(e) => return fail(&e),
    };
    let out = match (&inbox, &cmd) {
        (Inbox::Local(a, _), ApprovalsCmd::List { all }) => a
            .list(true, !all)
            .await
            .map(|l| json!({ "approvals": l }))
            .map_err(message),
        (Inbox::Remote { .. }, ApprovalsCmd::List { all }) => {
            let q = if *all { "?status=all" } else { "" };
            inbox.http("GET", &format!("/approvals{q}"), None).await
        }
        (Inbox::Local(a, _), ApprovalsCmd::Show { id }) => match a.view(id).await {
            Ok(Some(v)) => Ok(v),
            Ok(None) => Err("No such approval".into()),
            Err(e) => Err(e.message),
        },
        (Inbox::Remote { .. }, ApprovalsCmd::Show { id }) => {
            inbox.http("GET", &format!("/approvals/{id}"), None).await
        }
        (_, ApprovalsCmd::Approve { id } | ApprovalsCmd::Reject { id }) => {
            let approve = matches!(cmd, ApprovalsCmd::Approve { .. });
            match &inbox {
                Inbox::Local(a, who) => a.decide(id, approve, who).await.map_err(message),
                Inbox::Remote { .. } => {
                    let d = if approve { "approve" } else { "reject" };
                    inbox
                        .http(
                            "POST",
                            &format!("/approvals/{id}/decision"),
                            Some(json!({ "decision": d })),
                        )
                        .await
                }
            }
        }
    };
    print(out, t.json, |v| match &cmd {
        ApprovalsCmd::List { .. } => list_text(&v["approvals"], "No approval is waiting."),
        _ => approval_text(v),
    })
}

/// Runs `toolgate clarifications …`.
pub async fn clarifications(cfg: Option<Config>, t: Target, cmd: ClarificationsCmd) -> ExitCode {
    let inbox = match open(cfg.as_ref(), &t).await {
        Ok(i) => i,
        Err(e) => return fail(&e),
    };
    let out = match (&inbox, &cmd) {
        (Inbox::Local(a, _), ClarificationsCmd::List { all }) => a
            .list(false, !all)
            .await
            .map(|l| json!({ "clarifications": l }))
            .map_err(message),
        (Inbox::Remote { .. }, ClarificationsCmd::List { all }) => {
            let q = if *all { "?status=all" } else { "" };
            inbox
                .http("GET", &format!("/clarifications{q}"), None)
                .await
        }
        (Inbox::Local(a, _), ClarificationsCmd::Show { id }) => {
            let now = toolgate_shared::clarify::now_ms();
            match a.clarify().get(id).await {
                Ok(Some(c)) => Ok(c.view(now, &a.clarify().base_url())),
                Ok(None) => Err("No such clarification".into()),
                Err(e) => Err(e.message),
            }
        }
        (Inbox::Remote { .. }, ClarificationsCmd::Show { id }) => {
            inbox
                .http("GET", &format!("/clarifications/{id}"), None)
                .await
        }
        (_, ClarificationsCmd::Answer { id, text, choice }) => {
            let mut body = serde_json::Map::new();
            if let Some(t) = text {
                body.insert("answer".into(), json!(t));
            }
            if let Some(c) = choice {
                body.insert("choice".into(), json!(c));
            }
            if body.is_empty() {
                return fail("give the answer's text, or --choice N");
            }
            match &inbox {
                Inbox::Local(a, _) => local_answer(a, id, text.clone(), *choice).await,
                Inbox::Remote { .. } => {
                    inbox
                        .http(
                            "POST",
                            &format!("/clarifications/{id}/answer"),
                            Some(Value::Object(body)),
                        )
                        .await
                }
            }
        }
        (Inbox::Local(a, _), ClarificationsCmd::Cancel { id }) => {
            settled(a, a.clarify().cancel(id).await)
        }
        (Inbox::Remote { .. }, ClarificationsCmd::Cancel { id }) => {
            inbox
                .http(
                    "POST",
                    &format!("/clarifications/{id}/cancel"),
                    Some(json!({})),
                )
                .await
        }
    };
    print(out, t.json, |v| match &cmd {
        ClarificationsCmd::List { .. } => {
            list_text(&v["clarifications"], "No question is waiting.")
        }
        _ => question_text(v),
    })
}

/// Answers a question in this machine's store, with the HTTP route's rules.
async fn local_answer(
    a: &Approvals,
    id: &str,
    text: Option<String>,
    choice: Option<u64>,
) -> Result<Value, String> {
    let c = match a.clarify().get(id).await {
        Ok(Some(c)) => c,
        Ok(None) => return Err("No such clarification".into()),
        Err(e) => return Err(e.message),
    };
    let choice = match choice {
        Some(i) if (i as usize) < c.options.len() => Some(i as usize),
        Some(_) => {
            return Err(format!(
                "--choice must be an option's index, 0 to {}",
                c.options.len().saturating_sub(1)
            ));
        }
        None => None,
    };
    let text = match (text, choice) {
        (Some(t), Some(i)) if t != c.options[i] => {
            return Err(format!(
                "the text and --choice disagree: option {i} is {:?}",
                c.options[i]
            ));
        }
        (Some(t), _) => t,
        (None, Some(i)) => c.options[i].clone(),
        (None, None) => return Err("give the answer's text, or --choice N".into()),
    };
    settled(a, a.clarify().answer(id, text, choice).await)
}

fn settled(
    a: &Approvals,
    r: Result<
        Result<toolgate_shared::clarify::Clarification, toolgate_shared::clarify::Refusal>,
        toolgate_shared::error::ToolError,
    >,
) -> Result<Value, String> {
    match r {
        Ok(Ok(c)) => Ok(c.view(toolgate_shared::clarify::now_ms(), &a.clarify().base_url())),
        Ok(Err(r)) => Err(toolgate_shared::clarify::refusal_error(&r).message),
        Err(e) => Err(e.message),
    }
}

fn print(out: Result<Value, String>, as_json: bool, text: impl Fn(&Value) -> String) -> ExitCode {
    match out {
        Ok(v) if as_json => {
            crate::out::json(&v);
            ExitCode::SUCCESS
        }
        Ok(v) => {
            crate::out::print(&text(&v));
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("toolgate: {e}");
            ExitCode::from(1)
        }
    }
}

/// One line per entry: id, status, expiry, summary or question (made
/// visible: an agent wrote it).
fn list_text(items: &Value, none: &str) -> String {
    let items = items.as_array().cloned().unwrap_or_default();
    if items.is_empty() {
        return format!("{none}\n");
    }
    let mut out = String::new();
    for v in items {
        let what = v["summary"]
            .as_str()
            .or_else(|| v["question"].as_str())
            .unwrap_or_default();
        let (what, _) = visible_plain(what, 100);
        out.push_str(&format!(
            "{}  {:<9}  until {}  {what}\n",
            v["id"].as_str().unwrap_or_default(),
            v["status"].as_str().unwrap_or_default(),
            v["expires_at"].as_str().unwrap_or_default(),
        ));
    }
    out
}

/// An approval, every field whole and made visible.
fn approval_text(v: &Value) -> String {
    let mut out = format!(
        "Approval {}  ({})\n{}\n\n",
        v["id"].as_str().unwrap_or_default(),
        v["status"].as_str().unwrap_or_default(),
        visible_plain(v["summary"].as_str().unwrap_or_default(), usize::MAX).0,
    );
    for f in v["details"].as_array().into_iter().flatten() {
        let raw = f["text"].as_str().unwrap_or_default();
        let (text, _) = visible_plain(raw, usize::MAX);
        out.push_str(&format!(
            "{}:\n{}\n",
            f["label"].as_str().unwrap_or_default(),
            indent(&text)
        ));
        if let Some(w) = warning(raw) {
            out.push_str(&format!("    ! {w}\n"));
        }
        out.push('\n');
    }
    for (key, label) in [
        ("approver", "Decided by"),
        ("decided_at", "Decided at"),
        ("used_at", "Used at"),
        ("expires_at", "Open until"),
    ] {
        if let Some(s) = v[key].as_str() {
            out.push_str(&format!("{label}: {s}\n"));
        }
    }
    out
}

/// A question and where it stands.
fn question_text(v: &Value) -> String {
    let mut out = format!(
        "Clarification {}  ({})\n{}\n",
        v["id"].as_str().unwrap_or_default(),
        v["status"].as_str().unwrap_or_default(),
        indent(&visible_plain(v["question"].as_str().unwrap_or_default(), usize::MAX).0),
    );
    for (i, o) in v["options"].as_array().into_iter().flatten().enumerate() {
        out.push_str(&format!(
            "  [{i}] {}\n",
            visible_plain(o.as_str().unwrap_or_default(), 200).0
        ));
    }
    if let Some(a) = v["answer"].as_str() {
        out.push_str(&format!("Answer: {}\n", visible_plain(a, usize::MAX).0));
    }
    out
}

fn indent(text: &str) -> String {
    text.lines()
        .map(|l| format!("    {l}"))
        .collect::<Vec<_>>()
        .join("\n")
}
