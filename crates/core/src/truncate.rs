//! Head-and-tail truncation of output streams (docs/contracts.md#output-truncation).
//!
//! Streams are counted in characters. A stream longer than [`LIMIT`] keeps its
//! head and tail around a marker. [`HeadTail`] does this incrementally over
//! fixed storage, so a stream stays bounded *while* it is written, whatever
//! the storage is (a shared-memory page for the forked sandbox, a `Vec` on
//! wasm or for SSH output).

/// The cap on each of stdout and stderr, in characters.
pub const LIMIT: usize = 51_200;

/// The marker placed between head and tail. The dash is U+2014.
pub fn marker(total: u64) -> String {
    format!("\n\n... [truncated \u{2014} {total} chars total, limit {LIMIT}] ...\n\n")
}

/// The marker for `total` characters, and how many characters of head and of
/// tail stand around it: `half = (LIMIT - len(marker)) // 2`.
fn marker_and_half(total: u64) -> (String, usize) {
    let mark = marker(total);
    let half = (LIMIT - mark.chars().count()) / 2;
    (mark, half)
}

/// Truncates a complete string by the contract's rule.
pub fn truncate(s: &str) -> String {
    let total = s.chars().count();
    if total <= LIMIT {
        return s.to_owned();
    }
    let mut ht = OwnedHeadTail::default();
    ht.push_str(s);
    ht.render()
}

/// Head and tail of a string already known to hold `total` > [`LIMIT`]
/// characters, around the marker; reads only the two ends.
pub fn cut_long(s: &str, total: u64) -> String {
    let (mark, half) = marker_and_half(total);
    let head_end = s.char_indices().nth(half).map_or(s.len(), |(i, _)| i);
    let tail_start = s
        .char_indices()
        .rev()
        .nth(half.saturating_sub(1))
        .map_or(0, |(i, _)| i);
    format!("{}{mark}{}", &s[..head_end], &s[tail_start..])
}

/// Bounded storage for one stream: the first [`LIMIT`] characters, and a ring
/// holding the last [`LIMIT`] characters, plus the total count.
///
/// Characters are stored as `u32` scalar values so that head and tail can be
/// cut at character boundaries without decoding.
pub struct HeadTail<'a> {
    total: &'a mut u64,
    head: &'a mut [u32],
    ring: &'a mut [u32],
}

/// Owned storage for a [`HeadTail`], for callers that keep streams in memory.
pub struct OwnedHeadTail {
    total: u64,
    head: Vec<u32>,
    ring: Vec<u32>,
}

impl Default for OwnedHeadTail {
    fn default() -> Self {
        Self {
            total: 0,
            head: vec![0; LIMIT],
            ring: vec![0; LIMIT],
        }
    }
}

impl OwnedHeadTail {
    /// The storage as a [`HeadTail`].
    pub fn view(&mut self) -> HeadTail<'_> {
        HeadTail::new(&mut self.total, &mut self.head, &mut self.ring)
    }
    /// Appends `s`, keeping the head and the tail.
    pub fn push_str(&mut self, s: &str) {
        self.view().push_str(s);
    }
    /// Characters pushed so far, kept or not.
    pub fn total(&self) -> u64 {
        self.total
    }
    /// The stream as the contract returns it.
    pub fn render(&mut self) -> String {
        self.view().render()
    }
}

/// A stored character; storage an untrusted process wrote may hold invalid
/// scalars, which become U+FFFD.
fn decode(v: &u32) -> char {
    char::from_u32(*v).unwrap_or('\u{FFFD}')
}

/// A stream that was never cut: all its characters are in the head.
pub fn decode_all(head: &[u32]) -> String {
    head.iter().map(decode).collect()
}

impl<'a> HeadTail<'a> {
    /// Wraps existing storage; `head` and `ring` must each hold [`LIMIT`] slots.
    pub fn new(total: &'a mut u64, head: &'a mut [u32], ring: &'a mut [u32]) -> Self {
        assert!(head.len() >= LIMIT && ring.len() >= LIMIT);
        Self { total, head, ring }
    }

    /// Characters pushed so far, kept or not.
    pub fn total(&self) -> u64 {
        *self.total
    }

    /// Appends `s`: the first [`LIMIT`] characters fill the head, and the ring
    /// keeps the last ones.
    pub fn push_str(&mut self, s: &str) {
        for c in s.chars() {
            let n = *self.total;
            let v = c as u32;
            if (n as usize) < LIMIT {
                self.head[n as usize] = v;
            }
            self.ring[(n % LIMIT as u64) as usize] = v;
            *self.total = n + 1;
        }
    }

    /// The stream as the contract returns it. Storage written by an untrusted
    /// process is decoded defensively: invalid scalars become U+FFFD.
    pub fn render(&self) -> String {
        let total = *self.total;
        if total <= LIMIT as u64 {
            return decode_all(&self.head[..total as usize]);
        }
        let (mark, half) = marker_and_half(total);
        let mut out = String::with_capacity(LIMIT + 8);
        out.extend(self.head[..half].iter().map(decode));
        out.push_str(&mark);
        // The ring's oldest slot is at `total % LIMIT`; the last `half`
        // characters end just before it.
        let end = (total % LIMIT as u64) as usize;
        for i in 0..half {
            let idx = (end + LIMIT - half + i) % LIMIT;
            out.push(decode(&self.ring[idx]));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn marker_has_contract_length_for_conformance_case() {
        // 60,001 characters: marker 56 chars, half 25,572 (conformance case).
        let m = marker(60_001);
        assert_eq!(m.chars().count(), 56);
        let s = "a".repeat(60_000) + "\n";
        let t = truncate(&s);
        assert_eq!(t.chars().count(), LIMIT);
        assert_eq!(t.find(&m).map(|b| t[..b].chars().count()), Some(25_572));
        assert!(t.ends_with("a\n"));
    }

    #[test]
    fn cut_long_matches_truncate() {
        let s = "é".repeat(30_000) + &"z".repeat(40_000);
        assert_eq!(cut_long(&s, 70_000), truncate(&s));
    }

    #[test]
    fn exact_limit_is_untouched() {
        let s = "b".repeat(LIMIT);
        assert_eq!(truncate(&s), s);
        let s = "b".repeat(LIMIT + 1);
        assert!(truncate(&s).contains("truncated"));
    }

    #[test]
    fn counts_characters_not_bytes() {
        let s = "é".repeat(LIMIT);
        assert_eq!(truncate(&s), s);
        let s = "é".repeat(LIMIT + 10);
        let t = truncate(&s);
        assert!(t.contains(&format!("{} chars total", LIMIT + 10)));
    }

    #[test]
    fn head_and_tail_keep_their_ends_across_ring_wrap() {
        let mut st = OwnedHeadTail::default();
        st.push_str("HEAD");
        for _ in 0..300 {
            st.push_str(&"x".repeat(1000));
        }
        st.push_str("TAIL");
        let out = st.render();
        assert!(out.starts_with("HEAD"));
        assert!(out.ends_with("TAIL"));
        assert!(out.contains("300008 chars total"));
        assert!(out.chars().count() <= LIMIT);
    }

    #[test]
    fn garbage_storage_decodes_without_panic() {
        let mut total = 3u64;
        let mut head = vec![0xD800u32; LIMIT];
        let mut ring = vec![0u32; LIMIT];
        let ht = HeadTail::new(&mut total, &mut head, &mut ring);
        assert_eq!(ht.render(), "\u{FFFD}\u{FFFD}\u{FFFD}");
    }
}
