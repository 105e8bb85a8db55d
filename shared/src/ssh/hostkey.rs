//! The pinned host key of a server: an OpenSSH public-key line
//! (`ssh-ed25519 AAAA... comment`) or a `SHA256:` fingerprint, as printed by
//! `ssh-keygen -lf` and `ssh-keyscan | ssh-keygen -lf -`.

use russh::keys::{HashAlg, PublicKey, ssh_key::Fingerprint};

/// The key a server must present; any other fails the connection before
/// authentication.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HostKeyPin {
    /// The whole public key (from an OpenSSH public-key line, or a
    /// `known_hosts` line's key part).
    Key(Box<PublicKey>),
    /// The key's SHA-256 fingerprint.
    Fingerprint(Fingerprint),
}

impl HostKeyPin {
    /// The pin as the inventory writes it; `Err` says what is wrong with it.
    pub fn parse(raw: &str) -> Result<Self, String> {
        let raw = raw.trim();
        if raw.is_empty() {
            return Err("host_key is empty; pin the server's key (an OpenSSH public-key line or a SHA256: fingerprint)".into());
        }
        if raw.starts_with("SHA256:") {
            let fp: Fingerprint = raw
                .parse()
                .map_err(|e| format!("host_key {raw:?} is not a valid SHA256 fingerprint: {e}"))?;
            return Ok(Self::Fingerprint(fp));
        }
        // A known_hosts line starts with the host pattern; accept the key part.
        let key_part = raw
            .split_whitespace()
            .position(|w| w.starts_with("ssh-") || w.starts_with("ecdsa-"))
            .map(|i| raw.split_whitespace().skip(i).collect::<Vec<_>>().join(" "))
            .unwrap_or_else(|| raw.to_owned());
        PublicKey::from_openssh(&key_part)
            .map(|k| Self::Key(Box::new(k)))
            .map_err(|e| {
                format!(
                    "host_key is neither an OpenSSH public-key line nor a SHA256: fingerprint ({e})"
                )
            })
    }

    /// Whether the key the server presented is the pinned one. Comments are
    /// ignored; the key material must match exactly.
    pub fn matches(&self, seen: &PublicKey) -> bool {
        match self {
            Self::Key(k) => k.key_data() == seen.key_data(),
            Self::Fingerprint(fp) => seen.fingerprint(HashAlg::Sha256) == *fp,
        }
    }

    /// The pin as `SHA256:...`, for messages.
    pub fn fingerprint(&self) -> String {
        match self {
            Self::Key(k) => k.fingerprint(HashAlg::Sha256).to_string(),
            Self::Fingerprint(fp) => fp.to_string(),
        }
    }
}

/// How a presented key is named in errors: algorithm and SHA256 fingerprint.
pub fn describe(key: &PublicKey) -> String {
    format!(
        "{} {}",
        key.algorithm().as_str(),
        key.fingerprint(HashAlg::Sha256)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    const ED: &str =
        "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOOq7HvTKUfJpypu3f4v9dzx7/Uze10p3y2UlOf9170k test";
    const OTHER: &str =
        "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHWaVMuu2Kn9uqSL4lx4EqiaqIFnVJodOprnL82+8YFm x";

    #[test]
    fn line_fingerprint_and_known_hosts_forms_agree() {
        let key = PublicKey::from_openssh(ED).unwrap();
        let by_line = HostKeyPin::parse(ED).unwrap();
        let fp = key.fingerprint(HashAlg::Sha256).to_string();
        let by_fp = HostKeyPin::parse(&fp).unwrap();
        let by_known_hosts = HostKeyPin::parse(&format!("[10.0.0.5]:2222 {ED}")).unwrap();
        for pin in [&by_line, &by_fp, &by_known_hosts] {
            assert!(pin.matches(&key));
            assert_eq!(pin.fingerprint(), fp);
        }
        let other = PublicKey::from_openssh(OTHER).unwrap();
        for pin in [&by_line, &by_fp, &by_known_hosts] {
            assert!(!pin.matches(&other));
        }
    }

    #[test]
    fn malformed_pins_are_refused() {
        for bad in [
            "",
            "  ",
            "SHA256:",
            "SHA256:!!!",
            "ssh-ed25519 notbase64",
            "hello",
        ] {
            assert!(HostKeyPin::parse(bad).is_err(), "{bad:?}");
        }
    }
}
