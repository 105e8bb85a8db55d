//! The `_sre` engine (vendor/rustpython-sre_engine) against crafted code
//! (#51): its validator passes every program RustPython's compiler emits,
//! and no program it passes reads outside the subject or panics. The engine's
//! own cursor checks are tested apart from the validator, on unvalidated
//! programs. Subjects sit against `PROT_NONE` guard pages, so a read one byte
//! past either end faults; each batch runs in a forked child, which records
//! the case it is on in a shared page, so the parent names the input of a
//! fault, a panic or a hang.
//!
//! `SRE_FUZZ_SEED` and `SRE_FUZZ_ITERS` (default 20,000 mutants) vary the run.

use rustpython_sre_engine::{
    InvalidCode, Request, SearchIter, SreError, State, StrDrive, validate,
};
use rustpython_vm::common::wtf8::Wtf8;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Once};
use std::time::{Duration, Instant};
use toolgate_core::files::Files;
use toolgate_pyvm::vm::{Stream, WarmVm};

/// Patterns whose compiled code seeds the mutants: every construct the
/// compiler emits (INFO prefixes and charsets, BIGCHARSET, each repeat,
/// possessive and atomic groups, lookarounds, conditionals, back references).
const PATTERNS: &[&str] = &[
    "a",
    "abc",
    "hello world",
    "ab(c)d",
    "a(b)c(d)e",
    "(?:ab)c",
    "[a-z]+",
    "[^a-z0-9_]",
    r"\d+\s*\w",
    "[\u{100}-\u{200}]x",
    r"[^\W\d]",
    "[\u{100}\u{300}-\u{310}\u{2000}-\u{2fff}]",
    "[α-ωА-я]+",
    "^a",
    "a$",
    r"\bfoo\b",
    r"\Bx\B",
    r"\Aab\Z",
    "(?m)^x$",
    "a*",
    "a+?",
    "a{2,5}",
    "a{3}",
    "(ab)*",
    "(?:ab)+?c",
    "(a|b)*c",
    "x*?y",
    "(?:a?)*?y",
    "(?:a?)*y",
    ".*foo",
    ".+?",
    "(?s).*",
    "a*+b",
    "(?>ab|a)c",
    "(?:ab)++",
    "a{2,}+",
    "(?>a+)b",
    "(?=a)a",
    r"(?!b)\w",
    "(?<=ab)c",
    "(?<!x)y",
    r"(?<=\d{3})z",
    r"(a)\1",
    r"(?P<n>\w+) (?P=n)",
    "(a)|b",
    "(a)?(?(1)b|c)",
    "(a)?(?(1)b)",
    r"(a)\1(?i:\1)",
    "cat|dog|bird",
    "a|ab|abc",
    "[ab]c|d",
    r"(\w+)@(\w+)\.com",
    r"(?:(a)|b)*?\1",
    r"^(\d{4})-(\d\d)-(\d\d)$",
    "ä",
    "(?i)straße",
    "(?i)[k]",
    "x(?:y|z)*?w",
    "(a*)*b",
    "((a)|(b))+",
    "a.c",
    "[.]",
];

/// The flag sets each pattern is compiled under (those that fail to compile
/// are skipped); bytes patterns also take LOCALE.
const SEED_SCRIPT: &str = r#"
import re, json
from re import _compiler, _parser
out = []
def add(p, f):
    try:
        s = _parser.parse(p, f)
        code = _compiler._code(s, f)
    except Exception:
        return
    out.append([[int(c) for c in code], s.state.groups - 1])
for p in json.loads(PATTERNS):
    for f in (0, re.I, re.M | re.S, re.A, re.I | re.A, re.X):
        add(p, f)
    try:
        b = p.encode('ascii')
    except UnicodeEncodeError:
        continue
    for f in (0, re.I, re.L, re.L | re.I):
        add(b, f)
print(json.dumps(out))
"#;

/// Every seed: (code, groups), as RustPython's own `re` compiles them.
fn seeds() -> Vec<(Vec<u32>, usize)> {
    let allowed: Vec<String> = toolgate_core::allowlist::DEFAULT_MODULES
        .map(String::from)
        .to_vec();
    let vm = WarmVm::new(&allowed).expect("warm");
    let patterns = serde_json::to_string(PATTERNS).unwrap();
    let script = format!(
        "PATTERNS = {}\n{SEED_SCRIPT}",
        serde_json::to_string(&patterns).unwrap()
    );
    let out = Arc::new(Mutex::new((String::new(), String::new())));
    let sink = out.clone();
    let o = vm.run(&script, &Files::new(), 0, None, move |s, t| {
        let mut o = sink.lock().unwrap();
        match s {
            Stream::Stdout => o.0.push_str(t),
            Stream::Stderr => o.1.push_str(t),
        }
    });
    let (stdout, stderr) = out.lock().unwrap().clone();
    assert_eq!(o.exit_code, 0, "{stderr}");
    let seeds: Vec<(Vec<u32>, usize)> = serde_json::from_str(&stdout).expect("seed json");
    assert!(seeds.len() > 3 * PATTERNS.len(), "{} seeds", seeds.len());
    seeds
}

/// xorshift64*: a small, seeded, reproducible stream.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// A word worth trying at `at` in `code`: sizes at and around the code's
/// edges, the word's neighbours, any opcode, huge values.
fn interesting(rng: &mut Rng, code: &[u32], at: usize) -> u32 {
    let len = code.len() as u32;
    let here = code.get(at).copied().unwrap_or(0);
    match rng.below(10) {
        0 => 0,
        1 => 1,
        2 => len.wrapping_sub(at as u32),
        3 => len.wrapping_sub(at as u32).wrapping_add(1),
        4 => here.wrapping_add(1),
        5 => here.wrapping_sub(1),
        6 => 1 << 31,
        7 => u32::MAX,
        8 => rng.below(43) as u32,
        _ => rng.below(300) as u32,
    }
}

/// One to three edits of a seed: a word replaced, inserted or deleted, or a
/// slice of another seed spliced in.
fn mutate(rng: &mut Rng, seeds: &[(Vec<u32>, usize)], code: &[u32]) -> Vec<u32> {
    let mut code = code.to_vec();
    for _ in 0..1 + rng.below(3) {
        let at = rng.below(code.len() + 1);
        match rng.below(5) {
            0 | 1 if at < code.len() => code[at] = interesting(rng, &code, at),
            2 => {
                let w = interesting(rng, &code, at);
                code.insert(at, w);
            }
            3 if at < code.len() => {
                code.remove(at);
            }
            _ => {
                let other = &seeds[rng.below(seeds.len())].0;
                let from = rng.below(other.len());
                let n = rng.below(8).min(other.len() - from);
                let cut = rng.below(4).min(code.len() - at.min(code.len()));
                let at = at.min(code.len());
                code.splice(at..at + cut, other[from..from + n].iter().copied());
            }
        }
    }
    code
}

/// Three pages, the outer two `PROT_NONE`: a subject copied to the end of
/// the middle page faults on any read past its end, one copied to its start
/// on any read before it.
struct Guarded {
    base: *mut u8,
    page: usize,
}

impl Guarded {
    fn new() -> Self {
        // SAFETY: sysconf has no preconditions.
        let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) } as usize;
        // SAFETY: a fresh private anonymous mapping; nothing else refers to it.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                3 * page,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        assert_ne!(base, libc::MAP_FAILED);
        let base = base.cast::<u8>();
        // SAFETY: both ranges are pages of the mapping made above.
        unsafe {
            assert_eq!(libc::mprotect(base.cast(), page, libc::PROT_NONE), 0);
            assert_eq!(
                libc::mprotect(base.add(2 * page).cast(), page, libc::PROT_NONE),
                0
            );
        }
        Guarded { base, page }
    }

    /// `bytes` copied against the guard after (`at_end`) or before it.
    fn place(&mut self, bytes: &[u8], at_end: bool) -> &[u8] {
        assert!(bytes.len() <= self.page);
        let middle = self.page;
        let start = if at_end {
            middle + self.page - bytes.len()
        } else {
            middle
        };
        // SAFETY: `start..start + len` lies in the writable middle page, and
        // the slice returned borrows `self`, so no second placement overlaps it.
        unsafe {
            let dst = self.base.add(start);
            std::ptr::copy_nonoverlapping(bytes.as_ptr(), dst, bytes.len());
            std::slice::from_raw_parts(dst, bytes.len())
        }
    }
}

const SUBJECTS: &[&str] = &[
    "",
    "a",
    "y",
    "abcabc xyz_12\nfoo foo@bar.com",
    "aaaaaaaaab",
    "añb€c😀d ßtraSSe k",
    "2026-12-05 ab c abc",
];

/// What one run broke, if anything: the engine's error flag on code the
/// validator passed, or a match outside the subject.
fn check_run<S: StrDrive>(
    req: Request<'_, S>,
    validated: bool,
    run: impl Fn(&mut State, Request<'_, S>) -> bool,
) -> Result<(), String> {
    let mut state = State::default();
    let matched = run(&mut state, req);
    if validated && state.error.is_some() {
        return Err(format!(
            "the engine refused code the validator passed: {:?}",
            state.error
        ));
    }
    if matched && (state.start > state.cursor.position || state.cursor.position > req.end) {
        return Err(format!(
            "a match at {}..{} in a subject of {}",
            state.start, state.cursor.position, req.end
        ));
    }
    Ok(())
}

/// Every way `_sre` drives the engine, over one subject.
fn run_all<S: StrDrive>(s: S, code: &[u32], validated: bool) -> Result<(), String> {
    let n = s.count();
    for (start, match_all) in [(0, false), (1.min(n), false), (0, true)] {
        let req = Request::new(s, start, usize::MAX, code, match_all);
        check_run(req, validated, |st, r| st.py_match(&r))?;
        check_run(req, validated, |st, r| st.search(r))?;
    }
    let mut iter = SearchIter {
        req: Request::new(s, 0, usize::MAX, code, false),
        state: State::default(),
    };
    // Code can match empty at one place for ever (CPython's too: an INFO
    // prefix that skips none of itself); the walk stops after more matches
    // than the subject has places.
    let mut found = 0;
    while found <= 2 * (n + 2) && iter.next().is_some() {
        found += 1;
    }
    if validated && iter.state.error.is_some() {
        return Err("the engine refused code the validator passed (SearchIter)".into());
    }
    Ok(())
}

/// `code` over every subject, placed against either guard, by every drive
/// the subject suits.
fn run_guarded(g: &mut Guarded, code: &[u32], validated: bool) -> Result<(), String> {
    let mut extra: Vec<&[u8]> = vec![b"\xff\x00a\xfe", b"ab\xffab"];
    extra.extend(SUBJECTS.iter().map(|s| s.as_bytes()));
    for bytes in extra {
        for at_end in [true, false] {
            let subject = g.place(bytes, at_end);
            run_all(subject, code, validated)?;
            if let Ok(text) = std::str::from_utf8(subject) {
                run_all(text, code, validated)?;
                run_all(Wtf8::new(text), code, validated)?;
            }
        }
    }
    Ok(())
}

/// A page shared with a forked child: the case it is on, and how it ended.
struct Shared(*mut AtomicU64);

impl Shared {
    fn new() -> Self {
        // SAFETY: a fresh shared anonymous page, zeroed, aligned for u64.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                4096,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        assert_ne!(p, libc::MAP_FAILED);
        Shared(p.cast())
    }

    fn slot(&self, i: usize) -> &AtomicU64 {
        assert!(i < 512);
        // SAFETY: the page holds 512 u64s, live as long as `self` (never unmapped).
        unsafe { &*self.0.add(i) }
    }
}

/// Set in a forked child only: its panics are reported through the shared
/// page, not printed.
static IN_FUZZ_CHILD: AtomicBool = AtomicBool::new(false);

/// Panics in a fuzzing child print nothing (the unvalidated runs expect
/// many). Installed once, in the parent, around the harness's own hook:
/// setting a hook in the child could wait for good on a lock another test
/// thread held when it forked.
fn quiet_panics_in_children() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if !IN_FUZZ_CHILD.load(Ordering::Relaxed) {
                previous(info);
            }
        }));
    });
}

/// Case numbers above this are "done": the child finished every case.
const DONE: u64 = u64::MAX;

/// How a batch in a child ended early: at which case, and why.
#[derive(Debug, PartialEq)]
enum Stop {
    /// A fault, a panic or a failed check.
    Failed(usize, String),
    /// One case ran longer than the stall budget.
    Hung(usize),
    /// One case ran out of memory (the allocator's abort), as CPython's
    /// engine would with a MemoryError: a repeat whose minimum is in the
    /// billions grows the backtracking stack until memory runs out.
    OutOfMemory(usize),
}

/// Runs cases `from..cases` in a forked child with `each`; `None` when all
/// passed, else the first that faulted, panicked, failed a check or stayed
/// on one case longer than `stall`.
fn in_child(
    from: usize,
    cases: usize,
    stall: Duration,
    each: impl Fn(&mut Guarded, usize) -> Result<(), String>,
) -> Option<Stop> {
    let shared = Shared::new();
    quiet_panics_in_children();
    // The child's stderr, to tell the allocator's abort from other ends.
    static LOGS: AtomicU64 = AtomicU64::new(0);
    let log_path = std::env::temp_dir().join(format!(
        "toolgate-sre-fuzz-{}-{}",
        std::process::id(),
        LOGS.fetch_add(1, Ordering::Relaxed)
    ));
    let log = std::fs::File::create(&log_path).expect("child log");
    // SAFETY: fork in a test; the child runs `each` alone and leaves with
    // _exit, so nothing of the parent's (threads, locks) is used after it.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0);
    if pid == 0 {
        IN_FUZZ_CHILD.store(true, Ordering::Relaxed);
        // SAFETY: both descriptors are open; fd 2 now writes to the log.
        unsafe { libc::dup2(std::os::fd::AsRawFd::as_raw_fd(&log), 2) };
        // A runaway allocation ends the child, which the parent reports.
        let limit = libc::rlimit {
            rlim_cur: 2 << 30,
            rlim_max: 2 << 30,
        };
        // SAFETY: setrlimit with a valid struct.
        unsafe { libc::setrlimit(libc::RLIMIT_AS, &limit) };
        let mut g = Guarded::new();
        for case in from..cases {
            // Case n is stored as n + 1: 0 is "not started".
            shared.slot(0).store(case as u64 + 1, Ordering::SeqCst);
            let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| each(&mut g, case)));
            let why = match r {
                Ok(Ok(())) => continue,
                Ok(Err(why)) => why,
                Err(_) => "panicked".to_owned(),
            };
            for (i, b) in why.bytes().take(4000).enumerate() {
                shared
                    .slot(8 + i / 8)
                    .fetch_or(u64::from(b) << (8 * (i % 8)), Ordering::SeqCst);
            }
            shared.slot(1).store(1, Ordering::SeqCst);
            // SAFETY: _exit has no preconditions.
            unsafe { libc::_exit(3) }
        }
        shared.slot(0).store(DONE, Ordering::SeqCst);
        // SAFETY: as above.
        unsafe { libc::_exit(0) }
    }
    let mut status = 0;
    let mut on = (u64::MAX - 1, Instant::now());
    loop {
        // SAFETY: polling our own child with a valid status pointer.
        let r = unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) };
        if r == pid {
            break;
        }
        let case = shared.slot(0).load(Ordering::SeqCst);
        if case != on.0 {
            on = (case, Instant::now());
        } else if on.1.elapsed() > stall {
            // SAFETY: our own child.
            unsafe {
                libc::kill(pid, libc::SIGKILL);
                libc::waitpid(pid, &mut status, 0);
            }
            assert_ne!(case, 0, "the child stalled before its first case");
            return Some(Stop::Hung(case as usize - 1));
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let stderr = std::fs::read_to_string(&log_path).unwrap_or_default();
    let _ = std::fs::remove_file(&log_path);
    let case = shared.slot(0).load(Ordering::SeqCst);
    if libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0 && case == DONE {
        return None;
    }
    assert_ne!(
        case, 0,
        "the child ended before its first case: {status:#x}"
    );
    let case = case - 1;
    if libc::WIFSIGNALED(status)
        && libc::WTERMSIG(status) == libc::SIGABRT
        && stderr.contains("memory allocation of")
    {
        return Some(Stop::OutOfMemory(case as usize));
    }
    let why = if shared.slot(1).load(Ordering::SeqCst) == 1 {
        let bytes: Vec<u8> = (0..500)
            .flat_map(|i| shared.slot(8 + i).load(Ordering::SeqCst).to_le_bytes())
            .take_while(|&b| b != 0)
            .collect();
        String::from_utf8_lossy(&bytes).into_owned()
    } else if libc::WIFSIGNALED(status) {
        format!(
            "killed by signal {} (a read outside the subject faults): {stderr}",
            libc::WTERMSIG(status)
        )
    } else {
        format!("exit status {status:#x}")
    };
    Some(Stop::Failed(case as usize, why))
}

/// Runs `cases` as [`in_child`] does, going on past the cases that hung or
/// ran out of memory (returned, for the log); the first other stop is the
/// error.
fn in_children(
    cases: usize,
    stall: Duration,
    each: impl Fn(&mut Guarded, usize) -> Result<(), String> + Copy,
) -> Result<Vec<Stop>, Stop> {
    let (mut from, mut passed) = (0, Vec::new());
    while let Some(stop) = in_child(from, cases, stall, each) {
        match stop {
            Stop::Hung(case) | Stop::OutOfMemory(case) => {
                from = case + 1;
                passed.push(stop);
            }
            Stop::Failed(..) => return Err(stop),
        }
    }
    Ok(passed)
}

/// The red team's program (#51): an INFO prefix 'a' whose skip (64) passes
/// its length, then 64 LITERAL 'a' and a probe for one heap byte.
fn prefix_skip_program(probe: u32) -> Vec<u32> {
    let mut code = vec![14, 8, 1, 1, 1, 1, 64, 97, 0];
    for _ in 0..64 {
        code.extend([16, 97]);
    }
    code.extend([16, probe, 1]);
    code
}

#[test]
fn every_program_the_compiler_emits_is_valid() {
    let seeds = seeds();
    let refused: Vec<_> = seeds
        .iter()
        .filter(|(code, groups)| validate(code, *groups).is_err())
        .collect();
    assert!(refused.is_empty(), "refused: {refused:?}");
    // And they run: nothing in them trips the engine's own checks.
    let stop = in_child(0, seeds.len(), STALL, |g, i| {
        run_guarded(g, &seeds[i].0, true)
    });
    assert_eq!(stop, None, "seeds: {seeds:?}");
}

#[test]
fn the_red_teams_prefix_skip_is_refused_and_reads_nothing_unvalidated() {
    assert_eq!(
        validate(&prefix_skip_program(b'x'.into()), 0),
        Err(InvalidCode)
    );
    // Without the validator the engine alone must hold: the 1-byte subject
    // sits against the guard page, and every probe finds no match.
    let stop = in_child(0, 256, STALL, |g, probe| {
        let code = prefix_skip_program(probe as u32);
        for at_end in [true, false] {
            let subject = g.place(b"a", at_end);
            let mut state = State::default();
            let req = Request::new(subject, 0, usize::MAX, &code, false);
            if state.search(req) {
                return Err(format!("probe {probe} matched past the subject"));
            }
            if state.error != Some(SreError::Illegal) {
                return Err("the engine ran the skip instead of refusing it".into());
            }
        }
        Ok(())
    });
    assert_eq!(stop, None);
}

/// PATCHES.md 5: code whose INFO prefix it does not match (found by
/// tests/tests/fuzz.rs, seed 51: `(a)\1` with its literal removed) matches
/// empty at each "a"; a walk over the subject must still move on, as
/// `findall` does, instead of finding the same empty match for ever.
#[test]
fn an_empty_match_at_a_prefix_is_not_found_twice() {
    let code = [14, 8, 1, 2, 2, 1, 0, 97, 0, 17, 0, 17, 1, 1, 11, 0, 1];
    assert_eq!(validate(&code, 1), Ok(()));
    let subject: &[u8] = b"abcabc";
    let mut iter = SearchIter {
        req: Request::new(subject, 0, usize::MAX, &code, false),
        state: State::default(),
    };
    let mut at = Vec::new();
    while at.len() < 100 && iter.next().is_some() {
        at.push(iter.state.start);
    }
    assert_eq!(at, [0, 3], "{at:?}");
}

/// `n` mutants of the seeds, each with its seed's group count.
fn mutants(seeds: &[(Vec<u32>, usize)], seed: u64, n: usize) -> Vec<(Vec<u32>, usize)> {
    // Spread the seed over the state's bits (seeds 2 and 3 must differ).
    let mut rng = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
    (0..n)
        .map(|_| {
            let (code, groups) = &seeds[rng.below(seeds.len())];
            (mutate(&mut rng, seeds, code), *groups)
        })
        .collect()
}

/// Longest one case may take: the subjects are short, so even a
/// backtracking blow-up ends well within it.
const STALL: Duration = Duration::from_secs(10);

/// Mutants of the seeds: those the validator passes must run without a
/// read outside the subject, a panic, the engine's error flag or a hang.
#[test]
fn crafted_programs_the_validator_passes_run_safely() {
    let seeds = seeds();
    let iters = env_u64("SRE_FUZZ_ITERS", 20_000) as usize;
    let seed = env_u64("SRE_FUZZ_SEED", 0x005e_ed51);
    let valid: Vec<(Vec<u32>, usize)> = mutants(&seeds, seed, iters)
        .into_iter()
        .filter(|(code, groups)| validate(code, *groups).is_ok())
        .collect();
    eprintln!(
        "sre fuzz: seed {seed:#x}, {iters} mutants, {} valid",
        valid.len()
    );
    assert!(
        valid.len() > iters / 50,
        "too few valid mutants to mean anything"
    );
    match in_children(valid.len(), STALL, |g, i| run_guarded(g, &valid[i].0, true)) {
        Ok(passed) => {
            eprintln!(
                "sre fuzz: {} ran out of time or memory, as CPython may:",
                passed.len()
            );
            for stop in passed {
                if let Stop::Hung(case) | Stop::OutOfMemory(case) = stop {
                    eprintln!("  {stop:?}: {:?}", valid[case].0);
                }
            }
        }
        Err(stop @ (Stop::Failed(case, _) | Stop::Hung(case) | Stop::OutOfMemory(case))) => {
            panic!(
                "{stop:?} (SRE_FUZZ_SEED={seed:#x}): groups {}, code {:?}",
                valid[case].1, valid[case].0
            )
        }
    }
}

/// The same kind of mutants, unvalidated: the engine may refuse them (its
/// error flag), panic on a code index or loop, but its cursor checks alone
/// must keep every read inside the subject.
#[test]
fn unvalidated_programs_never_read_outside_the_subject() {
    let seeds = seeds();
    let iters = env_u64("SRE_FUZZ_ITERS", 20_000) as usize / 4;
    let seed = env_u64("SRE_FUZZ_SEED", 0x005e_ed51) ^ 0xa5a5;
    let raw = mutants(&seeds, seed, iters);
    let each = |g: &mut Guarded, i: usize| {
        // Panics are not reads; only faults and bad spans count here.
        match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            run_guarded(g, &raw[i].0, false)
        })) {
            Ok(Err(why)) => Err(why),
            _ => Ok(()),
        }
    };
    match in_children(raw.len(), Duration::from_secs(2), each) {
        Ok(passed) => eprintln!(
            "sre fuzz, unvalidated: {iters} mutants, {} ran out of time or memory",
            passed.len()
        ),
        Err(stop @ (Stop::Failed(case, _) | Stop::Hung(case) | Stop::OutOfMemory(case))) => {
            panic!(
                "unvalidated: {stop:?} (SRE_FUZZ_SEED={:#x}): {:?}",
                seed ^ 0xa5a5,
                raw[case].0
            )
        }
    }
}
