//! The read-only list: each command, whether it opens the files its words
//! name, and the rule its words must keep.

use super::rules::{date, find, grep, hostname, ip, strings, systemctl, uniq};

/// A command on the list.
pub(super) struct Entry {
    pub(super) name: &'static str,
    /// Opens the files its words name, so the special-file rule applies.
    pub(super) reads: bool,
    pub(super) rule: Rule,
}

pub(super) enum Rule {
    /// Any literal words.
    Any,
    /// These flags (`-c`: also inside a cluster; `--clear`: also
    /// abbreviated) are refused, each with why.
    Refuse(&'static [(&'static str, &'static str)]),
    /// Its own check.
    Check(fn(&str, &[&str]) -> Result<(), String>),
}

pub(super) const fn any(name: &'static str, reads: bool) -> Entry {
    Entry {
        name,
        reads,
        rule: Rule::Any,
    }
}

pub(super) const fn refusing(
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

pub(super) const fn checked(
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

pub(super) const CHECKSUM: &[(&str, &str)] = &[
    ("-c", "opens the files a list names"),
    ("--check", "opens the files a list names"),
];

pub(super) const LIST: &[Entry] = &[
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
