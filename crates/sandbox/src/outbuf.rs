//! Output streams in shared memory.
//!
//! Each child writes stdout and stderr into a memfd mapped before fork, with
//! the head-and-tail bound of [`toolgate_core::truncate`]. Writes cost no system call,
//! output is bounded while the script runs, and what was written before a
//! SIGKILL at the deadline is still there for the parent to read.

use std::fs::File;
use std::os::unix::fs::FileExt;

use toolgate_core::truncate::{HeadTail, LIMIT, decode_all};

use toolgate_pyvm::vm::Stream;

/// Bytes per stream: a `u64` total, then head and ring of `LIMIT` `u32`s each.
pub const STREAM_BYTES: usize = 8 + 2 * 4 * LIMIT;
/// Bytes of the whole mapping: stdout's stream, then stderr's.
pub const SIZE: usize = 2 * STREAM_BYTES;

fn offset(stream: Stream) -> usize {
    match stream {
        Stream::Stdout => 0,
        Stream::Stderr => STREAM_BYTES,
    }
}

/// The child's view of the mapping.
pub struct OutBuf {
    base: *mut u8,
}

impl OutBuf {
    /// # Safety
    /// `base` must point to a writable, 8-byte aligned mapping of at least
    /// [`SIZE`] bytes that outlives the `OutBuf` and is written by no one else.
    pub unsafe fn from_raw(base: *mut u8) -> Self {
        Self { base }
    }

    /// Appends `text` to `stream`, keeping its head and tail.
    pub fn push(&mut self, stream: Stream, text: &str) {
        // SAFETY: per `from_raw`, the mapping holds SIZE bytes and is 8-byte
        // aligned (mmap returns page-aligned memory); offset(stream) + 8 and
        // the two LIMIT-long u32 arrays after it stay within STREAM_BYTES, so
        // the three slices are in bounds, aligned, and do not overlap.
        unsafe {
            let p = self.base.add(offset(stream));
            let total = &mut *(p as *mut u64);
            let head = std::slice::from_raw_parts_mut(p.add(8) as *mut u32, LIMIT);
            let ring = std::slice::from_raw_parts_mut(p.add(8 + 4 * LIMIT) as *mut u32, LIMIT);
            HeadTail::new(total, head, ring).push_str(text);
        }
    }
}

/// Reads one stream back in the parent, after the child has stopped writing.
/// The child is untrusted: every field is bounds-checked.
pub fn read(file: &File, stream: Stream) -> std::io::Result<String> {
    let base = offset(stream) as u64;
    let mut total = [0u8; 8];
    file.read_exact_at(&mut total, base)?;
    let mut total = u64::from_ne_bytes(total);
    if total == 0 {
        return Ok(String::new());
    }
    // Short streams live wholly in the head; read only what is used (the
    // whole 400 KiB of head and ring cost a short call ~0.1 ms).
    let words_needed = if total <= LIMIT as u64 {
        total as usize
    } else {
        2 * LIMIT
    };
    let mut bytes = vec![0u8; 4 * words_needed];
    file.read_exact_at(&mut bytes, base + 8)?;
    let mut words: Vec<u32> = bytes
        .chunks_exact(4)
        .map(|c| u32::from_ne_bytes([c[0], c[1], c[2], c[3]]))
        .collect();
    if total <= LIMIT as u64 {
        return Ok(decode_all(&words));
    }
    let (head, ring) = words.split_at_mut(LIMIT);
    Ok(HeadTail::new(&mut total, head, ring).render())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use toolgate_core::truncate::OwnedHeadTail;

    /// What the parent reads back equals what the child's writes keep, for
    /// streams shorter than, at, and past the limit.
    #[test]
    fn the_parent_reads_back_what_the_child_kept() {
        let long: String = (0..LIMIT + 7_000)
            .map(|i| char::from_u32(0x61 + (i % 26) as u32).unwrap())
            .collect();
        let exact: String = "é".repeat(LIMIT);
        for text in ["", "héllo\n", exact.as_str(), long.as_str()] {
            let mut mem = vec![0u64; SIZE / 8];
            // SAFETY: `mem` is SIZE bytes, 8-byte aligned, outlives `out`,
            // and nothing else writes it meanwhile.
            let mut out = unsafe { OutBuf::from_raw(mem.as_mut_ptr().cast()) };
            out.push(Stream::Stdout, text);
            let bytes: Vec<u8> = mem.iter().flat_map(|w| w.to_ne_bytes()).collect();
            let path = std::env::temp_dir().join(format!(
                "toolgate-outbuf-{}-{}",
                std::process::id(),
                text.len()
            ));
            File::create(&path).unwrap().write_all(&bytes).unwrap();
            let file = File::open(&path).unwrap();
            let mut want = OwnedHeadTail::default();
            want.push_str(text);
            assert_eq!(read(&file, Stream::Stdout).unwrap(), want.render());
            assert_eq!(read(&file, Stream::Stderr).unwrap(), "");
            let _ = std::fs::remove_file(&path);
        }
    }
}
