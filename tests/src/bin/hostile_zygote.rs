//! A sandbox zygote whose children lie to the server, for
//! `tests/tests/untrusted_child.rs`. It speaks the real zygote protocol
//! (`toolgate_python::sandbox::zygote::maybe_run_with`); each child prints a
//! line, then answers with the lie the script's text names. This is the
//! stand-in for an interpreter an exploit has taken over: no real peer can
//! be made to lie on purpose.

use std::fs::File;
use std::io::{Read, Write};
use std::mem::ManuallyDrop;
use std::os::fd::FromRawFd;

use toolgate_python::sandbox::outbuf::OutBuf;
use toolgate_python::sandbox::proto::{self, ChildRequest};
use toolgate_python::sandbox::vm::Stream;
use toolgate_python::sandbox::zygote::{self, ChildIo};

/// What every child prints before it lies.
pub const PRINTED: &str = "printed before the lie\n";

fn main() {
    zygote::maybe_run_with(child);
    eprintln!("toolgate-hostile-zygote runs only as a sandbox zygote");
    std::process::exit(2);
}

fn frame(body: &[u8]) -> Vec<u8> {
    let mut v = (body.len() as u32).to_le_bytes().to_vec();
    v.extend_from_slice(body);
    v
}

fn child(io: ChildIo) -> ! {
    // SAFETY: the zygote hands the child its report socket, open for the
    // child's life; ManuallyDrop leaves closing it to the exit.
    let mut sock = ManuallyDrop::new(unsafe { File::from_raw_fd(io.sock) });
    let _ = sock.write_all(&[proto::SEALED]);
    let Ok(request) = proto::read_frame(&mut *sock) else {
        // SAFETY: _exit has no preconditions.
        unsafe { libc::_exit(0) }
    };
    let lie = serde_json::from_slice::<ChildRequest>(&request)
        .map(|r| r.code)
        .unwrap_or_default();
    // SAFETY: `io.out` is the zygote's shared mapping of outbuf::SIZE bytes,
    // page-aligned, which only this child writes.
    let mut out = unsafe { OutBuf::from_raw(io.out) };
    out.push(Stream::Stdout, PRINTED);
    let done = |result: &str| {
        frame(
            serde_json::json!({"kind": "done", "exit_code": 0, "result": result})
                .to_string()
                .as_bytes(),
        )
    };
    // A finished run's report claiming `files`, and a state frame after it
    // when `state` is given (the report promises one either way when
    // `promise`).
    let done_with = |files: serde_json::Value, promise: bool, state: Option<Vec<u8>>| {
        let mut v = frame(
            serde_json::json!({"kind": "done", "exit_code": 0, "result": "42", "files": files, "state": promise})
                .to_string()
                .as_bytes(),
        );
        if let Some(state) = state {
            v.extend_from_slice(&frame(&state));
        }
        v
    };
    let b64 = |n: usize| base64_of(&vec![b'x'; n]);
    let bytes: Vec<u8> = match lie.as_str() {
        "garbage" => frame(b"\xff\xfe this is not a report"),
        "not_utf8" => frame(b"{\"kind\":\"crashed\",\"message\":\"\xff\xfe\"}"),
        "unknown_kind" => frame(br#"{"kind":"root_shell"}"#),
        "cut_header" => vec![7, 0],
        "cut_body" => {
            let mut v = 1000u32.to_le_bytes().to_vec();
            v.extend_from_slice(br#"{"kind":"do"#);
            v
        }
        "oversized" => {
            let mut v = u32::MAX.to_le_bytes().to_vec();
            v.extend_from_slice(&[b'x'; 4096]);
            v
        }
        "big_int_result" => done("[18446744073709551617]"),
        "deep_result" => done(&("[".repeat(300) + &"]".repeat(300))),
        "surrogate_result" => done(r#""\ud800""#),
        "invalid_result" => done("{not json"),
        "long_crash" => frame(
            serde_json::json!({"kind": "crashed", "message": "m".repeat(200_000)})
                .to_string()
                .as_bytes(),
        ),
        "file_outside" => done_with(serde_json::json!({"../outside.txt": b64(3)}), false, None),
        "file_absolute" => done_with(serde_json::json!({"/etc/cron.d/x": b64(3)}), false, None),
        "file_not_base64" => done_with(serde_json::json!({"a.txt": "*not base64*"}), false, None),
        // The sandbox under test caps files at 1 MiB in all.
        "file_over_cap" => done_with(
            serde_json::json!({"big.bin": b64((1 << 20) + 1)}),
            false,
            None,
        ),
        // Its session state caps at 1 MiB too.
        "state_over_cap" => done_with(serde_json::json!({}), true, Some(vec![b'x'; (1 << 20) + 1])),
        "state_cut" => {
            let mut v = done_with(serde_json::json!({}), true, None);
            v.extend_from_slice(&1000u32.to_le_bytes());
            v.extend_from_slice(b"only this");
            v
        }
        "state_outside_session" => {
            done_with(serde_json::json!({}), true, Some(b"smuggled".to_vec()))
        }
        "state_empty_outside_session" => done_with(serde_json::json!({}), true, Some(Vec::new())),
        "silent" => Vec::new(),
        // Killed from outside after taking the script: the first child of
        // this zygote only (a marker file named for it), or every one.
        "killed_once" | "killed_always" => {
            // SAFETY: getppid has no preconditions.
            let zygote = unsafe { libc::getppid() };
            let marker = std::env::temp_dir().join(format!("toolgate-killed-once-{zygote}"));
            let first = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&marker)
                .is_ok();
            if first || lie == "killed_always" {
                // SAFETY: signalling this very process.
                unsafe { libc::kill(libc::getpid(), libc::SIGKILL) };
            }
            done("42")
        }
        _ => done("42"),
    };
    let _ = sock.write_all(&bytes);
    if lie == "silent" || lie.starts_with("cut_") || lie == "state_cut" {
        // Close the socket: the report ends where it is.
        // SAFETY: _exit has no preconditions.
        unsafe { libc::_exit(3) }
    }
    // Wait to be killed, as a real child does.
    let mut byte = [0u8; 1];
    while matches!(sock.read(&mut byte), Ok(1)) {}
    // SAFETY: _exit has no preconditions.
    unsafe { libc::_exit(0) }
}

/// Standard base64, padded: what a real child sends files in.
fn base64_of(bytes: &[u8]) -> String {
    let files = toolgate_shared::files::Files::from([(String::new(), bytes.to_vec())]);
    toolgate_shared::files::to_wire(&files)
        .into_values()
        .next()
        .unwrap_or_default()
}
