//! Clients that send slowly or hold connections open (slowloris), with no
//! token needed: half-sent heads and bodies are closed after
//! `TOOLGATE_HEADER_TIMEOUT_SECS` / `TOOLGATE_BODY_TIMEOUT_SECS`, one client
//! address holds at most `TOOLGATE_MAX_CONNECTIONS_PER_CLIENT` connections,
//! and none of it stops other callers from being answered.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use toolgate_e2e::{Server, error_of};

fn connect(addr: &str) -> TcpStream {
    TcpStream::connect(addr).expect("connect")
}

/// Everything that comes back until the server closes, or `None` if it
/// still holds the connection open after `within`.
fn until_closed(c: &mut TcpStream, within: Duration) -> Option<String> {
    c.set_read_timeout(Some(within)).unwrap();
    let mut out = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        match c.read(&mut buf) {
            Ok(0) => return Some(String::from_utf8_lossy(&out).into_owned()),
            Ok(n) => out.extend_from_slice(&buf[..n]),
            // A reset closes too.
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => {
                return Some(String::from_utf8_lossy(&out).into_owned());
            }
            Err(_) => return None,
        }
    }
}

/// `GET /healthz` from `local` (another loopback address: another client
/// to the server), answered within `within`: the status line.
fn healthz_from(local: &str, addr: &str, within: Duration) -> Option<String> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let stream = rt
        .block_on(async {
            let sock = tokio::net::TcpSocket::new_v4()?;
            sock.bind(format!("{local}:0").parse().unwrap())?;
            sock.connect(addr.parse().unwrap()).await
        })
        .expect("connect from another address");
    let mut c = stream.into_std().unwrap();
    c.set_nonblocking(false).unwrap();
    c.write_all(
        format!("GET /healthz HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n").as_bytes(),
    )
    .unwrap();
    until_closed(&mut c, within).map(|r| r.lines().next().unwrap_or("").to_owned())
}

#[test]
fn half_sent_requests_are_closed_and_others_answered_meanwhile() {
    let s = Server::start(&[
        ("TOOLGATE_HEADER_TIMEOUT_SECS", "2"),
        ("TOOLGATE_BODY_TIMEOUT_SECS", "3"),
    ]);
    // Heads that never end.
    let mut held: Vec<TcpStream> = (0..40)
        .map(|_| {
            let mut c = connect(&s.addr);
            c.write_all(
                format!(
                    "POST /tools/python.execute HTTP/1.1\r\nHost: {}\r\n",
                    s.addr
                )
                .as_bytes(),
            )
            .unwrap();
            c
        })
        .collect();
    // A whole head, then 10 bytes of a 1000-byte body, then silence.
    let mut slow = connect(&s.addr);
    slow.write_all(
        format!(
            "POST /tools/python.execute HTTP/1.1\r\nHost: {}\r\n\
             Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n{{\"code\": \"",
            s.addr
        )
        .as_bytes(),
    )
    .unwrap();
    let started = Instant::now();
    assert_eq!(s.get("/healthz").status, 200, "answered meanwhile");
    for (i, c) in held.iter_mut().enumerate() {
        let got = until_closed(c, Duration::from_secs(8));
        assert!(
            got.is_some(),
            "half-sent head {i} still open after {:?}",
            started.elapsed()
        );
    }
    let answer = until_closed(&mut slow, Duration::from_secs(8))
        .unwrap_or_else(|| panic!("a half-sent body still open after {:?}", started.elapsed()));
    assert!(answer.starts_with("HTTP/1.1 400 "), "{answer}");
    assert!(
        answer.contains("Request body stalled: no bytes for 1 s (TOOLGATE_BODY_TIMEOUT_SECS)"),
        "{answer}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(8),
        "{:?}",
        started.elapsed()
    );
}

#[test]
fn one_client_cannot_take_every_connection() {
    let s = Server::start(&[("TOOLGATE_MAX_CONNECTIONS_PER_CLIENT", "8")]);
    let idle: Vec<TcpStream> = (0..8).map(|_| connect(&s.addr)).collect();
    // Accepted in order: the eight idle ones hold this client's seats.
    std::thread::sleep(Duration::from_millis(300));
    let r = s.get("/healthz");
    let (status, code, message) = error_of(&r);
    assert_eq!((status, code.as_str()), (429, "quota_exceeded"), "{r:?}");
    assert_eq!(
        message,
        "Too many connections from 127.0.0.1: at most 8 at once (TOOLGATE_MAX_CONNECTIONS_PER_CLIENT)"
    );
    // Another client is served all the while.
    assert_eq!(
        healthz_from("127.0.0.2", &s.addr, Duration::from_secs(10)).as_deref(),
        Some("HTTP/1.1 200 OK")
    );
    drop(idle);
    let again = toolgate_e2e::timing::poll(Duration::from_secs(5), || {
        (s.get("/healthz").status == 200).then_some(())
    });
    assert!(again.is_some(), "seats are given back as connections close");
}

/// The attack as the red team ran it: half-sent requests from many
/// sockets until the server's descriptors run out. The server's limit is
/// lowered to 256 so that 300 sockets reach it; another client must still
/// be answered.
#[test]
fn many_half_sent_requests_do_not_stop_other_callers() {
    let s = Server::start(&[]);
    let lim = libc::rlimit {
        rlim_cur: 256,
        rlim_max: 256,
    };
    // SAFETY: prlimit reads `lim` and sets the open-files limit of our own
    // child process; no memory of ours is written (old limit: null).
    let rc = unsafe {
        libc::prlimit(
            s.pid() as libc::pid_t,
            libc::RLIMIT_NOFILE,
            &lim,
            std::ptr::null_mut(),
        )
    };
    assert_eq!(rc, 0, "prlimit: {}", std::io::Error::last_os_error());
    let head = format!(
        "POST /tools/python.execute HTTP/1.1\r\nHost: {}\r\n",
        s.addr
    );
    let _held: Vec<TcpStream> = (0..300)
        .map(|_| {
            let mut c = connect(&s.addr);
            let _ = c.write_all(head.as_bytes());
            c
        })
        .collect();
    let started = Instant::now();
    let answer = healthz_from("127.0.0.2", &s.addr, Duration::from_secs(20));
    assert_eq!(
        answer.as_deref(),
        Some("HTTP/1.1 200 OK"),
        "another client after {:?}",
        started.elapsed()
    );
}
