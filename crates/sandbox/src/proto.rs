//! Messages between the server and a child: a stream socket carrying
//! length-prefixed JSON frames, one codec for both sides (the server's
//! reader is async: `pool::call`). Server ⇄ zygote messages are `control`'s.

use std::collections::BTreeMap;
use std::io::{self, Read, Write};

use serde::{Deserialize, Serialize};

pub use toolgate_core::walls::Walls;

/// Child → server, one byte before anything else: sealed and waiting. The
/// server sets the per-call CPU cap and sends the script only after it, so
/// the child's own limits never race the server's.
pub const SEALED: u8 = b's';
/// Server → child, at the deadline: stop at the next bytecode boundary. The
/// child answers with [`STOPPED_FRAME`]; SIGKILL follows either way.
pub const STOP: u8 = b'k';
/// Server → child, code mode: the answer to the script's tool request
/// ([`ChildReport::ToolRequest`]) follows, as one frame.
pub const REPLY: u8 = b'r';
/// The longest answer to a tool request: the child holds it in the
/// script's memory. A longer one is answered `too_large`.
pub const MAX_REPLY: usize = toolgate_core::code::MAX_ANSWER;

/// Server → child: the one script this child runs.
#[derive(Debug, Serialize, Deserialize)]
pub struct ChildRequest {
    /// The Python source.
    pub code: String,
    /// The call's files, base64 by name (`files::to_wire`).
    #[serde(default)]
    pub files: BTreeMap<String, String>,
    /// A session call: the saved state follows this frame as a frame of
    /// its own, raw (empty for a new session).
    #[serde(default)]
    pub session: bool,
    /// Code mode: the script may ask the server for tools
    /// ([`ChildReport::ToolRequest`]).
    #[serde(default)]
    pub tools: bool,
    /// `random`'s seed, 32 hex digits, where the server fixes it (code
    /// mode: a script run again from its journal draws the same numbers).
    #[serde(default)]
    pub seed: Option<String>,
}

/// Child → server: how the script ended.
#[derive(Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ChildReport {
    /// The script ran to its end or raised.
    Done {
        /// 0, or 1 on an exception, or `SystemExit`'s code.
        exit_code: i64,
        /// The `result` variable as JSON text, when set.
        result: Option<String>,
        /// The files the script created or changed, base64 by name.
        #[serde(default)]
        files: BTreeMap<String, String>,
        /// Microseconds from request received to report, measured in the child.
        #[serde(default)]
        child_us: u64,
        /// A session's state after the script follows this frame as a
        /// frame of its own, raw, at most the state cap; false when not
        /// saved (stderr says why).
        #[serde(default)]
        state: bool,
    },
    /// Code mode: the script asks for a tool (JSON, `code::ToolHost`'s
    /// request); the server answers with [`REPLY`] and a frame. Not an end.
    ToolRequest {
        /// The request, as JSON text.
        request: String,
    },
    /// An allocation failed under the memory cap.
    OutOfMemory,
    /// Stopped by [`STOP`] at a bytecode boundary.
    Stopped,
    /// The child failed around the script: the interpreter panicked, the
    /// request was unreadable, or the seal did not hold.
    Crashed {
        /// What failed, in the child's words.
        message: String,
    },
    /// The interpreter's native stack ran out (see `child::on_fault`).
    StackOverflow,
}

/// The out-of-memory frame, prebuilt so that it can be sent without allocating.
pub const OOM_FRAME: &[u8] = b"\x18\x00\x00\x00{\"kind\":\"out_of_memory\"}";

/// The stopped frame, prebuilt for the same reason: the stop comes when the
/// script may have used up its memory.
pub const STOPPED_FRAME: &[u8] = b"\x12\x00\x00\x00{\"kind\":\"stopped\"}";

/// The stack overflow frame, prebuilt: it is sent from a signal handler.
pub const STACK_OVERFLOW_FRAME: &[u8] = b"\x19\x00\x00\x00{\"kind\":\"stack_overflow\"}";

/// Frames larger than this are refused: a request is at most its HTTP
/// body, whose largest is python.execute's with the largest files cap
/// (64 MiB as base64, 86 MiB).
pub const MAX_FRAME: usize = 128 << 20;

/// A child's report is at most this long: a result is at most
/// `result::LIMIT_BYTES` (1 MiB) of JSON, which the report carries as a JSON
/// string (at most twice as long), plus a few fields, plus the files, at
/// most `files_cap` bytes as base64 (4/3 as long) and up to
/// `files::MAX_COUNT` names (each at most 255 bytes, up to 6 times as long
/// escaped). A longer one is refused unread, so a child cannot make the
/// server hold more. A session's state is a frame of its own, bounded by
/// the state cap.
pub fn max_report(files_cap: u64) -> usize {
    let names = toolgate_core::files::MAX_COUNT * toolgate_core::files::MAX_NAME_BYTES * 6;
    (3 << 20) + (files_cap as usize).div_ceil(3) * 4 + names
}

/// Writes one frame: `body`'s length (4 bytes, little-endian), then `body`.
pub fn write_frame(w: &mut impl Write, body: &[u8]) -> io::Result<()> {
    let len = u32::try_from(body.len())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "frame too large"))?;
    w.write_all(&len.to_le_bytes())?;
    w.write_all(body)
}

/// Why a frame could not be read: one set of errors on both sides of the
/// socket (the child reads with [`read_frame`], the server with
/// `pool::call`'s async reader over [`body_len`] and [`more`]).
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum FrameError {
    /// The socket closed (or failed) before the frame began.
    #[error("closed before it began")]
    Closed,
    /// The socket closed (or failed) inside the frame.
    #[error("cut short")]
    Truncated,
    /// The header announced more than the reader takes; the body is left
    /// unread.
    #[error("of {len} bytes, over the limit of {max}")]
    TooLarge {
        /// What the header announced.
        len: usize,
        /// What the reader takes.
        max: usize,
    },
}

/// The body length a frame's header announces, refused past `max`.
pub fn body_len(header: [u8; 4], max: usize) -> Result<usize, FrameError> {
    let len = u32::from_le_bytes(header) as usize;
    if len > max {
        return Err(FrameError::TooLarge { len, max });
    }
    Ok(len)
}

/// What one read of `n` bytes means, `got` bytes into the frame: `Ok(None)`
/// to read again (an interrupted read), `Ok(Some(n))` bytes read, or why the
/// frame ends there. Both readers feed their reads through it.
pub fn more(read: io::Result<usize>, got: usize) -> Result<Option<usize>, FrameError> {
    let ended = || {
        if got == 0 {
            FrameError::Closed
        } else {
            FrameError::Truncated
        }
    };
    match read {
        Ok(0) => Err(ended()),
        Ok(n) => Ok(Some(n)),
        Err(e) if e.kind() == io::ErrorKind::Interrupted => Ok(None),
        Err(_) => Err(ended()),
    }
}

/// Fills `buf` from `r`; `at` is how far into the frame `buf` starts.
fn fill(r: &mut impl Read, buf: &mut [u8], at: usize) -> Result<(), FrameError> {
    let mut got = 0;
    while got < buf.len() {
        if let Some(n) = more(r.read(&mut buf[got..]), at + got)? {
            got += n;
        }
    }
    Ok(())
}

/// Reads one frame as [`write_frame`] writes it, of at most `max` bytes
/// (a longer one is refused unread).
pub fn read_frame_within(r: &mut impl Read, max: usize) -> Result<Vec<u8>, FrameError> {
    let mut header = [0u8; 4];
    fill(r, &mut header, 0)?;
    let mut body = vec![0u8; body_len(header, max)?];
    fill(r, &mut body, header.len())?;
    Ok(body)
}

/// [`read_frame_within`] [`MAX_FRAME`].
pub fn read_frame(r: &mut impl Read) -> Result<Vec<u8>, FrameError> {
    read_frame_within(r, MAX_FRAME)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn oom_frame_is_a_valid_report() {
        let mut r = OOM_FRAME;
        let body = read_frame(&mut r).unwrap();
        let report: ChildReport = serde_json::from_slice(&body).unwrap();
        assert_eq!(report, ChildReport::OutOfMemory);
    }

    #[test]
    fn stack_overflow_frame_is_a_valid_report() {
        let mut r = STACK_OVERFLOW_FRAME;
        let body = read_frame(&mut r).unwrap();
        assert!(r.is_empty(), "the length prefix covers the whole frame");
        let report: ChildReport = serde_json::from_slice(&body).unwrap();
        assert_eq!(report, ChildReport::StackOverflow);
    }

    #[test]
    fn stopped_frame_is_a_valid_report() {
        let mut r = STOPPED_FRAME;
        let body = read_frame(&mut r).unwrap();
        assert!(r.is_empty(), "the length prefix covers the whole frame");
        let report: ChildReport = serde_json::from_slice(&body).unwrap();
        assert_eq!(report, ChildReport::Stopped);
    }

    /// Every way a frame can end early or be refused, the same errors
    /// whatever the reader.
    #[test]
    fn a_frame_ends_as_closed_cut_short_or_too_large() {
        let mut whole = Vec::new();
        write_frame(&mut whole, b"hello").unwrap();
        let read = |bytes: &[u8], max: usize| read_frame_within(&mut &bytes[..], max);
        assert_eq!(read(&whole, 16), Ok(b"hello".to_vec()));
        assert_eq!(read(&[], 16), Err(FrameError::Closed));
        assert_eq!(read(&whole[..2], 16), Err(FrameError::Truncated));
        assert_eq!(read(&whole[..6], 16), Err(FrameError::Truncated));
        assert_eq!(
            read(&whole, 4),
            Err(FrameError::TooLarge { len: 5, max: 4 })
        );
        assert_eq!(
            FrameError::TooLarge { len: 5, max: 4 }.to_string(),
            "of 5 bytes, over the limit of 4"
        );
        // An interrupted read is read again, whatever the reader.
        assert_eq!(more(Err(io::ErrorKind::Interrupted.into()), 0), Ok(None));
        assert_eq!(more(Err(io::ErrorKind::Interrupted.into()), 3), Ok(None));
        assert_eq!(
            more(Err(io::ErrorKind::BrokenPipe.into()), 0),
            Err(FrameError::Closed)
        );
        assert_eq!(
            more(Err(io::ErrorKind::BrokenPipe.into()), 3),
            Err(FrameError::Truncated)
        );
    }
}
