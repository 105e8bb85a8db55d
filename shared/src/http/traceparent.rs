//! W3C Trace Context's `traceparent` header, read: a request that carries
//! one continues its caller's trace (`traces`), and its log lines name it.

/// The header.
pub const HEADER: &str = "traceparent";

/// A caller's trace context, read from its `traceparent`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Parent {
    /// The trace's id.
    pub trace: [u8; 16],
    /// The caller's span.
    pub span: [u8; 8],
    /// Whether the caller sampled its trace (flag bit 0).
    pub sampled: bool,
}

impl Parent {
    /// The header in version 00's form, rebuilt from the parsed bytes:
    /// 55 characters, whatever the caller sent after them.
    pub fn header(&self) -> String {
        let hex = |b: &[u8]| b.iter().map(|x| format!("{x:02x}")).collect::<String>();
        format!(
            "00-{}-{}-{:02x}",
            hex(&self.trace),
            hex(&self.span),
            u8::from(self.sampled)
        )
    }
}

/// A W3C `traceparent` (version 00, or a later one read as 00); `None`
/// when malformed or all zero.
pub fn parse(v: &str) -> Option<Parent> {
    let mut parts = v.split('-');
    let version = parts.next()?;
    let trace = parts.next()?;
    let parent = parts.next()?;
    let flags = parts.next()?;
    let hex = |s: &str, n: usize| {
        s.len() == n && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
    };
    if !hex(version, 2) || version == "ff" || !hex(flags, 2) {
        return None;
    }
    if version == "00" && parts.next().is_some() {
        return None;
    }
    if !hex(trace, 32) || !hex(parent, 16) {
        return None;
    }
    let mut t = [0u8; 16];
    let mut p = [0u8; 8];
    for (i, b) in t.iter_mut().enumerate() {
        *b = u8::from_str_radix(&trace[2 * i..2 * i + 2], 16).ok()?;
    }
    for (i, b) in p.iter_mut().enumerate() {
        *b = u8::from_str_radix(&parent[2 * i..2 * i + 2], 16).ok()?;
    }
    let sampled = u8::from_str_radix(flags, 16).ok()? & 1 == 1;
    (t != [0; 16] && p != [0; 8]).then_some(Parent {
        trace: t,
        span: p,
        sampled,
    })
}

/// The request's one valid `traceparent`: none when it sent none, more
/// than one, or a malformed one (W3C: then the trace starts anew).
pub fn of(headers: &axum::http::HeaderMap) -> Option<Parent> {
    let mut all = headers.get_all(HEADER).iter();
    let one = all.next()?;
    if all.next().is_some() {
        return None;
    }
    parse(one.to_str().ok()?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn traceparents_are_read_as_w3c_writes_them() {
        let p = parse("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01").unwrap();
        assert_eq!(p.trace[0], 0x4b);
        assert_eq!(p.span[7], 0xb7);
        assert!(p.sampled);
        assert!(
            !parse("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00")
                .unwrap()
                .sampled
        );
        for bad in [
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-x",
            "00-4bf92f35-00f067aa0ba902b7-01",
            "",
        ] {
            assert_eq!(parse(bad), None, "{bad}");
        }
        // A later version's extra fields are not carried on: the header
        // logged and sent on is rebuilt from the bytes.
        let later =
            parse("01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-\" forged=yes").unwrap();
        assert_eq!(
            later.header(),
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
        );
        assert_eq!(
            parse(" 00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"),
            None
        );
    }
}
