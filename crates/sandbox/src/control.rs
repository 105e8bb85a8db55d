//! Server ⇄ zygote messages: one codec that both sides use.
//!
//! The channel is a `SOCK_SEQPACKET` socket, one message per packet, the
//! first byte naming it. A child's descriptors ride beside its message as
//! `SCM_RIGHTS`. The server's side is `pool::supervisor`, the zygote's is
//! `zygote`.

use std::io::{IoSlice, IoSliceMut};
use std::os::fd::{FromRawFd, OwnedFd, RawFd};

use nix::sys::socket::{ControlMessage, ControlMessageOwned, MsgFlags, recvmsg, sendmsg};

use super::proto::Walls;

/// Server → zygote: fork one more child.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToZygote {
    /// `warm_up` false skips the child's warm-up run (see
    /// `pool::clock::BACK_TO_BACK`).
    Spawn {
        /// Whether the child runs the warm-up script before it seals
        /// itself.
        warm_up: bool,
    },
}

const SPAWN: u8 = b'S';
const SPAWN_LEAN: u8 = b'L';

impl ToZygote {
    /// One byte: the server sends it from a lock without allocating.
    pub fn encode(self) -> u8 {
        match self {
            Self::Spawn { warm_up: true } => SPAWN,
            Self::Spawn { warm_up: false } => SPAWN_LEAN,
        }
    }

    /// None for a byte that names no message (the zygote ignores it).
    pub fn decode(byte: u8) -> Option<Self> {
        match byte {
            SPAWN => Some(Self::Spawn { warm_up: true }),
            SPAWN_LEAN => Some(Self::Spawn { warm_up: false }),
            _ => None,
        }
    }
}

/// Zygote → server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FromZygote {
    /// Warm and ready, with the walls as checked.
    Ready(Walls),
    /// Warm-up failed; the zygote's message.
    Failed(String),
    /// Seccomp is required and the kernel refused the filter; the kernel's
    /// error. A kind of its own, so the server names the failure without
    /// reading the text.
    SeccompRefused(String),
    /// A child; its descriptors ride along in the order socket, output
    /// memfd, pidfd (when the kernel has pidfds).
    Child {
        /// The child's process id.
        pid: i32,
    },
    /// A child was reaped, with its raw wait status.
    Exited {
        /// The child's process id.
        pid: i32,
        /// Its wait status, as `waitpid` gave it.
        status: i32,
    },
}

const READY: u8 = b'R';
const FAILED: u8 = b'E';
const SECCOMP_REFUSED: u8 = b'F';
const CHILD: u8 = b'C';
const EXITED: u8 = b'X';

/// A message that is not one of [`FromZygote`]'s.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("bad zygote message: {0}")]
pub struct DecodeError(String);

impl FromZygote {
    /// The message's bytes: its kind, then its body.
    pub fn encode(&self) -> Vec<u8> {
        let (kind, body) = match self {
            Self::Ready(w) => (READY, serde_json::to_vec(w).unwrap_or_default()),
            Self::Failed(m) => (FAILED, m.as_bytes().to_vec()),
            Self::SeccompRefused(m) => (SECCOMP_REFUSED, m.as_bytes().to_vec()),
            Self::Child { pid } => (CHILD, pid.to_le_bytes().to_vec()),
            Self::Exited { pid, status } => {
                let mut b = pid.to_le_bytes().to_vec();
                b.extend_from_slice(&status.to_le_bytes());
                (EXITED, b)
            }
        };
        let mut msg = Vec::with_capacity(1 + body.len());
        msg.push(kind);
        msg.extend_from_slice(&body);
        msg
    }

    /// Reads a message [`Self::encode`] made; an empty, short or unknown one is
    /// an error.
    pub fn decode(data: &[u8]) -> Result<Self, DecodeError> {
        let Some((&kind, body)) = data.split_first() else {
            return Err(DecodeError("empty".into()));
        };
        let text = || String::from_utf8_lossy(body).into_owned();
        let i32_at = |i: usize| -> Result<i32, DecodeError> {
            body.get(i..i + 4)
                .map(|b| i32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                .ok_or_else(|| DecodeError(format!("'{}' cut short", kind as char)))
        };
        Ok(match kind {
            READY => Self::Ready(
                serde_json::from_slice(body)
                    .map_err(|e| DecodeError(format!("walls are not JSON: {e}")))?,
            ),
            FAILED => Self::Failed(text()),
            SECCOMP_REFUSED => Self::SeccompRefused(text()),
            CHILD => Self::Child { pid: i32_at(0)? },
            EXITED => Self::Exited {
                pid: i32_at(0)?,
                status: i32_at(4)?,
            },
            other => return Err(DecodeError(format!("unknown kind {other}"))),
        })
    }

    /// Sends the message with `fds` on the zygote's end of the channel.
    pub fn send(&self, sock: RawFd, fds: &[RawFd]) -> nix::Result<usize> {
        let msg = self.encode();
        let iov = [IoSlice::new(&msg)];
        let cmsg = [ControlMessage::ScmRights(fds)];
        let cmsgs: &[ControlMessage<'_>] = if fds.is_empty() { &[] } else { &cmsg };
        sendmsg::<()>(sock, &iov, cmsgs, MsgFlags::empty(), None)
    }

    /// Blocks for the next message on the server's end, with the
    /// descriptors that came with it. `Ok(None)`: the zygote closed the
    /// channel.
    pub fn recv(sock: RawFd) -> std::io::Result<Option<(Self, Vec<OwnedFd>)>> {
        // A message is at most the walls' JSON or a zygote's error text.
        let mut buf = vec![0u8; 64 * 1024];
        let mut cmsg = nix::cmsg_space!([RawFd; 3]);
        let mut iov = [IoSliceMut::new(&mut buf)];
        let msg = recvmsg::<()>(sock, &mut iov, Some(&mut cmsg), MsgFlags::MSG_CMSG_CLOEXEC)?;
        let mut fds: Vec<OwnedFd> = Vec::new();
        for c in msg.cmsgs()? {
            if let ControlMessageOwned::ScmRights(raw) = c {
                // SAFETY: descriptors received through SCM_RIGHTS are new in
                // this process and owned by nobody else.
                fds.extend(raw.into_iter().map(|f| unsafe { OwnedFd::from_raw_fd(f) }));
            }
        }
        let n = msg.bytes;
        if n == 0 {
            return Ok(None);
        }
        let m = Self::decode(&buf[..n])
            .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))?;
        Ok(Some((m, fds)))
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Walls as a zygote reports them (for the pool's tests too).
    pub(crate) fn walls() -> Walls {
        Walls {
            capability_gap: true,
            scrub: true,
            process_per_call: true,
            instance_per_call: true,
            rlimits: true,
            seccomp: false,
            seccomp_error: Some("refused".into()),
            stop_at_deadline: true,
            kill_at_deadline: true,
            memory_mb: 256,
            probe_error: None,
            sandbox_error: None,
        }
    }

    #[test]
    fn every_message_round_trips() {
        for m in [
            FromZygote::Ready(walls()),
            FromZygote::Failed("no module named 'x'".into()),
            FromZygote::SeccompRefused("EPERM".into()),
            FromZygote::Child { pid: 4242 },
            FromZygote::Exited {
                pid: -1,
                status: 0x7f09,
            },
        ] {
            assert_eq!(FromZygote::decode(&m.encode()), Ok(m));
        }
        for m in [
            ToZygote::Spawn { warm_up: true },
            ToZygote::Spawn { warm_up: false },
        ] {
            assert_eq!(ToZygote::decode(m.encode()), Some(m));
        }
    }

    #[test]
    fn short_or_unknown_messages_are_errors_not_zeros() {
        assert!(FromZygote::decode(b"").is_err());
        assert!(FromZygote::decode(b"C\x01\x02").is_err());
        assert!(FromZygote::decode(b"X\x01\x00\x00\x00\x02").is_err());
        assert!(FromZygote::decode(b"R{not json").is_err());
        assert!(FromZygote::decode(b"?").is_err());
        assert_eq!(ToZygote::decode(b'?'), None);
    }
}
