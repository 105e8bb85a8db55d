//! The loopback authority check: a server bound to loopback answers only
//! requests addressed to a loopback name, so that a web page cannot reach
//! it through DNS rebinding (a name of the attacker's that resolves to
//! 127.0.0.1). Every authority a request carries is judged: each `Host`
//! header and the URI's own (HTTP/2's `:authority`, an absolute-form
//! target such as `POST http://evil.example/tools/x`).

use std::net::{Ipv4Addr, Ipv6Addr};

use axum::http::{HeaderMap, Uri, header};

/// A request addressed to a name that is not loopback.
pub const FOREIGN: &str =
    "This server is bound to loopback and only answers Host: localhost, 127.0.0.1 or [::1]";
/// A request with no authority at all (HTTP/1.0 without `Host`).
pub const MISSING: &str =
    "This server is bound to loopback and needs a Host header (localhost, 127.0.0.1 or [::1])";

/// Why a server bound to loopback must refuse this request, if it must.
pub fn loopback_problem(uri: &Uri, headers: &HeaderMap) -> Option<&'static str> {
    loopback_problem_but(uri, headers, |_| false)
}

/// As [`loopback_problem`], with the authorities `also` accepts taken too:
/// the public URL's, which a reverse proxy in front passes on (the
/// operator's own name, not one a rebinding page could use).
pub fn loopback_problem_but(
    uri: &Uri,
    headers: &HeaderMap,
    also: impl Fn(&str) -> bool,
) -> Option<&'static str> {
    let is_loopback_authority = |a: &str| is_loopback_authority(a) || also(a);
    let mut hosts = headers.get_all(header::HOST).iter();
    let host = hosts.next();
    // Two `Host` headers: a proxy and the server may each read another.
    if hosts.next().is_some() {
        return Some(FOREIGN);
    }
    if let Some(a) = uri.authority()
        && !is_loopback_authority(a.as_str())
    {
        return Some(FOREIGN);
    }
    match host {
        Some(h) if !h.to_str().is_ok_and(is_loopback_authority) => Some(FOREIGN),
        Some(_) => None,
        None if uri.authority().is_some() => None,
        None => Some(MISSING),
    }
}

/// True for exactly `localhost` (any case), an address in 127.0.0.0/8,
/// `[::1]` or `[::ffff:127.x.y.z]`, each with an optional `:port` of 1 to 5
/// digits up to 65535, and nothing else: no userinfo (`localhost:80@evil`),
/// nothing after the bracket (`[::1]evil.com`), no empty or bad port.
pub fn is_loopback_authority(a: &str) -> bool {
    let (loopback, port) = match a.strip_prefix('[') {
        Some(rest) => {
            let Some((v6, after)) = rest.split_once(']') else {
                return false;
            };
            let port = match after {
                "" => None,
                p => match p.strip_prefix(':') {
                    Some(p) => Some(p),
                    None => return false,
                },
            };
            let loopback = v6.parse::<Ipv6Addr>().is_ok_and(|ip| {
                ip.is_loopback() || ip.to_ipv4_mapped().is_some_and(|v4| v4.is_loopback())
            });
            (loopback, port)
        }
        // The split is at the first ':', so `localhost:80@evil:1` keeps
        // `80@evil:1` as its port, and fails.
        None => {
            let (name, port) = match a.split_once(':') {
                Some((n, p)) => (n, Some(p)),
                None => (a, None),
            };
            let loopback = name.eq_ignore_ascii_case("localhost")
                || name.parse::<Ipv4Addr>().is_ok_and(|ip| ip.is_loopback());
            (loopback, port)
        }
    };
    loopback && port.is_none_or(is_port)
}

/// 1 to 5 ASCII digits, at most 65535.
pub(super) fn is_port(p: &str) -> bool {
    (1..=5).contains(&p.len())
        && p.bytes().all(|b| b.is_ascii_digit())
        && p.parse::<u32>().is_ok_and(|n| n <= 65_535)
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    #[test]
    fn loopback_authorities() {
        for a in [
            "localhost",
            "LOCALHOST:8080",
            "127.0.0.1",
            "127.0.0.1:9",
            "127.1.2.3:80",
            "127.1.2.3:9",
            "[::1]:8080",
            "[::1]",
            "[0:0:0:0:0:0:0:1]",
            "[::ffff:127.0.0.1]:80",
            "localhost:65535",
        ] {
            assert!(is_loopback_authority(a), "{a}");
        }
        for a in [
            "evil.com",
            "evil.com:8080",
            "localhost.evil.com",
            "10.0.0.1:80",
            "[::2]",
            "",
            "127.0.0.1.nip.io",
            "localhost:80@evil",
            "[::1]evil.com",
            "[::1]:80@evil",
            "localhost:",
            "localhost:8o",
            "localhost:99999",
            "localhost:000080",
            "127.0.0.1 x",
            "[::1",
            "::1",
            "127.1",
            "[::ffff:10.0.0.1]",
            "user@localhost",
            "localhost:80:81",
        ] {
            assert!(!is_loopback_authority(a), "{a}");
        }
    }

    fn problem(uri: &str, hosts: &[&str]) -> Option<&'static str> {
        let mut h = HeaderMap::new();
        for v in hosts {
            h.append(header::HOST, HeaderValue::from_str(v).unwrap());
        }
        loopback_problem(&uri.parse().unwrap(), &h)
    }

    #[test]
    fn every_authority_of_a_request_is_judged() {
        assert_eq!(problem("/tools", &["127.0.0.1:8080"]), None);
        assert_eq!(problem("/tools", &["[::1]:8080"]), None);
        assert_eq!(problem("/tools", &[]), Some(MISSING));
        assert_eq!(
            problem("/tools", &["127.0.0.1", "evil.example"]),
            Some(FOREIGN)
        );
        assert_eq!(
            problem("/tools", &["localhost", "localhost"]),
            Some(FOREIGN)
        );
        assert_eq!(
            problem("http://evil.example/tools", &["127.0.0.1:1"]),
            Some(FOREIGN)
        );
        assert_eq!(
            problem("http://localhost:80@evil/tools", &["127.0.0.1:1"]),
            Some(FOREIGN)
        );
        // HTTP/2: the URI's authority and no Host.
        assert_eq!(problem("http://127.0.0.1:9/tools", &[]), None);
        assert_eq!(problem("http://evil.example/tools", &[]), Some(FOREIGN));
        // A Host that is not text.
        let mut h = HeaderMap::new();
        h.insert(
            header::HOST,
            HeaderValue::from_bytes(b"localhost\xff").unwrap(),
        );
        assert_eq!(loopback_problem(&"/".parse().unwrap(), &h), Some(FOREIGN));
    }
}
