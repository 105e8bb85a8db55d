//! A script's calls against its journal, and the stop where one waits for
//! a person: an approval a gate asked for (`approval_required`), or an
//! answer a tool left pending (clarify's question, [`Tool::waits_on`]).
//! Nothing of the script runs past that call; a resume runs it again and
//! goes on from there.
//!
//! [`Tool::waits_on`]: crate::tool::Tool::waits_on

use std::sync::MutexGuard;

use serde_json::{Value, json};

use super::CodeHost;
use super::journal::{Entry, Journal, On, Replay, Step, Wait, args_hash};
use crate::error::{ErrorCode, ToolError};
use crate::tool::CallContext;

/// What the script's request gets.
pub(super) enum Reply {
    /// This reply (`{"ok": …}` or `{"error": …}`).
    Send(Value),
    /// Nothing: the script is stopped.
    Halt,
}

/// Why the script was stopped.
#[derive(Debug, Clone)]
pub enum Halt {
    /// A call waits for a person.
    Waits(Wait),
    /// A resumed script left its journal's path (the message says where).
    Diverged(String),
}

/// The script's calls so far, and its replay.
#[derive(Debug, Default)]
pub(super) struct Book {
    replay: Replay,
    made: Vec<Entry>,
    /// What `made` holds, about, as stored.
    bytes: usize,
    /// `made` grew past what a journal may hold: the script can no longer
    /// stop to wait (it could not be resumed), and nothing more is kept.
    full: bool,
    halt: Option<Halt>,
    /// The journal it was resumed from was spent before its waited call
    /// went on ([`super::SpendFirst`]).
    spent: bool,
}

impl Book {
    pub(super) fn resuming(journal: Journal) -> Self {
        Self {
            replay: Replay::of(journal),
            ..Self::default()
        }
    }
}

/// How a script's calls ended, for python.execute's answer.
#[derive(Debug)]
pub struct Ending {
    /// Why it was stopped, if it was.
    pub halt: Option<Halt>,
    /// Its answered calls, in order (a new journal's).
    pub made: Vec<Entry>,
    /// The script's seed.
    pub seed: u128,
    /// A resumed script ended before the call it waited on: it took
    /// another path (the message says so).
    pub unfinished: Option<String>,
    /// The journal it was resumed from is spent: its waited call went on
    /// (or was about to).
    pub spent: bool,
}

impl Ending {
    /// The journal of a script stopped to wait, if it was.
    pub fn journal(&self, code: &str, files: &Value) -> Option<Journal> {
        match &self.halt {
            Some(Halt::Waits(w)) => Some(Journal::new(
                code,
                files,
                self.seed,
                self.made.clone(),
                w.clone(),
            )),
            _ => None,
        }
    }
}

impl CodeHost<'_> {
    fn book(&self) -> MutexGuard<'_, Book> {
        // A poisoned lock is a panic elsewhere in this call; its book is
        // still whole (every change is one assignment).
        self.book.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// How the script's calls ended.
    pub fn end(&self) -> Ending {
        let mut b = self.book();
        Ending {
            halt: b.halt.take(),
            made: std::mem::take(&mut b.made),
            seed: self.seed,
            unfinished: b.replay.unfinished(),
            spent: b.spent,
        }
    }

    /// A call the script made, `name` with `args`: answered from the
    /// journal, gone on with, or run.
    pub(super) async fn made(&self, name: &str, args: Value, ctx: &CallContext) -> Reply {
        // An unknown name is kept as a hash: the script chose it, and its
        // size.
        let tool = match self.registry.get_for_script(name) {
            Ok(t) => t.spec().name.clone(),
            Err(_) => format!(
                "(unknown tool {})",
                &crate::approvals::sha256_hex(name)[..12]
            ),
        };
        let hash = args_hash(&args);
        let step = self.book().replay.step(&tool, &hash);
        match step {
            Step::Recorded(e) => {
                let answer = e.answer.clone();
                self.keep(e);
                Reply::Send(answer)
            }
            Step::Diverged(why) => self.halt(Halt::Diverged(why)),
            Step::Resume(w) => self.go_on(w, name, args, ctx).await,
            Step::Live => {
                let outcome = self.live(name, args, ctx).await;
                self.after(tool, hash, outcome)
            }
        }
    }

    fn halt(&self, why: Halt) -> Reply {
        self.book().halt = Some(why);
        Reply::Halt
    }

    /// The call's outcome goes to the script and into the journal, unless
    /// it waits for a person: then the script stops there.
    fn after(&self, tool: String, args: String, outcome: Result<Value, ToolError>) -> Reply {
        if self.can_wait
            && let Some(on) = self.waits(&tool, &outcome)
        {
            let wait = Wait { tool, args, on };
            // Only where its journal, with this wait, can be kept: one that
            // cannot be resumed would be a dead end.
            let size = serde_json::to_vec(&wait).map_or(usize::MAX, |v| v.len());
            let b = self.book();
            if !b.full && b.bytes.saturating_add(size) <= self.journal_cap {
                drop(b);
                return self.halt(Halt::Waits(wait));
            }
            drop(b);
            let Wait { tool, args, .. } = wait;
            return self.answer_as_is(tool, args, outcome);
        }
        self.answer_as_is(tool, args, outcome)
    }

    /// The call's outcome goes to the script, and into the journal.
    fn answer_as_is(&self, tool: String, args: String, outcome: Result<Value, ToolError>) -> Reply {
        let answer = match outcome {
            Ok(v) => json!({ "ok": v }),
            Err(e) => json!({ "error": e.body()["error"] }),
        };
        if self.can_wait {
            self.keep(Entry {
                tool,
                args,
                answer: answer.clone(),
            });
        }
        Reply::Send(answer)
    }

    /// Keeps an answered call for the journal, while it fits.
    fn keep(&self, e: Entry) {
        let size = crate::response_limit::json_len(&e.answer)
            .saturating_add(e.tool.len() + e.args.len() + 64);
        let mut b = self.book();
        if b.full || b.bytes.saturating_add(size) > self.journal_cap {
            b.full = true;
            b.made = Vec::new();
            return;
        }
        b.bytes += size;
        b.made.push(e);
    }

    /// What `outcome` waits for, if a person must act on it.
    fn waits(&self, tool: &str, outcome: &Result<Value, ToolError>) -> Option<On> {
        match outcome {
            Err(e) if e.code == ErrorCode::ApprovalRequired => {
                let body = e.body();
                let a = &body["error"]["approval"];
                Some(On::Approval {
                    id: a["id"].as_str()?.to_owned(),
                    argument: a["argument"].as_str()?.to_owned(),
                    shown: a.clone(),
                    message: e.message.clone(),
                })
            }
            Err(_) => None,
            Ok(v) => {
                let id = self.registry.get_for_script(tool).ok()?.waits_on(v)?;
                Some(On::Answer {
                    id,
                    shown: v.clone(),
                })
            }
        }
    }

    /// The call the script waited on, made again on resume: under its
    /// approval (which the gate redeems once, for exactly this call), or
    /// answered with what the person settled. Before it goes on, the
    /// journal is spent (nothing after it may ever run twice, whatever
    /// happens to this call); still undecided, it waits again.
    async fn go_on(&self, w: Wait, name: &str, mut args: Value, ctx: &CallContext) -> Reply {
        match &w.on {
            On::Approval { id, argument, .. } => {
                if let Value::Object(m) = &mut args {
                    m.insert(argument.clone(), json!(id));
                }
                if let Err(e) = self.spend_first().await {
                    return self.still_waits(w, &e);
                }
                let outcome = self.live(name, args, ctx).await;
                self.after(w.tool, w.args, outcome)
            }
            On::Answer { id, shown } => {
                let settled = match self.registry.get_for_script(&w.tool) {
                    Ok(t) => t.settled(id).await,
                    // The tool is gone (the configuration changed): the
                    // script hears it.
                    Err(e) => return self.answer_as_is(w.tool, w.args, Err(e)),
                };
                match settled {
                    Ok(None) => {
                        let pending = Ok(shown.clone());
                        self.after(w.tool, w.args, pending)
                    }
                    Ok(Some(v)) => {
                        if let Err(e) = self.spend_first().await {
                            return self.still_waits(w, &e);
                        }
                        self.after(w.tool, w.args, Ok(v))
                    }
                    // The store failed: it still waits (the answer is not
                    // lost), and the resume can be tried again.
                    Err(e) => self.still_waits(w, &e),
                }
            }
        }
    }

    /// Spends the journal this script was resumed from, before its waited
    /// call goes on.
    async fn spend_first(&self) -> Result<(), ToolError> {
        if let Some(spend) = self.spend_first {
            spend().await?;
            self.book().spent = true;
        }
        Ok(())
    }

    /// The waited call cannot go on now (a store failed): the script stops
    /// there again, its journal as it was.
    fn still_waits(&self, w: Wait, e: &ToolError) -> Reply {
        tracing::warn!(
            error = %crate::logging::field(&e.message),
            "a waiting script could not go on; it waits again"
        );
        self.halt(Halt::Waits(w))
    }
}
