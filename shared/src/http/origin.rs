//! The cross-site judgement: a web page must not call this server. A page
//! can send a `POST` that needs no preflight (`mode: 'no-cors'`, a `Blob`
//! body, no `Content-Type`); its answer stays unreadable, but the call runs.
//! Browsers say where a request comes from (`Sec-Fetch-Site`, `Origin`);
//! a request from another site is refused unless its origin is allowed
//! (`TOOLGATE_ALLOWED_ORIGINS`, or the public URL's own). Clients that are
//! not browsers send neither header and pass.

use axum::http::{HeaderMap, Method, header};

use super::identity::Route;

/// The most of an `Origin` a refusal shows.
const SHOWN_CHARS: usize = 200;

/// The web origins allowed to call this server from a page of theirs, each
/// as `scheme://host[:port]`, lowercased, without its scheme's default
/// port.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Origins {
    allowed: Vec<String>,
    /// The public URL's origin, normalized: its authority is the server's
    /// own name behind a reverse proxy.
    public: Option<String>,
}

impl Origins {
    /// `listed` (`server.allowed_origins`, checked at load) and the origin
    /// of `public_url` (`clarify.public_url`: the server's own face).
    pub fn new(listed: &[String], public_url: Option<&str>) -> Self {
        let mut allowed: Vec<String> = listed.iter().filter_map(|o| normalize(o)).collect();
        let public = public_url.and_then(url_origin);
        allowed.extend(public.clone());
        allowed.sort();
        allowed.dedup();
        Self { allowed, public }
    }

    /// Whether `authority` (a `Host` header's `host[:port]`) names the
    /// public URL's host and port (its scheme's default port implied).
    pub fn is_public_authority(&self, authority: &str) -> bool {
        let Some(public) = &self.public else {
            return false;
        };
        let scheme = public.split_once("://").map_or("", |(s, _)| s);
        normalize(&format!("{scheme}://{authority}")).as_ref() == Some(public)
    }

    /// The origins `cfg` allows.
    pub fn from_config(cfg: &crate::config::Config) -> Self {
        Self::new(
            &cfg.server.allowed_origins,
            cfg.clarify.public_url.as_deref(),
        )
    }

    fn allows(&self, origin: &str) -> bool {
        normalize(origin).is_some_and(|o| self.allowed.contains(&o))
    }
}

/// `origin` as [`Origins`] keeps it: `null`, or `scheme://host[:port]`
/// lowercased without the default port (80 for http, 443 for https); a
/// trailing `/` is dropped. `None` for anything else (a path, userinfo,
/// a bad port).
pub fn normalize(origin: &str) -> Option<String> {
    let o = origin.trim().to_ascii_lowercase();
    if o == "null" {
        return Some(o);
    }
    let o = o.strip_suffix('/').unwrap_or(&o);
    let (scheme, authority) = o.split_once("://")?;
    let scheme_ok = scheme.starts_with(|c: char| c.is_ascii_alphabetic())
        && scheme
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
    if !scheme_ok {
        return None;
    }
    let (host, port) = split_authority(authority)?;
    let host_ok = !host.is_empty()
        && host
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_' | '[' | ']' | ':'));
    if !host_ok {
        return None;
    }
    Some(match port {
        Some(p) if Some(p) != default_port(scheme) => format!("{scheme}://{host}:{p}"),
        _ => format!("{scheme}://{host}"),
    })
}

/// The origin of an `http(s)://` URL (its scheme and authority).
fn url_origin(url: &str) -> Option<String> {
    let (scheme, rest) = url.split_once("://")?;
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    normalize(&format!("{scheme}://{}", &rest[..end]))
}

fn default_port(scheme: &str) -> Option<u16> {
    match scheme {
        "http" | "ws" => Some(80),
        "https" | "wss" => Some(443),
        _ => None,
    }
}

/// `host[:port]` or `[v6][:port]`, split; `None` when the port is not a
/// port or something trails the bracket.
fn split_authority(a: &str) -> Option<(&str, Option<u16>)> {
    let (host, port) = if a.starts_with('[') {
        let close = a.find(']')?;
        let (host, after) = a.split_at(close + 1);
        match after {
            "" => (host, None),
            p => (host, Some(p.strip_prefix(':')?)),
        }
    } else {
        match a.split_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (a, None),
        }
    };
    match port {
        None => Some((host, None)),
        Some(p) if super::host::is_port(p) => Some((host, p.parse().ok())),
        Some(_) => None,
    }
}

/// Whether `origin` names the very authority the request was sent to
/// (`Host`, or the URI's for HTTP/2): the page is this server's own. A port
/// left out on either side is the origin's scheme's default.
fn same_as_authority(origin: &str, authority: &str) -> bool {
    let Some(o) = normalize(origin) else {
        return false;
    };
    let Some((scheme, rest)) = o.split_once("://") else {
        return false;
    };
    let authority = authority.to_ascii_lowercase();
    let (Some((oh, op)), Some((ah, ap))) = (split_authority(rest), split_authority(&authority))
    else {
        return false;
    };
    let default = default_port(scheme);
    oh == ah && op.or(default) == ap.or(default)
}

fn shown(v: &str) -> String {
    v.chars().take(SHOWN_CHARS).collect()
}

/// Why a request that a browser sent from another site must be refused,
/// if it must. `authority` is where the request was sent (`Host`, or the
/// URI's authority).
///
/// 1. `GET`/`HEAD` of an open route passes unlooked at: a person opening an
///    answer link, the inbox or an approval link from chat or mail.
/// 2. `Sec-Fetch-Site` decides when present: `same-origin` and `none` (typed,
///    bookmarked) pass; any other (`same-site`, `cross-site`) passes only for
///    an allowed `Origin`. `same-site` too: `http://localhost:3000` calling
///    `127.0.0.1:8080` is "same-site".
/// 3. Else `Origin` decides: allowed, or this server's own authority.
///    `Origin: null` (file:, sandboxed frames) only when `null` is allowed.
/// 4. Neither header: not a browser (or one too old to say); it passes.
pub fn cross_site(
    method: &Method,
    path: &str,
    headers: &HeaderMap,
    authority: Option<&str>,
    origins: &Origins,
) -> Option<String> {
    let reading = *method == Method::GET || *method == Method::HEAD;
    if reading && Route::of(method, path) == Route::Open {
        return None;
    }
    let origin = headers
        .get(header::ORIGIN)
        .map(|v| v.to_str().unwrap_or("(not text)"));
    if let Some(site) = headers.get("sec-fetch-site") {
        let site = site.to_str().unwrap_or("(not text)");
        if matches!(site, "same-origin" | "none") || origin.is_some_and(|o| origins.allows(o)) {
            return None;
        }
        return Some(format!(
            "Cross-site request refused (Sec-Fetch-Site: {}): a web page cannot call this \
             server; allow its origin with TOOLGATE_ALLOWED_ORIGINS",
            shown(site)
        ));
    }
    let origin = origin?;
    if origins.allows(origin) || authority.is_some_and(|a| same_as_authority(origin, a)) {
        return None;
    }
    Some(format!(
        "Cross-site request refused: Origin {:?} is not this server's; allow it with \
         TOOLGATE_ALLOWED_ORIGINS",
        shown(origin)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(*k, HeaderValue::from_str(v).unwrap());
        }
        h
    }

    fn judge(
        method: Method,
        path: &str,
        pairs: &[(&'static str, &str)],
        authority: &str,
        origins: &Origins,
    ) -> Option<String> {
        cross_site(&method, path, &headers(pairs), Some(authority), origins)
    }

    #[test]
    fn origins_are_normalized() {
        for (given, kept) in [
            ("https://App.Example", Some("https://app.example")),
            ("https://app.example:443", Some("https://app.example")),
            ("https://app.example/", Some("https://app.example")),
            ("http://app.example:80", Some("http://app.example")),
            ("http://localhost:3000", Some("http://localhost:3000")),
            ("http://[::1]:3000", Some("http://[::1]:3000")),
            ("https://app.example:80", Some("https://app.example:80")),
            ("null", Some("null")),
            ("app.example", None),
            ("https://app.example/path", None),
            ("https://user@app.example", None),
            ("https://app.example:99999", None),
            ("https://app.example:", None),
            ("https://", None),
            ("https://[::1]x", None),
        ] {
            assert_eq!(normalize(given).as_deref(), kept, "{given}");
        }
        let o = Origins::new(
            &["https://a.example".into()],
            Some("https://Public.Example:443/toolgate/"),
        );
        assert!(o.allows("https://public.example"));
        assert!(o.allows("https://A.example:443"));
        assert!(!o.allows("http://a.example"));
        assert!(!o.allows("null"));
    }

    #[test]
    fn the_request_authority_is_the_servers_own_origin() {
        for (origin, authority, same) in [
            ("https://x.com", "x.com", true),
            ("http://x.com:80", "x.com", true),
            ("http://x.com", "x.com:80", true),
            ("http://X.com:8080", "x.COM:8080", true),
            ("http://x.com:8080", "x.com", false),
            ("http://x.com", "x.com:8080", false),
            ("http://localhost:3000", "127.0.0.1:3000", false),
            ("http://127.0.0.1:8080", "127.0.0.1:8080", true),
            ("http://[::1]:8080", "[::1]:8080", true),
            ("null", "x.com", false),
        ] {
            assert_eq!(
                same_as_authority(origin, authority),
                same,
                "{origin} {authority}"
            );
        }
    }

    #[test]
    fn pages_of_other_sites_are_refused() {
        let none = Origins::default();
        let p = "/tools/python.execute";
        let here = "127.0.0.1:8080";
        // What Chromium sends for a no-cors fetch from another site.
        let r = judge(
            Method::POST,
            p,
            &[
                ("origin", "http://localhost:9"),
                ("sec-fetch-site", "cross-site"),
                ("sec-fetch-mode", "no-cors"),
            ],
            here,
            &none,
        );
        assert!(
            r.as_deref().unwrap().starts_with(
                "Cross-site request refused (Sec-Fetch-Site: cross-site): a web page cannot call"
            ),
            "{r:?}"
        );
        for pairs in [
            &[("sec-fetch-site", "cross-site")][..],
            &[
                ("sec-fetch-site", "same-site"),
                ("origin", "http://localhost:3000"),
            ],
            &[("sec-fetch-site", "whatever")],
            &[("origin", "https://evil.example")],
            &[("origin", "null")],
            &[("origin", "http://127.0.0.1:8081")],
        ] {
            assert!(
                judge(Method::POST, p, pairs, here, &none).is_some(),
                "{pairs:?}"
            );
            assert!(
                judge(Method::POST, "/mcp", pairs, here, &none).is_some(),
                "{pairs:?}"
            );
            assert!(
                judge(Method::GET, "/tools", pairs, here, &none).is_some(),
                "{pairs:?}"
            );
            // An approver route, and an open route's POST.
            assert!(judge(Method::POST, "/approvals/x/decision", pairs, here, &none).is_some());
            assert!(judge(Method::POST, "/clarifications/x/answer", pairs, here, &none).is_some());
        }
        let r = judge(
            Method::POST,
            p,
            &[("origin", "https://evil.example")],
            here,
            &none,
        );
        assert_eq!(
            r.as_deref(),
            Some(
                "Cross-site request refused: Origin \"https://evil.example\" is not this \
                 server's; allow it with TOOLGATE_ALLOWED_ORIGINS"
            )
        );
        let long = format!("https://{}.example", "a".repeat(500));
        let r = judge(Method::POST, p, &[("origin", &long)], here, &none).unwrap();
        assert!(r.len() < 400, "{r}");
    }

    #[test]
    fn own_pages_navigations_allowed_origins_and_other_clients_pass() {
        let none = Origins::default();
        let p = "/tools/python.execute";
        let here = "127.0.0.1:8080";
        for pairs in [
            // curl, SDKs, MCP clients.
            &[][..],
            &[("sec-fetch-mode", "cors")],
            // The inbox page's own fetches.
            &[
                ("sec-fetch-site", "same-origin"),
                ("origin", "http://127.0.0.1:8080"),
            ],
            &[("sec-fetch-site", "none")],
            // An older browser on this server's own page.
            &[("origin", "http://127.0.0.1:8080")],
        ] {
            assert_eq!(
                judge(Method::POST, p, pairs, here, &none),
                None,
                "{pairs:?}"
            );
        }
        // A person following a link from mail or chat to an open route.
        let nav = [
            ("sec-fetch-site", "cross-site"),
            ("sec-fetch-mode", "navigate"),
        ];
        for path in ["/clarifications/x/answer", "/inbox", "/inbox/x", "/healthz"] {
            assert_eq!(judge(Method::GET, path, &nav, here, &none), None, "{path}");
            assert_eq!(judge(Method::HEAD, path, &nav, here, &none), None, "{path}");
        }
        let allowed = Origins::new(
            &["http://localhost:3000".into(), "null".into()],
            Some("https://toolgate.example/"),
        );
        for pairs in [
            &[
                ("sec-fetch-site", "same-site"),
                ("origin", "http://localhost:3000"),
            ][..],
            &[
                ("sec-fetch-site", "cross-site"),
                ("origin", "https://toolgate.example"),
            ],
            &[("origin", "http://LOCALHOST:3000")],
            &[("origin", "null")],
        ] {
            assert_eq!(
                judge(Method::POST, p, pairs, here, &allowed),
                None,
                "{pairs:?}"
            );
        }
        // Sec-Fetch-Site decides: a cross-site page is refused even when a
        // proxy made its Origin look like this server's Host.
        assert!(
            judge(
                Method::POST,
                p,
                &[
                    ("sec-fetch-site", "cross-site"),
                    ("origin", "http://127.0.0.1:8080")
                ],
                here,
                &none
            )
            .is_some()
        );
    }

    #[test]
    fn the_public_urls_authority_is_known_with_or_without_its_default_port() {
        let o = Origins::new(&[], Some("https://Toolgate.example.com/base/"));
        for yes in ["toolgate.example.com", "TOOLGATE.example.com:443"] {
            assert!(o.is_public_authority(yes), "{yes}");
        }
        for no in [
            "toolgate.example.com:80",
            "toolgate.example.com.evil.example",
            "evil.example",
            "toolgate.example.com@evil.example",
            "",
        ] {
            assert!(!o.is_public_authority(no), "{no}");
        }
        assert!(!Origins::new(&[], None).is_public_authority("localhost"));
        let with_port = Origins::new(&[], Some("http://10.0.0.5:8443"));
        assert!(with_port.is_public_authority("10.0.0.5:8443"));
        assert!(!with_port.is_public_authority("10.0.0.5"));
    }
}
