use super::*;

/// What the program should decide, from the rules alone.
fn allows(rules: &Rules, nr: u32, args: &[u64; 6]) -> bool {
    let holds = |c: &Cond| {
        let v = args[usize::from(c.arg)] as u32;
        match c.cmp {
            Cmp::Eq(k) => v == k,
            Cmp::Le(k) => v <= k,
            Cmp::MaskedEq { mask, value } => v & mask == value,
        }
    };
    rules
        .0
        .get(&nr)
        .is_some_and(|conds| conds.is_empty() || conds.iter().any(|r| r.iter().all(holds)))
}

/// The instructions `compile` emits, run as the kernel would on a
/// `struct seccomp_data` (nr at 0, arch at 4, the arguments' low halves at
/// 16 + 8i): the decision and how many instructions it took. Decoded with
/// libc's constants, not the compiler's.
fn run(prog: &Program, arch: u32, nr: u32, args: &[u64; 6]) -> (u32, usize) {
    let word = |off: u32| -> u32 {
        match off {
            0 => nr,
            4 => arch,
            16 | 24 | 32 | 40 | 48 | 56 => args[((off - 16) / 8) as usize] as u32,
            o => panic!("a load at {o}"),
        }
    };
    let (mut acc, mut pc, mut steps) = (0u32, 0usize, 0usize);
    loop {
        let i = prog[pc];
        steps += 1;
        let jump = |taken: bool| pc + 1 + usize::from(if taken { i.jt } else { i.jf });
        let code = u32::from(i.code);
        pc = match code {
            c if c == libc::BPF_LD | libc::BPF_W | libc::BPF_ABS => {
                acc = word(i.k);
                pc + 1
            }
            c if c == libc::BPF_ALU | libc::BPF_AND | libc::BPF_K => {
                acc &= i.k;
                pc + 1
            }
            c if c == libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K => jump(acc == i.k),
            c if c == libc::BPF_JMP | libc::BPF_JGT | libc::BPF_K => jump(acc > i.k),
            c if c == libc::BPF_JMP | libc::BPF_JGE | libc::BPF_K => jump(acc >= i.k),
            c if c == libc::BPF_RET | libc::BPF_K => return (i.k, steps),
            c => panic!("opcode {c:#x}"),
        };
    }
}

const ARCH_OK: u32 = 0xC000_003E;

/// Rules of every shape: always allowed, one test, tests of each kind,
/// several rules, and numbers far apart.
fn shapes() -> Rules {
    let mut r = Rules::default();
    for nr in [0, 1, 2, 9, 10, 60, 61, 231, 335, 400] {
        r.0.insert(nr, vec![]);
    }
    let c = |arg, cmp| Cond { arg, cmp };
    r.0.insert(3, vec![vec![c(0, Cmp::Eq(3))], vec![c(0, Cmp::Eq(2))]]);
    r.0.insert(45, vec![vec![c(0, Cmp::Eq(3)), c(3, Cmp::Eq(0x42))]]);
    r.0.insert(228, vec![vec![c(0, Cmp::Le(11))]]);
    r.0.insert(
        11,
        vec![vec![
            c(2, Cmp::MaskedEq { mask: 4, value: 0 }),
            c(5, Cmp::Le(7)),
        ]],
    );
    r.0.insert(
        234,
        vec![
            vec![
                c(0, Cmp::Eq(77)),
                c(
                    1,
                    Cmp::MaskedEq {
                        mask: 0xF0,
                        value: 0x30,
                    },
                ),
            ],
            vec![c(4, Cmp::Eq(u32::MAX))],
        ],
    );
    r
}

/// Values around every constant the rules name, and some with high bits set
/// (the rules read an argument's low 32 bits, as the kernel does the ints).
fn probes() -> Vec<u64> {
    let mut v = vec![
        0, 1, 2, 3, 4, 5, 7, 8, 11, 12, 15, 16, 0x30, 0x34, 0x3F, 0x42, 0x43, 76, 77, 78,
    ];
    v.extend([
        u32::MAX as u64,
        u32::MAX as u64 - 1,
        1 << 32,
        (1 << 32) | 3,
        u64::MAX,
    ]);
    v.extend([
        super::super::heap_reserve::PEEK_FLAGS as u64,
        std::process::id() as u64,
    ]);
    v.extend([
        libc::PROT_READ as u64,
        (libc::PROT_READ | libc::PROT_EXEC) as u64,
    ]);
    v
}

#[test]
fn the_program_decides_as_its_rules_do() {
    let pid = std::process::id() as i32;
    for rules in [shapes(), super::super::seccomp::rules(pid)] {
        let prog = compile(ARCH_OK, &rules).unwrap();
        let vals = probes();
        // A small LCG picks argument tuples; the same every run.
        let mut seed = 0x2545_F491_4F6C_DD1Du64;
        let mut pick = || {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            vals[(seed >> 33) as usize % vals.len()]
        };
        // Every number up to 600, and each allowed one with the x32 bit or
        // the top bit set, and the largest.
        let tagged = rules
            .0
            .keys()
            .flat_map(|nr| [nr | 0x4000_0000, nr | 0x8000_0000]);
        let nrs: Vec<u32> = (0..600).chain(tagged).chain([u32::MAX]).collect();
        for nr in nrs {
            for _ in 0..300 {
                let args = [pick(), pick(), pick(), pick(), pick(), pick()];
                let want = if allows(&rules, nr, &args) {
                    libc::SECCOMP_RET_ALLOW
                } else {
                    libc::SECCOMP_RET_KILL_PROCESS
                };
                let decided = run(&prog, ARCH_OK, nr, &args).0;
                assert_eq!(decided, want, "nr {nr} args {args:x?}");
                // i386, 32-bit ARM, aarch64, one bit off.
                for arch in [0x4000_0003, 0x4000_0028, 0xC000_00B7, ARCH_OK ^ 1] {
                    let decided = run(&prog, arch, nr, &args).0;
                    assert_eq!(decided, libc::SECCOMP_RET_KILL_PROCESS, "arch {arch:#x}");
                }
            }
        }
    }
}

#[test]
fn a_syscall_is_found_by_binary_search() {
    let rules = super::super::seccomp::rules(1);
    let prog = compile(ARCH_OK, &rules).unwrap();
    let n = rules.0.len();
    // The preamble (3), one split per halving, the leaf's test, the return.
    let bound = 3 + n.next_power_of_two().trailing_zeros() as usize + 2;
    // Numbers whose decision needs no argument: the search alone.
    let worst = (0..1024)
        .filter(|nr| rules.0.get(nr).is_none_or(|r| r.is_empty()))
        .map(|nr| run(&prog, ARCH_OK, nr, &[0; 6]).1)
        .max()
        .unwrap();
    assert!(
        worst <= bound,
        "{worst} instructions to decide, over {bound} for {n} syscalls"
    );
}

#[test]
fn a_program_too_long_to_jump_across_is_refused() {
    let mut rules = Rules::default();
    let c = Cond {
        arg: 0,
        cmp: Cmp::Eq(1),
    };
    for nr in 0..200 {
        rules.0.insert(nr, vec![vec![c, c]]);
    }
    let err = compile(ARCH_OK, &rules).unwrap_err();
    assert!(err.contains("jump"), "{err}");
}

#[test]
fn rules_that_would_not_mean_what_they_say_are_refused() {
    assert!(
        compile(ARCH_OK, &Rules::default()).is_err(),
        "an empty allowlist"
    );
    let refused = |conds: Vec<Vec<Cond>>| {
        let mut r = shapes();
        r.0.insert(500, conds);
        compile(ARCH_OK, &r).unwrap_err()
    };
    assert!(refused(vec![vec![]]).contains("no conditions"));
    let arg6 = Cond {
        arg: 6,
        cmp: Cmp::Eq(0),
    };
    assert!(refused(vec![vec![arg6]]).contains("argument 6"));
    let never = Cond {
        arg: 0,
        cmp: Cmp::MaskedEq { mask: 4, value: 8 },
    };
    assert!(refused(vec![vec![never]]).contains("outside"));
}
