//! What the rules ask of a command's words: refused flags, operands, and
//! the special files reading one of which changes the host.

/// Whether `word` may name a device or another special file whose reading
/// changes something (see the module's "Special files").
pub(super) fn special_file(word: &str) -> bool {
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
pub(super) fn refuse(name: &str, args: &[&str], flags: &[(&str, &str)]) -> Result<(), String> {
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
pub(super) fn operands<'a>(args: &[&'a str], short_vals: &str, long_vals: &[&str]) -> Vec<&'a str> {
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
