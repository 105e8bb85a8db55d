//! A cloud account's failure in words, for the agent that called and the
//! operator who reads the log: what failed and what to check, without the
//! MCP client's type names (`Transport [rmcp::transport::worker::…]`).

use std::error::Error;

/// The part of an account's url an agent and `/healthz` may see: scheme,
/// host and port. A hosted MCP server's path or query may hold a key.
pub(super) fn shown_url(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return "the account's url".to_owned();
    };
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    format!("{scheme}://{host}")
}

/// What `e`, met while reaching `url`, means (naming only its
/// [`shown_url`]).
pub(super) fn in_words(full: &str, e: &(dyn Error + 'static)) -> String {
    let url = &shown_url(full);
    // An error's own text may quote the whole url.
    let plain = |e: &(dyn Error + 'static)| plain(e).replace(full, url);
    let mut chain: Vec<&(dyn Error + 'static)> = Vec::new();
    let mut at = Some(e);
    while let Some(err) = at {
        chain.push(err);
        at = next(err);
    }
    let all = chain
        .iter()
        .map(|e| e.to_string())
        .collect::<Vec<_>>()
        .join(" | ");
    let io_kind = chain
        .iter()
        .find_map(|e| e.downcast_ref::<std::io::Error>().map(std::io::Error::kind));
    let reqwest = chain
        .iter()
        .find_map(|e| e.downcast_ref::<reqwest::Error>());
    if all.contains("dns error") || all.contains("failed to lookup address") {
        return format!("the host of {url} cannot be found (DNS): check the account's url");
    }
    if io_kind == Some(std::io::ErrorKind::ConnectionRefused) || all.contains("Connection refused")
    {
        return format!(
            "nothing accepts connections at {url} (connection refused): check that the account's \
             MCP server runs there"
        );
    }
    if reqwest.is_some_and(reqwest::Error::is_timeout)
        || io_kind == Some(std::io::ErrorKind::TimedOut)
    {
        return format!("{url} did not answer in time: check that it is reachable from here");
    }
    if all.contains("authorization required") {
        return in_words_status(url, 401);
    }
    if all.contains("insufficient scope") {
        return in_words_status(url, 403);
    }
    if let Some(status) = reqwest
        .and_then(reqwest::Error::status)
        .map(|s| s.as_u16())
        .or_else(|| http_status(&all))
    {
        return in_words_status(url, status);
    }
    if reqwest.is_some_and(reqwest::Error::is_connect) {
        return format!(
            "cannot connect to {url}: {}",
            plain(chain.last().copied().unwrap_or(e))
        );
    }
    format!("{url}: {}", plain(chain.last().copied().unwrap_or(e)))
}

type HttpError = rmcp::transport::streamable_http_client::StreamableHttpError<reqwest::Error>;

/// The error under `e`: its `source()`, or where rmcp keeps the cause in a
/// field that is not one (the transport error of a failed initialize, the
/// HTTP client's error), so the chain reaches the socket's.
fn next<'a>(e: &'a (dyn Error + 'static)) -> Option<&'a (dyn Error + 'static)> {
    use rmcp::service::ClientInitializeError;
    if let Some(ClientInitializeError::TransportError { error, .. }) = e.downcast_ref() {
        return Some(error);
    }
    if let Some(HttpError::Client(inner)) = e.downcast_ref::<HttpError>() {
        return Some(inner);
    }
    if let Some(HttpError::HttpStatus(status)) = e.downcast_ref::<HttpError>() {
        return Some(status);
    }
    e.source()
}

/// What an HTTP status from `url` means for the account.
fn in_words_status(url: &str, status: u16) -> String {
    match status {
        401 => format!(
            "{url} refused our credentials (HTTP 401): check the account's token (token_env, \
                 or its SSM parameter)"
        ),
        403 => {
            format!("{url} refused access (HTTP 403): check what the account's token may do")
        }
        404 => format!(
            "{url} answered HTTP 404: check the account's url (MCP servers usually serve \
                 a path such as /mcp)"
        ),
        s if s >= 500 => format!(
            "{url} failed (HTTP {s}): the account's MCP server is down or is not an MCP \
                 server"
        ),
        s => format!("{url} answered HTTP {s} where an MCP server was expected"),
    }
}

/// "HTTP 501" in a message that reports a status only in its text.
fn http_status(text: &str) -> Option<u16> {
    text.match_indices("HTTP ").find_map(|(at, _)| {
        let digits: String = text[at + 5..]
            .chars()
            .take_while(char::is_ascii_digit)
            .collect();
        (digits.len() == 3).then(|| digits.parse().ok()).flatten()
    })
}

/// An error's own words, with any bracketed type names taken out.
fn plain(e: &(dyn Error + 'static)) -> String {
    let text = e.to_string();
    let mut out = String::with_capacity(text.len());
    let mut depth = 0usize;
    for c in text.chars() {
        match c {
            '[' => depth += 1,
            ']' if depth > 0 => depth -= 1,
            _ if depth == 0 => out.push(c),
            _ => {}
        }
    }
    out.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug)]
    struct Wrapped(&'static str, Option<std::io::Error>);
    impl std::fmt::Display for Wrapped {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str(self.0)
        }
    }
    impl Error for Wrapped {
        fn source(&self) -> Option<&(dyn Error + 'static)> {
            self.1.as_ref().map(|e| e as _)
        }
    }

    #[test]
    fn failures_read_as_what_to_check() {
        let url = "http://user:key@127.0.0.1:9/mcp/secret-key?token=x";
        let refused = Wrapped(
            "Transport [rmcp::transport::worker::WorkerTransport<X>] error: Client error",
            Some(std::io::Error::from(std::io::ErrorKind::ConnectionRefused)),
        );
        assert_eq!(
            in_words(url, &refused),
            "nothing accepts connections at http://127.0.0.1:9 (connection refused): check \
             that the account's MCP server runs there"
        );
        let status = Wrapped(
            "Transport [rmcp::X<Y>] error: HTTP 501, when send initialize request",
            None,
        );
        assert_eq!(
            in_words(url, &status),
            "http://127.0.0.1:9 failed (HTTP 501): the account's MCP server is down or is not \
             an MCP server"
        );
        let other = Wrapped("Transport [rmcp::X<Y>] error: something odd", None);
        assert_eq!(
            in_words(url, &other),
            "http://127.0.0.1:9: Transport error: something odd"
        );
    }
}
