//! This process's mappings, from `/proc/self/maps`: read once by the
//! zygote and parsed here only, for `hot_pages` (which mappings to scan)
//! and `huge_text` (where the code is, how many mappings there are).

/// One line of `/proc/self/maps`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Mapping {
    pub start: usize,
    pub end: usize,
    /// As the kernel prints them: `r`, `w`, `x` or `-`, then `p` (private)
    /// or `s` (shared).
    pub perms: [u8; 4],
    /// Where the mapping starts in its file (0 for anonymous memory).
    pub offset: u64,
    /// The file's path or the kernel's name (`[heap]`, `[vdso]`); empty
    /// for anonymous memory.
    pub name: String,
}

impl Mapping {
    pub fn readable(&self) -> bool {
        self.perms[0] == b'r'
    }

    pub fn writable(&self) -> bool {
        self.perms[1] == b'w'
    }

    pub fn private(&self) -> bool {
        self.perms[3] == b'p'
    }

    pub fn contains(&self, addr: usize) -> bool {
        self.start <= addr && addr < self.end
    }
}

/// Every mapping of this process, in address order; None if the file
/// cannot be read (no procfs) or has a line [`parse`] refuses: a partial
/// list would undercount the mappings `huge_text` checks room for.
pub(super) fn read() -> Option<Vec<Mapping>> {
    let text = std::fs::read_to_string("/proc/self/maps").ok()?;
    text.lines().map(parse).collect()
}

/// One line, or None if it is not in the kernel's layout (the range, the
/// permissions and the offset are checked; the device and inode only for
/// being there). Fields are `start-end perms offset dev inode [name]`; the
/// name may hold spaces.
pub(super) fn parse(line: &str) -> Option<Mapping> {
    let mut rest = line;
    let mut field = || {
        let t = rest.trim_start_matches(' ');
        let end = t.find(' ').unwrap_or(t.len());
        let (f, r) = t.split_at(end);
        rest = r;
        (!f.is_empty()).then_some(f)
    };
    let (start, end) = field()?.split_once('-')?;
    let perms: [u8; 4] = field()?.as_bytes().try_into().ok()?;
    let offset = u64::from_str_radix(field()?, 16).ok()?;
    let (_dev, _inode) = (field()?, field()?);
    Some(Mapping {
        start: usize::from_str_radix(start, 16).ok()?,
        end: usize::from_str_radix(end, 16).ok()?,
        perms,
        offset,
        name: rest.trim_start_matches(' ').to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_read_strictly() {
        let code = parse("5600000-5601000 r-xp 00001000 08:01 123    /usr/bin/tool gate").unwrap();
        assert_eq!(
            (code.start, code.end, code.offset, code.name.as_str()),
            (0x5600000, 0x5601000, 0x1000, "/usr/bin/tool gate")
        );
        assert!(code.readable() && !code.writable() && code.private());
        assert!(code.contains(0x5600fff) && !code.contains(0x5601000));
        let anon = parse("7f00aa000-7f00ab000 rw-s 00000000 00:00 0 ").unwrap();
        assert!(anon.writable() && !anon.private() && anon.name.is_empty());
        // No trailing space after the inode: the same mapping.
        let bare = parse("7f00aa000-7f00ab000 rw-s 00000000 00:00 0").unwrap();
        assert_eq!(bare, anon);
        let vsyscall = parse("ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0  [vsyscall]");
        assert_eq!(vsyscall.unwrap().name, "[vsyscall]");
        for bad in [
            "garbage",
            "",
            "5600000 r-xp 00001000 08:01 123",
            "5600000-5601000 r-x 00001000 08:01 123",
            "5600000-5601000 r-xp 0000zz00 08:01 123",
            "5600000-5601000 r-xp 00001000 08:01",
        ] {
            assert!(parse(bad).is_none(), "{bad:?}");
        }
    }

    #[test]
    fn this_process_has_its_code_among_its_mappings() {
        let here = this_process_has_its_code_among_its_mappings as fn() as usize;
        let maps = read().expect("procfs");
        let code = maps.iter().find(|m| m.contains(here)).expect("a mapping");
        assert_eq!(&code.perms, b"r-xp");
        assert!(maps.windows(2).all(|w| w[0].end <= w[1].start));
    }
}
