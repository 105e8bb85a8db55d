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

mod args;
mod list;
mod rules;

use args::{refuse, special_file};
use list::{Entry, LIST, Rule};

#[cfg(test)]
mod tests;
