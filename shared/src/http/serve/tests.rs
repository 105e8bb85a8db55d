use super::*;
use std::net::{Ipv4Addr, Ipv6Addr};

async fn start(limits: ServeLimits) -> (SocketAddr, tokio::sync::oneshot::Sender<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let app = Router::new()
        .route("/", axum::routing::get(|| async { "ok" }))
        .route(
            "/big",
            axum::routing::get(|| async { vec![b'x'; 16 << 20] }),
        )
        .route(
            "/echo",
            axum::routing::post(|body: Body| async move {
                match axum::body::to_bytes(body, 1 << 20).await {
                    Ok(b) => format!("{} bytes", b.len()),
                    Err(e) => {
                        let mut src: Option<&(dyn std::error::Error + 'static)> = Some(&e);
                        while let Some(s) = src {
                            if let Some(t) = s.downcast_ref::<BodyTimeout>() {
                                return t.to_string();
                            }
                            src = s.source();
                        }
                        format!("other: {e}")
                    }
                }
            }),
        );
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(serve(listener, app, limits, async move {
        let _ = rx.await;
    }));
    (addr, tx)
}

fn limits() -> ServeLimits {
    ServeLimits {
        header_timeout: Duration::from_secs(1),
        body_timeout: Duration::from_secs(3),
        max_connections: 100,
        per_client: 4,
    }
}

/// Everything the server sends until it closes, or what came within
/// `within` (then `timed_out`).
async fn read_all(c: &mut TcpStream, within: Duration) -> (String, bool) {
    let mut out = Vec::new();
    let r = tokio::time::timeout(within, c.read_to_end(&mut out)).await;
    (String::from_utf8_lossy(&out).into_owned(), r.is_err())
}

#[tokio::test]
async fn silent_and_half_sent_heads_are_closed() {
    let (addr, _stop) = start(limits()).await;
    let mut silent = TcpStream::connect(addr).await.unwrap();
    let mut half = TcpStream::connect(addr).await.unwrap();
    half.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n")
        .await
        .unwrap();
    for c in [&mut silent, &mut half] {
        let (got, timed_out) = read_all(c, Duration::from_secs(5)).await;
        assert!(!timed_out, "still open: {got:?}");
    }
    // An idle keep-alive connection closes too, after its answer.
    let mut kept = TcpStream::connect(addr).await.unwrap();
    kept.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        .await
        .unwrap();
    let (got, timed_out) = read_all(&mut kept, Duration::from_secs(5)).await;
    assert!(!timed_out && got.starts_with("HTTP/1.1 200"), "{got:?}");
}

/// A client that asks and never reads holds nothing for long: its
/// connections close once their writes stall for the body timeout, and
/// its seats come back.
#[tokio::test]
async fn a_client_that_stops_reading_is_closed() {
    let (addr, _stop) = start(limits()).await;
    let mut stalled = Vec::new();
    for _ in 0..4 {
        let socket = tokio::net::TcpSocket::new_v4().unwrap();
        socket.set_recv_buffer_size(4096).unwrap();
        let mut c = socket.connect(addr).await.unwrap();
        c.write_all(b"GET /big HTTP/1.1\r\nHost: x\r\n\r\n")
            .await
            .unwrap();
        stalled.push(c);
    }
    let ask = || async {
        let mut c = TcpStream::connect(addr).await.unwrap();
        c.write_all(b"GET / HTTP/1.1\r\nHost: x\r\nconnection: close\r\n\r\n")
            .await
            .unwrap();
        read_all(&mut c, Duration::from_secs(3)).await.0
    };
    tokio::time::sleep(Duration::from_millis(500)).await;
    let got = ask().await;
    assert!(
        got.starts_with("HTTP/1.1 429"),
        "its seats are taken: {got:?}"
    );
    tokio::time::sleep(Duration::from_secs(5)).await;
    let got = ask().await;
    assert!(got.starts_with("HTTP/1.1 200"), "{got:?}");
}

#[tokio::test]
async fn an_http2_preface_is_closed_unanswered() {
    let (addr, _stop) = start(limits()).await;
    let mut c = TcpStream::connect(addr).await.unwrap();
    c.write_all(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\0\0\x12\x04\0\0\0\0\0")
        .await
        .unwrap();
    let (got, timed_out) = read_all(&mut c, Duration::from_secs(5)).await;
    assert!(!timed_out && got.is_empty(), "{got:?}");
}

#[tokio::test]
async fn a_body_must_arrive_in_time() {
    let (addr, _stop) = start(limits()).await;
    let mut c = TcpStream::connect(addr).await.unwrap();
    c.write_all(b"POST /echo HTTP/1.1\r\nHost: x\r\ncontent-length: 10\r\n\r\nabc")
        .await
        .unwrap();
    let started = std::time::Instant::now();
    let (got, timed_out) = read_all(&mut c, Duration::from_secs(6)).await;
    assert!(!timed_out, "{got:?}");
    assert!(got.contains("no bytes for 1 s"), "{got:?}");
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
    // A byte each half second never stalls, and still ends at 3 s.
    let mut c = TcpStream::connect(addr).await.unwrap();
    c.write_all(b"POST /echo HTTP/1.1\r\nHost: x\r\ncontent-length: 100\r\n\r\n")
        .await
        .unwrap();
    for _ in 0..8 {
        tokio::time::sleep(Duration::from_millis(500)).await;
        if c.write_all(b"a").await.is_err() {
            break;
        }
    }
    let (got, _) = read_all(&mut c, Duration::from_secs(3)).await;
    assert!(got.contains("did not arrive within 3 s"), "{got:?}");
    // A body sent at once is read.
    let mut c = TcpStream::connect(addr).await.unwrap();
    c.write_all(
        b"POST /echo HTTP/1.1\r\nHost: x\r\nconnection: close\r\ncontent-length: 3\r\n\r\nabc",
    )
    .await
    .unwrap();
    let (got, _) = read_all(&mut c, Duration::from_secs(3)).await;
    assert!(got.ends_with("3 bytes"), "{got:?}");
}

#[tokio::test]
async fn one_client_gets_its_share_of_connections() {
    let (addr, _stop) = start(ServeLimits {
        header_timeout: Duration::from_secs(30),
        ..limits()
    })
    .await;
    let mut held = Vec::new();
    for _ in 0..4 {
        held.push(TcpStream::connect(addr).await.unwrap());
    }
    let mut fifth = TcpStream::connect(addr).await.unwrap();
    let (got, timed_out) = read_all(&mut fifth, Duration::from_secs(5)).await;
    assert!(!timed_out, "{got:?}");
    assert!(got.starts_with("HTTP/1.1 429 "), "{got:?}");
    assert!(
        got.contains(r#""code":"quota_exceeded""#)
            && got.contains("Too many connections from 127.0.0.1: at most 4 at once"),
        "{got:?}"
    );
    drop(held);
    // Seats are given back as connections close.
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    loop {
        let mut c = TcpStream::connect(addr).await.unwrap();
        c.write_all(b"GET / HTTP/1.1\r\nHost: x\r\nconnection: close\r\n\r\n")
            .await
            .unwrap();
        let (got, _) = read_all(&mut c, Duration::from_secs(2)).await;
        if got.starts_with("HTTP/1.1 200") {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "{got:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[test]
fn seats_are_counted_per_client() {
    let seats = Arc::new(Seats::new(2));
    let a = ClientKey::of(IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1)));
    let mapped = ClientKey::of(IpAddr::V6(Ipv4Addr::new(10, 0, 0, 1).to_ipv6_mapped()));
    assert_eq!(a, mapped);
    let v6a = ClientKey::of("2001:db8::1".parse::<Ipv6Addr>().unwrap().into());
    let v6b = ClientKey::of("2001:db8::ffff:2".parse::<Ipv6Addr>().unwrap().into());
    let v6c = ClientKey::of("2001:db8:0:1::1".parse::<Ipv6Addr>().unwrap().into());
    assert_eq!(v6a, v6b, "one /64");
    assert_ne!(v6a, v6c);
    let one = seats.take(a).unwrap();
    let two = seats.take(mapped).unwrap();
    assert!(seats.take(a).is_none());
    let other = seats.take(v6a).unwrap();
    assert_eq!(seats.open(), 3);
    drop((one, two, other));
    assert_eq!(seats.open(), 0);
    assert!(seats.taken.lock().unwrap().is_empty());
}

#[test]
fn limits_come_from_the_config_and_fit_the_descriptors() {
    let mut l = ServeLimits::from_config(&ServerConfig::default());
    assert_eq!(l.header_timeout, Duration::from_secs(30));
    assert_eq!(l.body_idle(), Duration::from_secs(20));
    assert_eq!((l.max_connections, l.per_client), (1024, 64));
    l.max_connections = usize::MAX;
    let soft = l.fit_descriptors().unwrap();
    assert!(l.max_connections as u64 <= soft.saturating_sub(DESCRIPTOR_SPARE).max(16));
}
