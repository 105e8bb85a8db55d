//! The protobuf wire form of OTLP's `ExportTraceServiceRequest`, written by
//! hand for the few messages a span needs (field numbers from
//! opentelemetry-proto's `trace.proto`, `common.proto`, `resource.proto`;
//! the traces test reads what this writes with the official Python
//! bindings). Fields at their default value are left out, as protobuf does.

/// One attribute's value.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// `string_value` (1).
    Str(String),
    /// `bool_value` (2).
    Bool(bool),
    /// `int_value` (3).
    Int(i64),
    /// `double_value` (4).
    Double(f64),
}

/// `Span.SpanKind`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A step inside the process.
    Internal = 1,
    /// A request the process answers.
    Server = 2,
    /// A request the process makes (SSH, a cloud account).
    Client = 3,
}

/// `Status.StatusCode`: unset, or error (OK is for a person to set).
#[derive(Debug, Clone, PartialEq)]
pub struct Failed(pub String);

/// One finished span.
#[derive(Debug, Clone, PartialEq)]
pub struct Span {
    /// 16 bytes, not all zero.
    pub trace_id: [u8; 16],
    /// 8 bytes, not all zero.
    pub span_id: [u8; 8],
    /// The parent's id; `None` for a root.
    pub parent: Option<[u8; 8]>,
    /// What the span is.
    pub name: String,
    /// Its kind.
    pub kind: Kind,
    /// Nanoseconds since the Unix epoch.
    pub start_ns: u64,
    /// Nanoseconds since the Unix epoch.
    pub end_ns: u64,
    /// Its attributes, in the order recorded.
    pub attributes: Vec<(String, Value)>,
    /// Set when it failed, with a message.
    pub failed: Option<Failed>,
}

/// The request body for `spans`, under a resource with `resource` and a
/// scope named `scope` at `version`.
pub fn export_request(
    resource: &[(String, Value)],
    scope: &str,
    version: &str,
    spans: &[Span],
) -> Vec<u8> {
    let mut res = Vec::new();
    for kv in resource {
        message(&mut res, 1, &key_value(kv));
    }
    let mut scope_msg = Vec::new();
    string(&mut scope_msg, 1, scope);
    string(&mut scope_msg, 2, version);
    let mut scope_spans = Vec::new();
    message(&mut scope_spans, 1, &scope_msg);
    for s in spans {
        message(&mut scope_spans, 2, &span(s));
    }
    let mut resource_spans = Vec::new();
    message(&mut resource_spans, 1, &res);
    message(&mut resource_spans, 2, &scope_spans);
    let mut out = Vec::new();
    message(&mut out, 1, &resource_spans);
    out
}

fn span(s: &Span) -> Vec<u8> {
    let mut out = Vec::new();
    bytes(&mut out, 1, &s.trace_id);
    bytes(&mut out, 2, &s.span_id);
    if let Some(p) = &s.parent {
        bytes(&mut out, 4, p);
    }
    string(&mut out, 5, &s.name);
    tag(&mut out, 6, VARINT);
    varint(&mut out, s.kind as u64);
    tag(&mut out, 7, FIXED64);
    out.extend_from_slice(&s.start_ns.to_le_bytes());
    tag(&mut out, 8, FIXED64);
    out.extend_from_slice(&s.end_ns.to_le_bytes());
    for kv in &s.attributes {
        message(&mut out, 9, &key_value(kv));
    }
    if let Some(Failed(why)) = &s.failed {
        let mut status = Vec::new();
        string(&mut status, 2, why);
        tag(&mut status, 3, VARINT);
        varint(&mut status, 2);
        message(&mut out, 15, &status);
    }
    out
}

fn key_value((key, value): &(String, Value)) -> Vec<u8> {
    let mut any = Vec::new();
    match value {
        Value::Str(s) => {
            // A oneof member is written even when empty: it says which.
            tag(&mut any, 1, LEN);
            varint(&mut any, s.len() as u64);
            any.extend_from_slice(s.as_bytes());
        }
        Value::Bool(b) => {
            tag(&mut any, 2, VARINT);
            varint(&mut any, u64::from(*b));
        }
        Value::Int(i) => {
            tag(&mut any, 3, VARINT);
            // int64: two's complement, ten bytes when negative.
            varint(&mut any, *i as u64);
        }
        Value::Double(d) => {
            tag(&mut any, 4, FIXED64);
            any.extend_from_slice(&d.to_le_bytes());
        }
    }
    let mut out = Vec::new();
    string(&mut out, 1, key);
    message(&mut out, 2, &any);
    out
}

const VARINT: u8 = 0;
const FIXED64: u8 = 1;
const LEN: u8 = 2;

fn tag(out: &mut Vec<u8>, field: u32, wire: u8) {
    varint(out, (u64::from(field) << 3) | u64::from(wire));
}

fn varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn bytes(out: &mut Vec<u8>, field: u32, b: &[u8]) {
    tag(out, field, LEN);
    varint(out, b.len() as u64);
    out.extend_from_slice(b);
}

fn string(out: &mut Vec<u8>, field: u32, s: &str) {
    if !s.is_empty() {
        bytes(out, field, s.as_bytes());
    }
}

fn message(out: &mut Vec<u8>, field: u32, m: &[u8]) {
    bytes(out, field, m);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_and_negative_ints_take_protobufs_form() {
        let mut v = Vec::new();
        varint(&mut v, 300);
        assert_eq!(v, [0xac, 0x02]);
        let kv = key_value(&("n".into(), Value::Int(-1)));
        // key "n", then AnyValue { int_value: -1 } in ten bytes.
        assert_eq!(&kv[..3], [0x0a, 1, b'n']);
        assert_eq!(kv[3..6], [0x12, 11, 0x18]);
        assert_eq!(kv.len(), 3 + 3 + 10);
    }

    #[test]
    fn a_root_span_has_no_parent_field() {
        let s = Span {
            trace_id: [1; 16],
            span_id: [2; 8],
            parent: None,
            name: "x".into(),
            kind: Kind::Server,
            start_ns: 1,
            end_ns: 2,
            attributes: vec![],
            failed: None,
        };
        let b = span(&s);
        assert!(!b.windows(2).any(|w| w == [0x22, 8]), "{b:?}");
        assert_eq!(b[..2], [0x0a, 16]);
    }
}
