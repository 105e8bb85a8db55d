//! W3C Trace Context's `traceparent` header, read: a request that carries
//! one continues its caller's trace (`traces`), and its log lines name it.

/// The header.
pub const HEADER: &str = "traceparent";

/// A W3C `traceparent` (version 00, or a later one read as 00): the trace
/// id and the caller's span id; `None` when malformed or all zero.
pub fn parse(v: &str) -> Option<([u8; 16], [u8; 8])> {
    let mut parts = v.trim().split('-');
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
    (t != [0; 16] && p != [0; 8]).then_some((t, p))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn traceparents_are_read_as_w3c_writes_them() {
        let (t, p) = parse("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01").unwrap();
        assert_eq!(t[0], 0x4b);
        assert_eq!(p[7], 0xb7);
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
        assert!(parse("01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-later").is_some());
    }
}
