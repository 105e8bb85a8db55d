//! Compiles the child's syscall rules to a classic BPF program for seccomp
//! that finds a syscall's rules by binary search over the numbers allowed.
//!
//! Why not a chain of comparisons (what `seccompiler` emits): when a filter
//! is installed, the kernel runs it for every syscall number to cache which
//! ones it always allows (`seccomp_cache_prepare`). With 27 syscalls in a
//! chain that took about half of each spare's ~90 µs install; a tree visits
//! ~6 comparisons per number instead of up to every one. Each syscall the
//! script makes takes the same shorter path.
//!
//! Arguments are compared on their low 32 bits: the kernel reads the `int`
//! arguments the rules name (descriptors, flags, ids) as just those, and
//! for `mmap`/`mprotect`'s `prot` (an `unsigned long`) the bit tested,
//! `PROT_EXEC`, is in them.
//!
//! Every jump is one forward byte (0-255): the search (two instructions a
//! syscall) and the argument rules before a syscall's own must fit in it,
//! about 120 syscalls with few argument rules (27 now, 101 instructions in
//! all). A table too big is refused, never compiled wrong.

/// `struct seccomp_data` offsets.
const NR: u32 = 0;
const ARCH: u32 = 4;
const ARGS: u32 = 16;

const KILL: u32 = libc::SECCOMP_RET_KILL_PROCESS;
const ALLOW: u32 = libc::SECCOMP_RET_ALLOW;

const LD_W_ABS: u16 = (libc::BPF_LD | libc::BPF_W | libc::BPF_ABS) as u16;
const ALU_AND_K: u16 = (libc::BPF_ALU | libc::BPF_AND | libc::BPF_K) as u16;
const JMP_JEQ_K: u16 = (libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K) as u16;
const JMP_JGT_K: u16 = (libc::BPF_JMP | libc::BPF_JGT | libc::BPF_K) as u16;
const JMP_JGE_K: u16 = (libc::BPF_JMP | libc::BPF_JGE | libc::BPF_K) as u16;
const RET_K: u16 = (libc::BPF_RET | libc::BPF_K) as u16;

/// One program, as `seccomp(2)` takes it.
pub type Program = Vec<libc::sock_filter>;

/// A test on an argument's low 32 bits.
#[derive(Clone, Copy, Debug)]
pub enum Cmp {
    /// `arg == k`.
    Eq(u32),
    /// Unsigned `arg <= k`.
    Le(u32),
    /// `arg & mask == value`.
    MaskedEq {
        /// The bits tested.
        mask: u32,
        /// What they must be.
        value: u32,
    },
}

/// Argument `arg` (0-5) passes `cmp`.
#[derive(Clone, Copy, Debug)]
pub struct Cond {
    /// Which argument (0-5).
    pub arg: u8,
    /// The test on its low 32 bits.
    pub cmp: Cmp,
}

/// A syscall is allowed when any of its rules holds (all of the rule's
/// conditions); a syscall with no rules is always allowed, one not listed
/// never. Anything not allowed kills the process.
#[derive(Clone, Debug, Default)]
pub struct Rules(pub std::collections::BTreeMap<u32, Vec<Vec<Cond>>>);

/// Where a jump goes, before offsets are known.
#[derive(Clone, Copy)]
enum To {
    Next,
    Kill,
    Allow,
    /// Syscall `i`'s rules (`i` in number order).
    Rules(usize),
    /// The instruction at this index.
    At(usize),
    /// Past the next this many instructions.
    Skip(usize),
}

enum Op {
    Stmt(u16, u32),
    Jump(u16, u32, To, To),
}

/// The program for `arch` (an `AUDIT_ARCH_*` value): a wrong architecture,
/// and every syscall the rules do not allow, kill the process.
pub fn compile(arch: u32, rules: &Rules) -> Result<Program, String> {
    check(rules)?;
    let nrs: Vec<u32> = rules.0.keys().copied().collect();
    let mut ops = vec![
        Op::Stmt(LD_W_ABS, ARCH),
        Op::Jump(JMP_JEQ_K, arch, To::Next, To::Kill),
        Op::Stmt(LD_W_ABS, NR),
    ];
    search(&nrs, 0, rules, &mut ops);
    // The shared returns right after the search, so that its jumps to them
    // stay short; the rules follow.
    let kill = ops.len();
    ops.push(Op::Stmt(RET_K, KILL));
    ops.push(Op::Stmt(RET_K, ALLOW));
    let mut starts = vec![None; nrs.len()];
    for (i, conds) in rules.0.values().enumerate() {
        if conds.is_empty() {
            continue;
        }
        starts[i] = Some(ops.len());
        for rule in conds {
            // A failed test skips the rest of this rule and its allow: to
            // the next rule, or to the kill after the last.
            let mut left: usize = rule.iter().map(cond_len).sum::<usize>() + 1;
            for c in rule {
                left -= cond_len(c);
                ops.push(Op::Stmt(LD_W_ABS, ARGS + 8 * u32::from(c.arg)));
                let fail = To::Skip(left);
                let test = match c.cmp {
                    Cmp::Eq(k) => Op::Jump(JMP_JEQ_K, k, To::Next, fail),
                    Cmp::Le(k) => Op::Jump(JMP_JGT_K, k, fail, To::Next),
                    Cmp::MaskedEq { mask, value } => {
                        ops.push(Op::Stmt(ALU_AND_K, mask));
                        Op::Jump(JMP_JEQ_K, value, To::Next, fail)
                    }
                };
                ops.push(test);
            }
            ops.push(Op::Stmt(RET_K, ALLOW));
        }
        ops.push(Op::Stmt(RET_K, KILL));
    }
    assemble(&ops, kill, &starts)
}

/// Refuses what would compile to something other than meant: an empty
/// allowlist, an empty rule (it would allow always: say so with no rules),
/// an argument past the sixth, a masked test that can never hold.
fn check(rules: &Rules) -> Result<(), String> {
    if rules.0.is_empty() {
        return Err("no syscall is allowed".into());
    }
    for (nr, conds) in &rules.0 {
        for rule in conds {
            if rule.is_empty() {
                return Err(format!("syscall {nr}: a rule with no conditions"));
            }
            for c in rule {
                if c.arg > 5 {
                    return Err(format!("syscall {nr}: argument {} (0-5)", c.arg));
                }
                if let Cmp::MaskedEq { mask, value } = c.cmp
                    && value & !mask != 0
                {
                    return Err(format!(
                        "syscall {nr}: {value:#x} has bits outside {mask:#x}"
                    ));
                }
            }
        }
    }
    Ok(())
}

/// Instructions one condition takes: its load, its test.
fn cond_len(c: &Cond) -> usize {
    match c.cmp {
        Cmp::MaskedEq { .. } => 3,
        _ => 2,
    }
}

/// The search over `nrs` (sorted; the accumulator holds the number): split
/// at the middle, the lower half falling through, down to one number
/// compared for equality. `base` is the index of `nrs[0]` among the
/// table's syscalls.
fn search(nrs: &[u32], base: usize, rules: &Rules, ops: &mut Vec<Op>) {
    if let [nr] = nrs {
        let to = if rules.0[nr].is_empty() {
            To::Allow
        } else {
            To::Rules(base)
        };
        ops.push(Op::Jump(JMP_JEQ_K, *nr, to, To::Kill));
        return;
    }
    let mid = nrs.len() / 2;
    let at = ops.len();
    ops.push(Op::Jump(JMP_JGE_K, nrs[mid], To::Next, To::Next));
    search(&nrs[..mid], base, rules, ops);
    let upper = ops.len();
    search(&nrs[mid..], base + mid, rules, ops);
    ops[at] = Op::Jump(JMP_JGE_K, nrs[mid], To::At(upper), To::Next);
}

/// Resolves targets to the forward offsets classic BPF jumps take (0-255).
/// `kill` is the shared kill; the shared allow follows it.
fn assemble(ops: &[Op], kill: usize, starts: &[Option<usize>]) -> Result<Program, String> {
    let mut prog = Program::with_capacity(ops.len());
    for (pc, op) in ops.iter().enumerate() {
        prog.push(match *op {
            Op::Stmt(code, k) => insn(code, 0, 0, k),
            Op::Jump(code, k, t, f) => {
                let off = |to: To| -> Result<u8, String> {
                    let target = match to {
                        To::Next => Some(pc + 1),
                        To::Kill => Some(kill),
                        To::Allow => Some(kill + 1),
                        To::Rules(i) => starts[i],
                        To::At(i) => Some(i),
                        To::Skip(n) => Some(pc + 1 + n),
                    }
                    .ok_or("a jump to rules that were not emitted")?;
                    target
                        .checked_sub(pc + 1)
                        .and_then(|o| u8::try_from(o).ok())
                        .ok_or_else(|| format!("no forward jump of 0-255 from {pc} to {target}"))
                };
                insn(code, off(t)?, off(f)?, k)
            }
        });
    }
    Ok(prog)
}

fn insn(code: u16, jt: u8, jf: u8, k: u32) -> libc::sock_filter {
    libc::sock_filter { code, jt, jf, k }
}

#[cfg(test)]
#[path = "seccomp_bpf/tests.rs"]
mod tests;
