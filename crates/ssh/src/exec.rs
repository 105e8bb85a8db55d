//! Runs one command on an open session channel: the remote `timeout -k`
//! wrapper, bounded streaming of stdout and stderr, and the local deadline.

use std::time::{Duration, Instant};

use russh::{ChannelMsg, Sig};

use toolgate_shared::truncate::OwnedHeadTail;

/// Seconds between the remote `timeout`'s TERM and its KILL.
pub const KILL_AFTER_SECS: u64 = 2;
/// Local slack past the remote deadline before we stop waiting.
const LOCAL_SLACK: Duration = Duration::from_secs(1);
/// How long past its timeout a command may still hold the call: the
/// remote KILL, then the local slack. A runtime deadline keeps it back.
pub const STOP_SLACK: Duration = Duration::from_secs(KILL_AFTER_SECS).saturating_add(LOCAL_SLACK);
/// How long a flooding command has to die after TERM before we close.
const FLOOD_DRAIN: Duration = Duration::from_secs(5);

/// How one remote command ended, with its output.
#[derive(Debug)]
pub struct Outcome {
    /// The command's stdout, its head and tail kept past `truncate::LIMIT`
    /// characters.
    pub stdout: String,
    /// Its stderr, cut the same way, with Toolgate's notes (a timeout, a flood)
    /// appended.
    pub stderr: String,
    /// The remote exit status; 128+N for a signal; -1 on a timeout or when
    /// the server reported none.
    pub exit_code: i64,
    /// Killed at its deadline, by the remote `timeout` or by us.
    pub timed_out: bool,
    /// A stream lost its middle, or the output passed the byte cap.
    pub truncated: bool,
    /// Bytes received on stdout and stderr together.
    pub bytes_out: u64,
    /// Stopped because the output passed the byte cap.
    pub flooded: bool,
}

/// Quotes `s` for a POSIX shell.
pub fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// The command line sent to sshd (run by the user's login shell): `timeout`
/// (coreutils or busybox) puts the command in its own process group, sends
/// TERM to the whole group at the deadline and KILL `KILL_AFTER_SECS` later,
/// so the remote command dies even if our connection does.
pub fn wrap(command: &str, timeout_secs: u64) -> String {
    format!(
        "exec timeout -k {KILL_AFTER_SECS} {timeout_secs} \"${{SHELL:-/bin/sh}}\" -c {}",
        shell_quote(command)
    )
}

/// A stream decoded as UTF-8 across packet boundaries, kept head-and-tail.
struct Stream {
    pending: Vec<u8>,
    text: OwnedHeadTail,
}

impl Stream {
    fn new() -> Self {
        Self {
            pending: Vec::new(),
            text: OwnedHeadTail::default(),
        }
    }

    fn push(&mut self, bytes: &[u8]) {
        if self.pending.is_empty() {
            return self.decode(bytes);
        }
        let mut joined = std::mem::take(&mut self.pending);
        joined.extend_from_slice(bytes);
        self.decode(&joined);
    }

    fn decode(&mut self, mut bytes: &[u8]) {
        loop {
            match std::str::from_utf8(bytes) {
                Ok(s) => return self.text.push_str(s),
                Err(e) => {
                    let (ok, rest) = bytes.split_at(e.valid_up_to());
                    self.text
                        .push_str(std::str::from_utf8(ok).unwrap_or_default());
                    match e.error_len() {
                        Some(n) => {
                            self.text.push_str("\u{FFFD}");
                            bytes = &rest[n..];
                        }
                        None => {
                            // An incomplete character at the end of a packet.
                            self.pending = rest.to_vec();
                            return;
                        }
                    }
                }
            }
        }
    }

    fn finish(mut self) -> (String, bool) {
        if !self.pending.is_empty() {
            self.text.push_str("\u{FFFD}");
        }
        let truncated = self.text.total() > toolgate_shared::truncate::LIMIT as u64;
        (self.text.render(), truncated)
    }
}

/// Sends the wrapped command and collects its outcome. `timeout` is the
/// caller's (already limited) timeout; `max_bytes` caps the output read
/// before the command is stopped.
pub async fn run(
    mut channel: russh::Channel<russh::client::Msg>,
    command: &str,
    timeout: Duration,
    max_bytes: u64,
    cancel: Option<toolgate_shared::tasks::Cancel>,
) -> Result<Outcome, String> {
    let secs = timeout.as_secs().max(1);
    channel
        .exec(true, wrap(command, secs))
        .await
        .map_err(|e| format!("cannot start the command: {e}"))?;
    let started = Instant::now();
    let mut give_up =
        tokio::time::Instant::now() + Duration::from_secs(secs + KILL_AFTER_SECS) + LOCAL_SLACK;
    let mut out = Stream::new();
    let mut err = Stream::new();
    let mut bytes_out = 0u64;
    let mut status: Option<i64> = None;
    let mut flooded = false;
    let mut locally_timed_out = false;
    let mut cancelled = false;
    let mut cancel = cancel;
    loop {
        let armed = cancel.as_mut().filter(|_| !cancelled);
        let cancelling = async move {
            match armed {
                Some(c) => c.cancelled().await,
                None => std::future::pending().await,
            }
        };
        let msg = tokio::select! {
            m = channel.wait() => m,
            () = cancelling => {
                // Its caller cancelled the task: TERM now (sshd delivers it
                // to the session's process group), KILL at the give-up.
                cancelled = true;
                let _ = channel.signal(Sig::TERM).await;
                give_up = give_up.min(tokio::time::Instant::now() + Duration::from_secs(KILL_AFTER_SECS));
                continue;
            }
            _ = tokio::time::sleep_until(give_up) => {
                locally_timed_out = !flooded && !cancelled;
                let _ = channel.signal(Sig::KILL).await;
                let _ = channel.close().await;
                break;
            }
        };
        let Some(msg) = msg else {
            if status.is_none() && !flooded {
                // The connection went away under the command.
                return Err("the connection was lost while the command ran; it may or may not have finished".into());
            }
            break;
        };
        match msg {
            ChannelMsg::Data { data } => {
                bytes_out += data.len() as u64;
                if !flooded {
                    out.push(&data);
                }
            }
            ChannelMsg::ExtendedData { data, ext: 1 } => {
                bytes_out += data.len() as u64;
                if !flooded {
                    err.push(&data);
                }
            }
            ChannelMsg::ExitStatus { exit_status } => status = Some(i64::from(exit_status)),
            ChannelMsg::ExitSignal { signal_name, .. } => {
                status = Some(signal_number(&signal_name).map_or(-1, |n| 128 + n));
            }
            ChannelMsg::Failure => return Err("the server refused to run the command".into()),
            ChannelMsg::Close => break,
            _ => {}
        }
        if bytes_out > max_bytes && !flooded {
            // Past the cap nothing more is kept: stop the producer. sshd
            // delivers TERM to the session's process group (`timeout` and
            // the command). What is still in flight is read and dropped,
            // since closing first would leave sshd waiting on its buffer.
            flooded = true;
            let _ = channel.signal(Sig::TERM).await;
            give_up = give_up.min(tokio::time::Instant::now() + FLOOD_DRAIN);
        }
    }
    let elapsed = started.elapsed();
    // `timeout` exits 124 after TERM, 137 after KILL.
    let remote_timeout = matches!(status, Some(124 | 137))
        && elapsed + Duration::from_millis(500) >= Duration::from_secs(secs);
    let timed_out = locally_timed_out || (remote_timeout && !flooded);
    if flooded {
        err.push(
            format!("\n[toolgate: output passed {max_bytes} bytes; the command was stopped]\n")
                .as_bytes(),
        );
    }
    if cancelled {
        err.push(b"\n[toolgate: the task was cancelled; the command was stopped]\n");
    }
    if timed_out {
        err.push(
            format!("\n[toolgate: timed out after {secs} s; the command was killed]\n").as_bytes(),
        );
    }
    let (stdout, t1) = out.finish();
    let (stderr, t2) = err.finish();
    Ok(Outcome {
        stdout,
        stderr,
        exit_code: if timed_out { -1 } else { status.unwrap_or(-1) },
        timed_out,
        truncated: t1 || t2 || flooded,
        bytes_out,
        flooded,
    })
}

fn signal_number(sig: &Sig) -> Option<i64> {
    Some(match sig {
        Sig::HUP => 1,
        Sig::INT => 2,
        Sig::QUIT => 3,
        Sig::ILL => 4,
        Sig::ABRT => 6,
        Sig::FPE => 8,
        Sig::KILL => 9,
        Sig::USR1 => 10,
        Sig::SEGV => 11,
        Sig::PIPE => 13,
        Sig::ALRM => 14,
        Sig::TERM => 15,
        Sig::Custom(_) => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoting_survives_quotes() {
        assert_eq!(shell_quote("it's"), r"'it'\''s'");
        let w = wrap("echo 'a' \"$HOME\"", 5);
        assert_eq!(
            w,
            r#"exec timeout -k 2 5 "${SHELL:-/bin/sh}" -c 'echo '\''a'\'' "$HOME"'"#
        );
    }

    #[test]
    fn utf8_split_across_packets() {
        let mut s = Stream::new();
        let bytes = "héllo €".as_bytes();
        for b in bytes {
            s.push(std::slice::from_ref(b));
        }
        s.push(b"\xff!");
        assert_eq!(s.finish(), ("héllo €\u{FFFD}!".to_owned(), false));
    }
}
