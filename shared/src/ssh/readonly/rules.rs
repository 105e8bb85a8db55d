//! The commands with rules of their own.

use super::args::{operands, refuse};

/// `date`: shows the time; `-s` or an operand that is not `+FORMAT` sets it.
pub(super) fn date(name: &str, args: &[&str]) -> Result<(), String> {
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
pub(super) fn uniq(name: &str, args: &[&str]) -> Result<(), String> {
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
pub(super) fn hostname(name: &str, args: &[&str]) -> Result<(), String> {
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
pub(super) fn find(name: &str, args: &[&str]) -> Result<(), String> {
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
pub(super) fn strings(name: &str, args: &[&str]) -> Result<(), String> {
    match args.iter().find(|w| w.starts_with('@')) {
        Some(w) => Err(format!("`{name} {w}` reads options from a file")),
        None => Ok(()),
    }
}

/// `grep` without the flags that read devices or follow every link, and
/// searching below named directories only.
pub(super) fn grep(name: &str, args: &[&str]) -> Result<(), String> {
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
pub(super) fn systemctl(name: &str, args: &[&str]) -> Result<(), String> {
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
pub(super) fn ip(name: &str, args: &[&str]) -> Result<(), String> {
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
