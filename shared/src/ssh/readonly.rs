//! Which SSH commands are known to be read-only: the `"readonly"` preset of
//! a server's command policy (`preset = "readonly"` refuses every other
//! command; `approve_preset = "readonly"` makes every other command wait
//! for a person).
//!
//! An allowlist, not a list of dangerous commands: a shell spells a write
//! in endless ways (`env touch x`, `'touch' x`, `\touch x`, `python3 -c …`),
//! so [`read_only`] accepts only a shape it can read completely, and says
//! why it does not accept anything else.
//!
//! # The shape
//!
//! Simple commands joined by `;`, `&&`, `||` or `|`, their words separated
//! by spaces. Each command is a bare name from the list below (no path: a
//! path can name any program; no `A=b` before it: an assignment changes
//! what the program does) followed by literal words made only of
//! `A-Z a-z 0-9 . _ / : , @ % + = -`. A word in that alphabet means the
//! same to sh, dash, bash, ksh and zsh with their default options: nothing
//! expands, nothing is quoted, nothing redirects (zsh turns a leading
//! `=cmd` into the command's path, which as an argument only names a
//! file). Refused, because each
//! makes the shell run, expand or write something the words do not show:
//! quotes of any kind and `\` (`'touch' x` and `\touch x` run `touch`), `$`
//! and backquotes (variables and command substitution), `*?[]` (globs name
//! files the classifier cannot see), braces and `~` (expansions), `#`
//! (comments), `!` (negation, history), `<` and `>` (redirection; `<>`
//! creates files too), `&` alone (background jobs), parentheses
//! (subshells), and any control character (a line break starts another
//! command; a tab is refused rather than trusted to separate words) or
//! non-ASCII character (lookalikes of ASCII ones). `^` anywhere: the
//! Bourne shell and its heirs (Solaris 10's `/bin/sh`, Heirloom sh) read it
//! as a pipe, and fish before 3.1 a leading one as a redirection of
//! standard error to a file. Empty commands (`ls;;`, a trailing `|`) are
//! refused.
//!
//! # The list
//!
//! Commands that cannot change the host whatever literal words they get
//! (they print; none has an option that writes a file, sets anything,
//! signals a process or runs a program): `basename`, `cat`, `cmp`, `comm`,
//! `cut`, `df`, `dirname`, `echo`, `false`, `free`, `getent`, `groups`,
//! `head`, `hexdump`, `id`, `iostat`, `last`, `ls`, `lsblk`, `lscpu`,
//! `lsmod`, `netstat`, `nproc`, `od`, `printenv`, `ps`, `pwd`, `readlink`,
//! `realpath`, `stat`, `tail`, `test`, `tr`, `true`, `uname`, `uptime`,
//! `vmstat`, `w`, `which`, `who`, `whoami`, `zcat`. (`tr` reads only its
//! input; `df --sync` only flushes what would be written anyway.) And
//! these, with rules:
//!
//! - `date`: no `-s`/`--set`, and every operand is a `+FORMAT` (any other
//!   operand sets the clock).
//! - `diff`: no `-r` (a recursive comparison reads whatever files lie below,
//!   which the special-file rule cannot see).
//! - `dmesg`: no `-c`, `-C` (clear the kernel ring buffer), `-n` (console
//!   level), `-D`, `-E` (console off and on).
//! - `du`: no `-X`/`--exclude-from`, `--files0-from` (they open a file the
//!   special-file rule would not see, since `du` itself opens no file).
//! - `file`: no `-C` (writes `magic.mgc`), `-p` (resets access times),
//!   `-s` (opens devices), `-f` (reads names from a file).
//! - `find`: no `-delete` (or BSD's `-rm`), `-exec*`, `-ok*` (delete, run
//!   programs), `-fprint*`, `-fls` (write files), `-files0-from`.
//! - `grep`, `egrep`, `fgrep`: no `-d`/`--directories`, `-D`/`--devices`
//!   (`-d recurse`, `-D read`), `-R` (follows every link, into `/dev` and
//!   `/proc`). With `-r`, name the directories to search (without any it
//!   searches the working directory, which can be `/`), none of them `/`,
//!   `.`, holding `..`, or under `/dev`, `/proc`, `/sys` or `/run`.
//! - `hostname`: only the flags that print names (`-a -A -d -f -i -I -s`
//!   and their long forms); an operand, `-b` or `-F` sets the name.
//! - `ip`: only the flags `-4 -6 -s -d -o -j -p -br`, then `address`,
//!   `link`, `route` or `neigh` (or `a`, `l`, `r`, `n`), then nothing,
//!   `show`, `list`, `ls` or `lst` (and `route get`); `ip a a` adds.
//! - `journalctl`: no `--rotate`, `--vacuum-*`, `--flush`, `--sync`,
//!   `--relinquish-var`, `--smart-relinquish-var`, `--setup-keys`,
//!   `--update-catalog` (they change the journal), `--cursor-file` (writes
//!   the file), `--image` (mounts an image).
//! - `md5sum`, `sha1sum`, `sha224sum`, `sha256sum`, `sha384sum`,
//!   `sha512sum`, `b2sum`: no `-c` (opens the files a list names).
//! - `sort`: no `-o` (writes a file), `-T` (temporary files where asked),
//!   `--compress-program` (runs a program), `--files0-from`.
//! - `ss`: no `-K` (closes sockets), `-D` (writes a file).
//! - `strings`: no `@FILE` (reads options from a file).
//! - `systemctl`: the verb (the first operand), if any, is `status`,
//!   `show`, `cat`, `is-active`, `is-enabled`, `is-failed`,
//!   `is-system-running`, `list-units`, `list-unit-files`, `list-timers`,
//!   `list-sockets` or `list-dependencies` (none lists units); the flags
//!   only change what is shown (`-a -l -q -r -p -P -t -n -o`, `--all`,
//!   `--full`, `--no-pager`, `--property=`, `--type=`, `--state=`, …).
//!   Any other flag is refused: `-H` would run `ssh`, `--image` mount an
//!   image, and `--now` means nothing to a read (`systemctl --now status`
//!   is refused rather than trusted to stay harmless).
//! - `uniq`: at most one operand (`uniq IN OUT` writes `OUT`).
//! - `wc`: no `--files0-from`.
//!
//! A refused short flag is refused inside a cluster too (`dmesg -Tc`), and
//! a refused long flag in any abbreviation (`sort --out=x`), since getopt
//! takes unambiguous prefixes.
//!
//! Left out on purpose: anything that runs another program (`env`, `xargs`,
//! `nice`, `nohup`, `timeout`, `watch`, `sudo`, `exec`, `command`,
//! `builtin`, `eval`, shells, interpreters, `awk`, `sed`), `cd` (the rules
//! on paths assume the login directory), pagers and editors, clients that
//! can write files (`curl`, `wget`, `git`), `tee`, `dd`, `tar`, `xxd`,
//! `sysctl` and `mount` (their arguments set things), `service` (runs init
//! scripts), `docker` and `kubectl` (many verbs; their configs run
//! credential helpers), `top` (its keys kill and write a config), `lsof`
//! (`-D` writes a cache), `lspci` (reading some devices' configuration
//! hangs them).
//!
//! # Special files
//!
//! Reading a file can change the host: opening `/dev/watchdog` arms a
//! hardware watchdog that reboots the machine, reading `/proc/kmsg` or a
//! tracing `trace_pipe` takes the messages from their reader, and
//! `/proc/PID/fd/N` reopens whatever a process holds. So the commands that
//! read the files they are given (`cat`, `head`, `tail`, `grep`, `sort`,
//! …) take no word naming a `dev/`, `fd/`, `map_files/` or `cwd/` folder
//! (but `/dev/null`), nor holding `kmsg` or `trace_pipe`. A named pipe
//! elsewhere cannot be told from a file by its name: reading one takes
//! what it holds from its reader.
//!
//! The classifier reads text; the names resolve on the server, through the
//! remote user's `PATH`, which the operator controls. Read-only is not
//! cheap: `cat` of a large file or `tail -f` runs until the call's timeout.

/// `Ok` when `command` is known to be read-only (see the module's rules);
/// `Err` says, in words an operator understands, why it is not: the first
/// problem in reading order.
pub fn read_only(command: &str) -> Result<(), String> {
    if command.bytes().all(|b| b == b' ') {
        return Err("the command is empty".into());
    }
    let b = command.as_bytes();
    // The words of the command being read, and the operator before it.
    let mut words: Vec<&str> = Vec::new();
    let mut last_op = None;
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b' ' => i += 1,
            c @ (b';' | b'|' | b'&') => {
                let op = match (c, b.get(i + 1)) {
                    (b'&', Some(b'&')) => "&&",
                    (b'|', Some(b'|')) => "||",
                    (b'|', _) => "|",
                    (b';', _) => ";",
                    _ => {
                        name_first(&words, b, i)?;
                        return Err(
                            "`&` alone runs a command in the background (only `&&` joins commands)"
                                .into(),
                        );
                    }
                };
                if words.is_empty() {
                    return Err(format!("an empty command before `{op}`"));
                }
                check(&words)?;
                words.clear();
                last_op = Some(op);
                i += op.len();
            }
            c if is_word_byte(c) => {
                let start = i;
                while i < b.len() && is_word_byte(b[i]) {
                    i += 1;
                }
                words.push(&command[start..i]);
            }
            _ => {
                name_first(&words, b, i)?;
                return Err(refused_char(command, i));
            }
        }
    }
    match (words.is_empty(), last_op) {
        (true, Some(op)) => Err(format!("an empty command after `{op}`")),
        _ => check(&words),
    }
}

/// Before refusing the byte at `i`: `Err` when the current command's name,
/// already complete, is not on the list (the first problem in reading
/// order; `python3 -c '…'` is about `python3`, not the quote).
fn name_first(words: &[&str], b: &[u8], i: usize) -> Result<(), String> {
    match words {
        [name, rest @ ..] if !rest.is_empty() || b[i - 1] == b' ' => entry(name).map(|_| ()),
        _ => Ok(()),
    }
}

/// A byte of a literal word.
fn is_word_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"._/:,@%+=-".contains(&b)
}

/// Why the character at byte `i` (not a word byte, a space or an operator)
/// is refused.
fn refused_char(command: &str, i: usize) -> String {
    // Every byte before `i` was ASCII, so `i` is a character boundary.
    let c = command[i..].chars().next().unwrap_or_default();
    let at = || context(command, i);
    match c {
        '\'' | '"' => format!("a quote ({c}) is not a literal argument{}", at()),
        '\\' => format!("a backslash (\\) is not a literal argument{}", at()),
        '$' => format!(
            "`$` expands a variable or runs a command substitution{}",
            at()
        ),
        '`' => format!("a backquote (`) runs a command substitution{}", at()),
        '>' => format!("output redirection (>) can write a file{}", at()),
        '<' => format!(
            "redirection (<) is not a literal argument (`<>` creates files){}",
            at()
        ),
        '*' | '?' | '[' | ']' => format!(
            "a glob character ({c}) expands to file names the command does not show{}",
            at()
        ),
        '{' | '}' => format!("a brace ({c}) can expand to other words{}", at()),
        '~' => format!("a tilde (~) expands to a home directory{}", at()),
        '#' => format!("`#` starts a comment{}", at()),
        '!' => format!("`!` negates a command or expands history{}", at()),
        '(' | ')' => format!("a parenthesis ({c}) starts a subshell{}", at()),
        '^' => format!(
            "`^` is a pipe to the Bourne shell and its heirs, and a redirection to old fish{}",
            at()
        ),
        '\n' => "a line break starts another command".into(),
        '\r' => "a carriage return (U+000D) is not a literal argument".into(),
        '\t' => "a tab (U+0009): only spaces may separate words".into(),
        c if c.is_ascii_control() => {
            format!("a control character (U+{:04X})", u32::from(c))
        }
        c => format!(
            "a non-ASCII character (U+{:04X}), which can look like an ASCII one",
            u32::from(c)
        ),
    }
}

/// ` (in `word`)`: the word around byte `i`, when that says more than the
/// character alone and is short printable ASCII (a message never carries
/// controls or lookalikes) without a backquote.
fn context(command: &str, i: usize) -> String {
    let is_end = |b: &u8| b" ;&|".contains(b);
    let b = command.as_bytes();
    let start = b[..i].iter().rposition(is_end).map_or(0, |p| p + 1);
    let end = b[i..].iter().position(is_end).map_or(b.len(), |p| i + p);
    let word = &b[start..end];
    if (2..=60).contains(&word.len()) && word.iter().all(|c| c.is_ascii_graphic() && *c != b'`') {
        format!(" (in `{}`)", String::from_utf8_lossy(word))
    } else {
        String::new()
    }
}

/// One simple command, as words.
fn check(words: &[&str]) -> Result<(), String> {
    let Some((&name, args)) = words.split_first() else {
        return Err("the command is empty".into());
    };
    let entry = entry(name)?;
    if entry.reads
        && let Some(w) = args.iter().find(|w| special_file(w))
    {
        return Err(format!(
            "`{name} {w}`: `{w}` may name a device or special file, and reading one can change the host (a watchdog device reboots it; /proc/kmsg gives up its messages)"
        ));
    }
    match entry.rule {
        Rule::Any => Ok(()),
        Rule::Refuse(flags) => refuse(name, args, flags),
        Rule::Check(f) => f(name, args),
    }
}

/// The list's entry for a command's first word.
fn entry(name: &str) -> Result<&'static Entry, String> {
    if name.contains('=') {
        return Err(format!(
            "`{name}` is an assignment; a command must start with a name from the read-only list"
        ));
    }
    if name.contains('/') {
        return Err(format!(
            "`{name}` is a path; a command must be a bare name from the read-only list"
        ));
    }
    LIST.iter()
        .find(|e| e.name == name)
        .ok_or_else(|| format!("`{name}` is not on the read-only list"))
}

/// A command on the list.
struct Entry {
    name: &'static str,
    /// Opens the files its words name, so the special-file rule applies.
    reads: bool,
    rule: Rule,
}

enum Rule {
    /// Any literal words.
    Any,
    /// These flags (`-c`: also inside a cluster; `--clear`: also
    /// abbreviated) are refused, each with why.
    Refuse(&'static [(&'static str, &'static str)]),
    /// Its own check.
    Check(fn(&str, &[&str]) -> Result<(), String>),
}

const fn any(name: &'static str, reads: bool) -> Entry {
    Entry {
        name,
        reads,
        rule: Rule::Any,
    }
}

const fn refusing(
    name: &'static str,
    reads: bool,
    flags: &'static [(&'static str, &'static str)],
) -> Entry {
    Entry {
        name,
        reads,
        rule: Rule::Refuse(flags),
    }
}

const fn checked(
    name: &'static str,
    reads: bool,
    f: fn(&str, &[&str]) -> Result<(), String>,
) -> Entry {
    Entry {
        name,
        reads,
        rule: Rule::Check(f),
    }
}

const CHECKSUM: &[(&str, &str)] = &[
    ("-c", "opens the files a list names"),
    ("--check", "opens the files a list names"),
];

const LIST: &[Entry] = &[
    refusing("b2sum", true, CHECKSUM),
    any("basename", false),
    any("cat", true),
    any("cmp", true),
    any("comm", true),
    any("cut", true),
    checked("date", true, date),
    any("df", false),
    refusing(
        "diff",
        true,
        &[
            ("-r", "reads every file below the folders"),
            ("--recursive", "reads every file below the folders"),
        ],
    ),
    any("dirname", false),
    refusing(
        "dmesg",
        true,
        &[
            ("-c", "clears the kernel ring buffer"),
            ("--read-clear", "clears the kernel ring buffer"),
            ("-C", "clears the kernel ring buffer"),
            ("--clear", "clears the kernel ring buffer"),
            ("-n", "sets the console log level"),
            ("--console-level", "sets the console log level"),
            ("-D", "turns console messages off"),
            ("--console-off", "turns console messages off"),
            ("-E", "turns console messages on"),
            ("--console-on", "turns console messages on"),
        ],
    ),
    refusing(
        "du",
        false,
        &[
            ("-X", "opens a file of patterns"),
            ("--exclude-from", "opens a file of patterns"),
            ("--exclude", ""),
            ("--files0-from", "opens a file of names"),
        ],
    ),
    any("echo", false),
    checked("egrep", true, grep),
    any("false", false),
    checked("fgrep", true, grep),
    refusing(
        "file",
        true,
        &[
            ("-C", "writes a compiled magic file"),
            ("--compile", "writes a compiled magic file"),
            ("-p", "resets the files' access times"),
            ("--preserve-date", "resets the files' access times"),
            ("-s", "opens devices"),
            ("--special-files", "opens devices"),
            ("-f", "reads the names to open from a file"),
            ("--files-from", "reads the names to open from a file"),
        ],
    ),
    checked("find", false, find),
    any("free", false),
    any("getent", false),
    checked("grep", true, grep),
    any("groups", false),
    any("head", true),
    any("hexdump", true),
    checked("hostname", false, hostname),
    any("id", false),
    any("iostat", false),
    checked("ip", false, ip),
    refusing(
        "journalctl",
        true,
        &[
            ("--rotate", "rotates the journal files"),
            ("--vacuum-size", "deletes journal files"),
            ("--vacuum-time", "deletes journal files"),
            ("--vacuum-files", "deletes journal files"),
            ("--flush", "moves the journal to /var"),
            ("--sync", "makes journald write the journal"),
            ("--relinquish-var", "moves the journal off /var"),
            ("--smart-relinquish-var", "moves the journal off /var"),
            ("--setup-keys", "writes sealing keys"),
            ("--update-catalog", "writes the message catalog"),
            ("--cursor-file", "writes the cursor to a file"),
            ("--cursor", ""),
            ("--image", "mounts a disk image"),
        ],
    ),
    any("last", true),
    any("ls", false),
    any("lsblk", false),
    any("lscpu", false),
    any("lsmod", false),
    refusing("md5sum", true, CHECKSUM),
    any("netstat", false),
    any("nproc", false),
    any("od", true),
    any("printenv", false),
    any("ps", false),
    any("pwd", false),
    any("readlink", false),
    any("realpath", false),
    refusing("sha1sum", true, CHECKSUM),
    refusing("sha224sum", true, CHECKSUM),
    refusing("sha256sum", true, CHECKSUM),
    refusing("sha384sum", true, CHECKSUM),
    refusing("sha512sum", true, CHECKSUM),
    refusing(
        "sort",
        true,
        &[
            ("-o", "writes a file"),
            ("--output", "writes a file"),
            ("-T", "writes temporary files where it is told"),
            (
                "--temporary-directory",
                "writes temporary files where it is told",
            ),
            ("--compress-program", "runs a program"),
            ("--files0-from", "reads the names to open from a file"),
        ],
    ),
    refusing(
        "ss",
        true,
        &[
            ("-K", "closes sockets"),
            ("--kill", "closes sockets"),
            ("-D", "writes a file"),
            ("--diag", "writes a file"),
        ],
    ),
    any("stat", false),
    checked("strings", true, strings),
    checked("systemctl", false, systemctl),
    any("tail", true),
    any("test", false),
    any("tr", false),
    any("true", false),
    any("uname", false),
    checked("uniq", true, uniq),
    any("uptime", false),
    any("vmstat", false),
    any("w", false),
    refusing(
        "wc",
        true,
        &[("--files0-from", "reads the names to open from a file")],
    ),
    any("which", false),
    any("who", true),
    any("whoami", false),
    any("zcat", true),
];

/// Whether `word` may name a device or another special file whose reading
/// changes something (see the module's "Special files").
fn special_file(word: &str) -> bool {
    if word == "/dev/null" {
        return false;
    }
    if word.contains("kmsg") || word.contains("trace_pipe") {
        return true;
    }
    // Memory, other processes' environments, PCI configuration space (its
    // reads have side effects on some devices), and the named pipes under
    // /run (reading one takes a request from its reader, as init's).
    let last = word.rsplit('/').next().unwrap_or(word);
    if matches!(last, "mem" | "kmem" | "kcore" | "environ")
        || [
            "/run/",
            "/var/run/",
            "/proc/bus/pci",
            "/sys/bus/pci",
            "/sys/devices/pci",
        ]
        .iter()
        .any(|p| word.contains(p))
    {
        return true;
    }
    // A folder name starts the word, follows a non-name byte (`/`, `=`,
    // `,`), or may be an option's attached value (`-fdev/x`).
    let name_byte = |b: u8| b.is_ascii_alphanumeric() || b"._-".contains(&b);
    ["dev/", "fd/", "map_files/", "cwd/"].iter().any(|dir| {
        word.match_indices(dir)
            .any(|(i, _)| i == 0 || word.starts_with('-') || !name_byte(word.as_bytes()[i - 1]))
    })
}

/// `Err` when a word is one of `flags` (a short one also inside a
/// cluster, a long one also abbreviated), before `--`. A long flag with an
/// empty reason is a harmless option that a refused one begins with: given
/// in full it is that option (getopt prefers an exact match).
fn refuse(name: &str, args: &[&str], flags: &[(&str, &str)]) -> Result<(), String> {
    for &w in args {
        if w == "--" {
            break;
        }
        if let Some(long) = w.strip_prefix("--") {
            let given = long.split('=').next().unwrap_or_default();
            if given.is_empty()
                || flags
                    .iter()
                    .any(|(f, why)| why.is_empty() && f.strip_prefix("--") == Some(given))
            {
                continue;
            }
            let hit = flags.iter().find(|(f, why)| {
                !why.is_empty()
                    && f.strip_prefix("--")
                        .is_some_and(|full| full.starts_with(given))
            });
            if let Some((full, why)) = hit {
                let abbreviates = if full.len() == given.len() + 2 {
                    String::new()
                } else {
                    format!(" (an abbreviation of `{full}`)")
                };
                return Err(format!("`{name} --{given}`{abbreviates} {why}"));
            }
        } else if let Some(cluster) = w.strip_prefix('-') {
            for c in cluster.chars() {
                let hit = flags
                    .iter()
                    .find(|(f, _)| !f.starts_with("--") && f.len() == 2 && f[1..].starts_with(c));
                if let Some((flag, why)) = hit {
                    return Err(if cluster.len() == 1 {
                        format!("`{name} {flag}` {why}")
                    } else {
                        format!("`{name} {w}`: `{flag}` {why}")
                    });
                }
            }
        }
    }
    Ok(())
}

/// The operands among `args`: not flags, and not the values of the flags
/// that take one as the next word (`short_vals`, exactly the long names in
/// `long_vals`).
fn operands<'a>(args: &[&'a str], short_vals: &str, long_vals: &[&str]) -> Vec<&'a str> {
    let mut out = Vec::new();
    let mut done = false;
    let mut i = 0;
    while let Some(&w) = args.get(i) {
        i += 1;
        if done || w == "-" || !w.starts_with('-') {
            out.push(w);
        } else if w == "--" {
            done = true;
        } else if let Some(long) = w.strip_prefix("--") {
            if !long.contains('=') && long_vals.contains(&long) {
                i += 1;
            }
        } else if let Some(k) = w[1..].find(|c| short_vals.contains(c))
            && k + 2 == w.len()
        {
            i += 1;
        }
    }
    out
}

/// `date`: shows the time; `-s` or an operand that is not `+FORMAT` sets it.
fn date(name: &str, args: &[&str]) -> Result<(), String> {
    refuse(
        name,
        args,
        &[("-s", "sets the clock"), ("--set", "sets the clock")],
    )?;
    let ops = operands(
        args,
        "dfrsD",
        &["date", "file", "reference", "rfc-3339", "set"],
    );
    match ops.iter().find(|o| !o.starts_with('+')) {
        Some(o) => Err(format!(
            "`date {o}`: an operand that is not a +FORMAT sets the clock"
        )),
        None => Ok(()),
    }
}

/// `uniq [IN [OUT]]` writes `OUT`.
fn uniq(name: &str, args: &[&str]) -> Result<(), String> {
    let ops = operands(args, "fsw", &["skip-fields", "skip-chars", "check-chars"]);
    if ops.len() > 1 {
        return Err(format!(
            "`{name} {}`: a second operand is a file uniq writes",
            ops.join(" ")
        ));
    }
    Ok(())
}

/// `hostname` prints names with these flags; with an operand, `-b` or
/// `-F` it sets the name.
fn hostname(name: &str, args: &[&str]) -> Result<(), String> {
    const LONG: &[&str] = &[
        "alias",
        "all-fqdns",
        "all-ip-addresses",
        "domain",
        "fqdn",
        "long",
        "ip-address",
        "short",
    ];
    for &w in args {
        let ok = match w.strip_prefix("--") {
            Some(long) => LONG.contains(&long),
            None => {
                w.len() > 1 && w.starts_with('-') && w[1..].chars().all(|c| "aAdfiIs".contains(c))
            }
        };
        if !ok {
            return Err(if w.starts_with('-') {
                format!(
                    "`{name} {w}`: hostname takes only the flags that print names (-a -A -d -f -i -I -s)"
                )
            } else {
                format!("`{name} {w}` sets the host name")
            });
        }
    }
    Ok(())
}

/// `find` without the actions that delete, run programs or write files.
fn find(name: &str, args: &[&str]) -> Result<(), String> {
    const REFUSED: &[(&str, &str)] = &[
        ("-delete", "deletes files"),
        ("-rm", "deletes files"),
        ("-exec", "runs a program"),
        ("-ok", "runs a program"),
        ("-fprint", "writes a file"),
        ("-fls", "writes a file"),
        ("-files0-from", "reads the starting points from a file"),
    ];
    for &w in args {
        if let Some((_, why)) = REFUSED.iter().find(|(p, _)| w.starts_with(p)) {
            return Err(format!("`{name} {w}` {why}"));
        }
    }
    Ok(())
}

/// `strings @FILE` reads more options from `FILE`.
fn strings(name: &str, args: &[&str]) -> Result<(), String> {
    match args.iter().find(|w| w.starts_with('@')) {
        Some(w) => Err(format!("`{name} {w}` reads options from a file")),
        None => Ok(()),
    }
}

/// `grep` without the flags that read devices or follow every link, and
/// searching below named directories only.
fn grep(name: &str, args: &[&str]) -> Result<(), String> {
    refuse(
        name,
        args,
        &[
            ("-d", "sets how directories are read (`-d recurse`)"),
            (
                "--directories",
                "sets how directories are read (`--directories=recurse`)",
            ),
            ("-D", "sets how devices are read (`-D read` opens them)"),
            ("--devices", "sets how devices are read (`--devices=read`)"),
            ("-R", "follows every link it meets (into /dev and /proc)"),
            (
                "--dereference-recursive",
                "follows every link it meets (into /dev and /proc)",
            ),
        ],
    )?;
    // grep's options that take the next word as their value.
    const LONG_VALS: &[&str] = &[
        "after-context",
        "before-context",
        "binary-files",
        "context",
        "devices",
        "directories",
        "exclude",
        "exclude-dir",
        "exclude-from",
        "file",
        "group-separator",
        "include",
        "label",
        "max-count",
        "regexp",
    ];
    let mut recursive = false;
    let mut pattern_given = false;
    // Operands, and the values of options: each is checked when recursive.
    let mut operands = Vec::new();
    let mut values = Vec::new();
    let mut done = false;
    let mut i = 0;
    while let Some(&w) = args.get(i) {
        i += 1;
        if done || w == "-" || !w.starts_with('-') {
            operands.push(w);
        } else if w == "--" {
            done = true;
        } else if let Some(long) = w.strip_prefix("--") {
            let (given, has_value) = match long.split_once('=') {
                Some((g, _)) => (g, true),
                None => (long, false),
            };
            // An abbreviation counts as every option it may abbreviate.
            recursive |= "recursive".starts_with(given);
            pattern_given |= "regexp".starts_with(given) || "file".starts_with(given);
            if !has_value && LONG_VALS.iter().any(|v| v.starts_with(given)) {
                values.extend(args.get(i));
                i += 1;
            }
        } else {
            let cluster = &w[1..];
            recursive |= cluster.contains('r');
            if let Some(k) = cluster.find(|c| "efABCmdD".contains(c)) {
                pattern_given |= cluster[..=k].contains(['e', 'f']);
                if k + 1 == cluster.len() {
                    values.extend(args.get(i));
                    i += 1;
                }
            }
        }
    }
    if !recursive {
        return Ok(());
    }
    let files = if pattern_given {
        &operands[..]
    } else {
        operands.get(1..).unwrap_or_default()
    };
    if files.is_empty() {
        return Err(format!(
            "`{name} -r` without a directory searches the working directory, which can be /: name the directories to search"
        ));
    }
    for w in operands.iter().chain(&values) {
        let parts: Vec<&str> = w
            .split('/')
            .filter(|p| !p.is_empty() && *p != ".")
            .collect();
        let why = match parts.as_slice() {
            [] => Some("searches / or the working directory"),
            p if p.contains(&"..") => Some("climbs out with `..`"),
            ["dev" | "proc" | "sys" | "run", ..] | ["var", "run", ..] => {
                Some("reads special files (devices, /proc/kmsg, pipes)")
            }
            _ => None,
        };
        if let Some(why) = why {
            return Err(format!(
                "`{name} -r` below `{w}` {why}: name a narrower directory"
            ));
        }
    }
    Ok(())
}

/// `systemctl` with a verb that only reads and flags that only change
/// what is shown.
fn systemctl(name: &str, args: &[&str]) -> Result<(), String> {
    const VERBS: &[&str] = &[
        "status",
        "show",
        "cat",
        "is-active",
        "is-enabled",
        "is-failed",
        "is-system-running",
        "list-units",
        "list-unit-files",
        "list-timers",
        "list-sockets",
        "list-dependencies",
    ];
    const SHORT: &str = "alqr";
    const SHORT_VALS: &str = "pPtno";
    const LONG: &[&str] = &[
        "all",
        "full",
        "quiet",
        "recursive",
        "reverse",
        "failed",
        "user",
        "system",
        "no-pager",
        "plain",
        "no-legend",
        "value",
        "with-dependencies",
        "show-types",
    ];
    const LONG_VALS: &[&str] = &["property", "type", "state", "lines", "output", "timestamp"];
    let flag_refused = |w: &str| {
        Err(format!(
            "`{name} {w}`: systemctl here takes only flags that change what is shown (-a -l -q -r -p -P -t -n -o, --all, --full, --no-pager, --property=, --type=, --state=, --lines=, --output=, …)"
        ))
    };
    let mut verb = None;
    let mut done = false;
    let mut i = 0;
    while let Some(&w) = args.get(i) {
        i += 1;
        if !done && w == "--" {
            done = true;
        } else if !done && let Some(long) = w.strip_prefix("--") {
            match long.split_once('=') {
                Some((n, _)) if LONG_VALS.contains(&n) => {}
                None if LONG_VALS.contains(&long) => i += 1,
                None if LONG.contains(&long) => {}
                _ => return flag_refused(w),
            }
        } else if !done && w.len() > 1 && w.starts_with('-') {
            let cluster = &w[1..];
            for (k, c) in cluster.char_indices() {
                if SHORT_VALS.contains(c) {
                    if k + 1 == cluster.len() {
                        i += 1;
                    }
                    break;
                }
                if !SHORT.contains(c) {
                    return flag_refused(w);
                }
            }
        } else if verb.is_none() {
            if !VERBS.contains(&w) {
                return Err(format!(
                    "`{name} {w}`: the read-only verbs are {}",
                    VERBS.join(", ")
                ));
            }
            verb = Some(w);
        }
    }
    Ok(())
}

/// `ip` showing addresses, links, routes or neighbours.
fn ip(name: &str, args: &[&str]) -> Result<(), String> {
    const FLAGS: &[&str] = &["-4", "-6", "-s", "-d", "-o", "-j", "-p", "-br"];
    let mut rest = args;
    while let Some((&w, after)) = rest.split_first()
        && w.starts_with('-')
    {
        if !FLAGS.contains(&w) {
            return Err(format!(
                "`{name} {w}`: ip here takes only the flags {}",
                FLAGS.join(" ")
            ));
        }
        rest = after;
    }
    let Some((&object, rest)) = rest.split_first() else {
        return Ok(());
    };
    let route = match object {
        "r" | "route" => true,
        "a" | "addr" | "address" | "l" | "link" | "n" | "neigh" | "neighbor" | "neighbour" => false,
        _ => {
            return Err(format!(
                "`{name} {object}`: ip shows only address, link, route and neigh here"
            ));
        }
    };
    match rest.first() {
        None | Some(&("show" | "list" | "ls" | "lst")) => Ok(()),
        Some(&"get") if route => Ok(()),
        Some(verb) => Err(format!(
            "`{name} {object} {verb}`: only `show` (or `list`), and `route get`, are read-only"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(command: &str) -> String {
        match read_only(command) {
            Ok(()) => panic!("{command:?} was accepted as read-only"),
            Err(why) => why,
        }
    }

    #[test]
    fn reads_are_read_only() {
        for ok in [
            "uptime",
            "df -h /",
            "uptime; df -h /",
            "ps aux | grep nginx",
            "systemctl status nginx",
            "journalctl -u nginx -n 50",
            "tail -n 100 /var/log/syslog",
            "free -m && uptime",
            "  uptime  ",
            "ls -la /var/log || echo none",
            "cat /etc/os-release",
            "grep -c processor /proc/cpuinfo",
            "grep -rn error /var/log/nginx",
            "grep -r -e error /var/log",
            "cat /proc/meminfo | head -n 5",
            "sort /etc/passwd | uniq -c | sort -rn | head",
            "uniq -c in.txt",
            "date",
            "date +%Y-%m-%dT%H:%M:%S",
            "date -u -d yesterday +%s",
            "hostname",
            "hostname -f",
            "hostname -I",
            "find /etc -name nginx.conf -type f",
            "dmesg -T | tail",
            "dmesg --level=err,warn",
            "journalctl --since today --no-pager",
            "systemctl",
            "systemctl --failed",
            "systemctl -p ActiveState show nginx",
            "systemctl list-units --type=service --state=running",
            "systemctl is-active nginx sshd",
            "ss -tlnp",
            "netstat -tulpn",
            "ip -br a",
            "ip route get 1.1.1.1",
            "ip addr show dev eth0",
            "sha256sum /usr/bin/ls",
            "file /bin/ls",
            "stat /dev/sda",
            "ls -l /dev/disk/by-uuid",
            "du -sh /var/log",
            "lsblk /dev/sda",
            "cat /dev/null",
            "test -e /etc/passwd && echo yes || echo no",
            "echo a=b c,d e@f 50% +1 x:y",
            "which python3",
            "id; whoami; groups; pwd; uname -a; nproc; w; who; last -n 5",
            "getent passwd root",
            "zcat /var/log/syslog.2.gz | grep error",
            "wc -l /etc/passwd",
            "diff /etc/hosts /etc/hosts.bak",
            "cut -d: -f1 /etc/passwd",
            "tr a-z A-Z",
            "journalctl --cursor=s=abc",
            "du -sh --exclude=cache /var",
        ] {
            assert_eq!(read_only(ok), Ok(()), "{ok}");
        }
    }

    /// The red team's evasions and their kin: each names its reason.
    #[test]
    fn evasions_are_not_read_only() {
        for (bad, says) in [
            ("env touch x", "`env` is not on the read-only list"),
            (
                "'touch' x",
                "a quote (') is not a literal argument (in `'touch'`)",
            ),
            ("\"touch\" x", "a quote (\")"),
            ("\\touch x", "a backslash"),
            ("t\"\"ouch x", "a quote (\")"),
            (
                "python3 -c 'import os'",
                "`python3` is not on the read-only list",
            ),
            (
                "python3 -c import",
                "`python3` is not on the read-only list",
            ),
            ("/usr/bin/touch x", "`/usr/bin/touch` is a path"),
            ("./ls", "is a path"),
            ("A=1 touch x", "`A=1` is an assignment"),
            ("PAGER=sh systemctl status x", "is an assignment"),
            ("ls; touch x", "`touch` is not on the read-only list"),
            ("ls && rm -rf /", "`rm` is not on the read-only list"),
            ("ls || rm x", "`rm`"),
            ("cat x > y", "output redirection (>)"),
            ("cat x >> y", "output redirection (>)"),
            ("cat x 2>/dev/null", "output redirection (>)"),
            ("cat < x", "redirection (<)"),
            ("cat <> x", "redirection (<)"),
            ("ls $(touch x)", "`$`"),
            ("ls ${HOME}", "`$`"),
            (
                "ls `touch x`",
                "a backquote (`) runs a command substitution",
            ),
            ("echo hi | sh", "`sh` is not on the read-only list"),
            ("echo hi | bash", "`bash`"),
            ("ls | xargs rm", "`xargs`"),
            ("sudo ls", "`sudo`"),
            ("exec ls", "`exec`"),
            ("command touch x", "`command`"),
            ("nice touch x", "`nice`"),
            ("timeout 5 touch x", "`timeout`"),
            ("awk 1 x", "`awk`"),
            ("sed -n p x", "`sed`"),
            ("tee x", "`tee`"),
            ("curl -o x http://h", "`curl`"),
            ("git status", "`git`"),
            ("cd /; grep -r x .", "`cd`"),
            ("ls\ntouch x", "a line break"),
            ("ls\r\ntouch x", "a carriage return"),
            ("ls\t-l", "a tab"),
            ("ls\u{1b}[0m", "a control character (U+001B)"),
            ("ls\0", "a control character (U+0000)"),
            ("ls -l\u{a0}/", "a non-ASCII character (U+00A0)"),
            ("\u{ff54}ouch x", "a non-ASCII character (U+FF54)"),
            ("l\u{200b}s", "U+200B"),
            ("ls /tmp/*", "a glob character (*)"),
            ("ls /tmp/?", "a glob character (?)"),
            ("ls /tmp/[a]", "a glob character ([)"),
            ("echo {a,b}", "a brace ({)"),
            ("ls ~", "a tilde"),
            ("ls # x", "`#`"),
            ("! ls", "`!`"),
            ("(touch x)", "a parenthesis"),
            ("ls &", "`&` alone"),
            ("touch x & ls", "`touch` is not on the read-only list"),
            ("ls |& cat", "`&` alone"),
            ("grep ^root /etc/passwd", "`^` is a pipe"),
            ("echo x^touch y", "`^` is a pipe"),
            ("ls;", "an empty command after `;`"),
            ("; ls", "an empty command before `;`"),
            ("ls ;; ls", "an empty command before `;`"),
            ("ls |", "an empty command after `|`"),
            ("ls || | cat", "an empty command before `|`"),
            ("", "the command is empty"),
            ("   ", "the command is empty"),
            ("\t", "a tab"),
        ] {
            let why = refused(bad);
            assert!(why.contains(says), "{bad:?}: {why}");
        }
    }

    /// Listed commands whose arguments can still write or run something.
    #[test]
    fn listed_commands_refuse_their_writing_forms() {
        for (bad, says) in [
            ("date 0101", "sets the clock"),
            ("date 010100002030", "sets the clock"),
            ("date -s tomorrow", "`date -s` sets the clock"),
            ("date --set=tomorrow", "sets the clock"),
            ("date --s tomorrow", "an abbreviation of `--set`"),
            ("date -us x", "`-s` sets the clock"),
            ("date --date yesterday 0101", "sets the clock"),
            ("hostname evil", "sets the host name"),
            ("hostname -b evil", "only the flags that print names"),
            ("hostname -F /etc/x", "only the flags that print names"),
            ("hostname -- -x", "only the flags"),
            ("find / -delete", "`find -delete` deletes files"),
            ("find . -exec rm x", "runs a program"),
            ("find . -execdir ls", "runs a program"),
            ("find . -ok ls", "runs a program"),
            ("find . -okdir ls", "runs a program"),
            ("find . -fprint x", "writes a file"),
            ("find . -fprintf x %p", "writes a file"),
            ("find . -fls x", "writes a file"),
            ("find . -rm", "deletes files"),
            ("find . -files0-from x", "starting points"),
            ("sort -o x y", "`sort -o` writes a file"),
            ("sort -ro x y", "`sort -ro`: `-o` writes a file"),
            ("sort --out=x y", "an abbreviation of `--output`"),
            ("sort y --output x", "writes a file"),
            ("sort --compress-program=sh y", "runs a program"),
            ("sort -T /etc y", "temporary files"),
            ("uniq a b", "a second operand"),
            ("uniq -c a b", "a second operand"),
            ("uniq --skip-f 2 a", "a second operand"),
            ("dmesg -c", "clears the kernel ring buffer"),
            ("dmesg -Tc", "`dmesg -Tc`: `-c` clears"),
            ("dmesg -C", "clears"),
            ("dmesg --clear", "clears"),
            ("dmesg --read-c", "clears"),
            ("dmesg -n 1", "console log level"),
            ("dmesg -D", "console messages off"),
            ("dmesg -E", "console messages on"),
            ("journalctl --rotate", "rotates"),
            ("journalctl --vacuum-size=1M", "deletes journal files"),
            ("journalctl --vacuum-time=1s", "deletes"),
            ("journalctl --vacuum-files=1", "deletes"),
            ("journalctl --vac=1", "deletes"),
            ("journalctl --flush", "moves the journal"),
            ("journalctl --sync", "write the journal"),
            ("journalctl --relinquish-var", "moves the journal off"),
            ("journalctl --smart-relinquish-var", "off /var"),
            ("journalctl --setup-keys", "sealing keys"),
            ("journalctl --update-catalog", "catalog"),
            ("journalctl --cursor-file=/tmp/c", "writes the cursor"),
            ("journalctl --image=/tmp/x.img", "mounts"),
            ("systemctl restart nginx", "`systemctl restart`"),
            ("systemctl stop nginx", "read-only verbs"),
            ("systemctl daemon-reload", "read-only verbs"),
            ("systemctl --now status x", "`systemctl --now`"),
            ("systemctl status --now x", "`systemctl --now`"),
            ("systemctl -H host status x", "`systemctl -H`"),
            (
                "systemctl --host=h status x",
                "flags that change what is shown",
            ),
            ("systemctl --image=x status", "flags that change"),
            ("systemctl --prop status restart x", "`systemctl --prop`"),
            ("systemctl -p x restart nginx", "`systemctl restart`"),
            ("systemctl -pP restart x", "`systemctl restart`"),
            ("systemctl -- restart x", "`systemctl restart`"),
            ("systemctl -f status x", "`systemctl -f`"),
            ("file -C -m x", "writes a compiled magic file"),
            ("file -bC x", "`-C` writes"),
            ("file -p x", "access times"),
            ("file -s /x", "opens devices"),
            ("file -f list", "reads the names"),
            ("ss -K dst 1.2.3.4", "closes sockets"),
            ("ss -tK", "closes sockets"),
            ("ss --kill", "closes sockets"),
            ("ss -D /tmp/x", "writes a file"),
            ("sha256sum -c sums", "opens the files a list names"),
            ("md5sum --check sums", "opens the files"),
            ("wc --files0-from=list", "names to open"),
            ("du -X pats /", "patterns"),
            ("du --files0-from=x", "names"),
            ("diff -r a b", "every file below"),
            ("diff -ur a b", "every file below"),
            ("strings @opts", "reads options from a file"),
            ("ip a a 10.0.0.1/24 dev eth0", "`ip a a`"),
            ("ip link set eth0 down", "`ip link set`"),
            ("ip route del default", "`ip route del`"),
            ("ip a s", "`ip a s`"),
            ("ip -batch cmds", "`ip -batch`"),
            ("ip -b cmds", "`ip -b`"),
            ("ip -force a", "`ip -force`"),
            ("ip netns exec x sh", "`ip netns`"),
            ("ip a get", "`ip a get`"),
            ("grep -d recurse x /", "`grep -d` sets how directories"),
            ("grep --directories=recurse x /", "directories"),
            ("grep -D read x /tmp/x", "sets how devices"),
            ("grep -R x /etc", "follows every link"),
            ("grep -rR x /etc", "follows every link"),
            ("grep -r x", "without a directory"),
            ("grep -r -e x", "without a directory"),
            ("grep --recursive x", "without a directory"),
            ("grep -r x /", "below `/` searches /"),
            ("grep -r x .", "below `.`"),
            ("grep -r x ../..", "climbs out"),
            ("grep -r x /var/../proc", "climbs out"),
            ("grep -r x /proc", "special files"),
            ("grep -r x //proc/", "special files"),
            ("grep -r x /./sys", "special files"),
            ("grep -r x /dev", "special files"),
            ("grep -r x /run", "special files"),
            ("grep -r x /var/run", "special files"),
            ("grep -r -e x -e /etc", "without a directory"),
            ("grep -r --reg x --reg /etc", "without a directory"),
            ("grep -rl x proc", "special files"),
        ] {
            let why = refused(bad);
            assert!(why.contains(says), "{bad:?}: {why}");
        }
    }

    #[test]
    fn reading_special_files_is_not_read_only() {
        for bad in [
            "cat /dev/watchdog",
            "head -c 1 /dev/watchdog0",
            "tail -f /dev/ttyS0",
            "cat /proc/kmsg",
            "cat /proc/self/root/proc/kmsg",
            "cat /sys/kernel/tracing/trace_pipe",
            "cat /proc/1/environ",
            "od -j 4096 -N 4096 /proc/1/mem",
            "cat /proc/kcore",
            "cat /run/initctl",
            "cat /run/systemd/initctl/fifo",
            "tail /var/run/x.fifo",
            "cat /sys/bus/pci/devices/0000:00:00.0/config",
            "hexdump /proc/bus/pci/00/00.0",
            "cat /proc/1/fd/3",
            "cat /proc/1/map_files/x",
            "cat /proc/1/cwd/watchdog",
            "cat //dev//watchdog",
            "cat ../../dev/watchdog",
            "cat dev/watchdog",
            "grep -fdev/watchdog x",
            "grep --file=/dev/watchdog x",
            "grep -f /dev/watchdog x",
            "sort --random-source=/dev/watchdog x",
            "md5sum /dev/sda",
            "od -N 8 /dev/mem",
            "zcat /dev/stdin",
            "journalctl --file=/dev/watchdog",
            "dmesg -F /dev/watchdog",
            "date -f /dev/watchdog",
            "ss -F /dev/watchdog",
            "who /dev/watchdog",
        ] {
            let why = refused(bad);
            assert!(why.contains("special file"), "{bad:?}: {why}");
        }
        // Commands that do not open what they name may name a device.
        for ok in ["ls -l /dev/watchdog", "stat /dev/watchdog", "df /dev/sda1"] {
            assert_eq!(read_only(ok), Ok(()), "{ok}");
        }
    }

    #[test]
    fn the_list_is_sorted_and_unique() {
        let names: Vec<&str> = LIST.iter().map(|e| e.name).collect();
        let mut sorted = names.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(names, sorted);
    }
}
