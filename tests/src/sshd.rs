//! A real OpenSSH `sshd` (Debian `openssh-server`) on 127.0.0.1 and a random
//! port, with its own config, host key and client key in a private folder.
//! It never touches the system sshd. As root it logs in a dedicated
//! non-root user ([`TEST_USER`], created by `scripts/install-test-tools`);
//! otherwise sshd runs unprivileged and logs in the current user.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use crate::peer::{Peer, free_port, run_ok};

pub const TEST_USER: &str = "toolgate-sshtest";
pub const SSHD: &str = "/usr/sbin/sshd";

pub struct Sshd {
    pub peer: Peer,
    pub port: u16,
    pub user: String,
    pub dir: PathBuf,
}

fn keygen(path: &Path, comment: &str) {
    run_ok(
        Command::new("ssh-keygen")
            .args(["-q", "-t", "ed25519", "-N", "", "-C", comment, "-f"])
            .arg(path),
        "ssh-keygen",
    );
}

impl Sshd {
    pub fn start() -> Self {
        assert!(
            Path::new(SSHD).exists(),
            "{SSHD} is missing: install Debian's openssh-server (scripts/install-test-tools does)"
        );
        let root = is_root();
        let user = if root {
            TEST_USER.to_owned()
        } else {
            std::env::var("USER").unwrap_or_else(|_| "nobody".into())
        };
        // Unique within this process by a counter: tests start sshds at
        // once, and a port number (this used one) can be handed out twice.
        static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let dir = std::env::temp_dir().join(format!(
            "toolgate-sshd-{}-{}",
            std::process::id(),
            N.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        ));
        // Left by an earlier run whose process had this pid.
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir(&dir).unwrap();
        keygen(&dir.join("host_ed25519"), "toolgate test host");
        keygen(&dir.join("client_ed25519"), "toolgate test client");
        std::fs::copy(dir.join("client_ed25519.pub"), dir.join("authorized_keys")).unwrap();
        // sshd reads authorized_keys as the user: world-readable folder and file.
        use std::os::unix::fs::PermissionsExt;
        for (p, mode) in [(dir.clone(), 0o755), (dir.join("authorized_keys"), 0o644)] {
            std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap();
        }
        // A port chosen free can be taken before sshd binds it (sshd then
        // exits: "Address already in use"): try another.
        let mut attempt = 0;
        let (peer, port) = loop {
            let port = free_port();
            let config = format!(
                "Port {port}\n\
                 ListenAddress 127.0.0.1\n\
                 HostKey {dir}/host_ed25519\n\
                 PidFile {dir}/sshd.pid\n\
                 AuthorizedKeysFile {dir}/authorized_keys\n\
                 AllowUsers {user}\n\
                 PubkeyAuthentication yes\n\
                 PasswordAuthentication no\n\
                 KbdInteractiveAuthentication no\n\
                 UsePAM no\n\
                 StrictModes no\n\
                 MaxSessions 10\n\
                 MaxStartups 100:30:200\n\
                 PerSourcePenalties no\n\
                 LogLevel VERBOSE\n",
                dir = dir.display()
            );
            std::fs::write(dir.join("sshd_config"), config).unwrap();
            // PerSourcePenalties is OpenSSH 9.8+; check the file and drop the
            // line for an older sshd.
            let check = Command::new(SSHD)
                .arg("-t")
                .arg("-f")
                .arg(dir.join("sshd_config"))
                .output()
                .unwrap();
            if !check.status.success() {
                let text = std::fs::read_to_string(dir.join("sshd_config")).unwrap();
                std::fs::write(
                    dir.join("sshd_config"),
                    text.replace("PerSourcePenalties no\n", ""),
                )
                .unwrap();
            }
            if root {
                // Privilege separation needs this folder (root-owned, 0755).
                std::fs::create_dir_all("/run/sshd").unwrap();
            }
            let mut peer = Peer::spawn(
                "sshd",
                Command::new(SSHD)
                    .args(["-D", "-e", "-f"])
                    .arg(dir.join("sshd_config")),
            );
            attempt += 1;
            match peer.try_wait_for_port(port, Duration::from_secs(20)) {
                Ok(()) => break (peer, port),
                Err(e) if attempt == 3 => panic!("{e}"),
                Err(e) => eprintln!("sshd did not start, trying another port: {e}"),
            }
        };
        Self {
            peer,
            port,
            user,
            dir,
        }
    }

    pub fn host_key_line(&self) -> String {
        std::fs::read_to_string(self.dir.join("host_ed25519.pub"))
            .unwrap()
            .trim()
            .to_owned()
    }

    /// `SHA256:...` of the host key, as `ssh-keygen -lf` prints it.
    pub fn host_fingerprint(&self) -> String {
        let out = run_ok(
            Command::new("ssh-keygen")
                .arg("-lf")
                .arg(self.dir.join("host_ed25519.pub")),
            "ssh-keygen -lf",
        );
        out.split_whitespace().nth(1).unwrap().to_owned()
    }

    pub fn client_key_path(&self) -> PathBuf {
        self.dir.join("client_ed25519")
    }

    /// A `[servers.NAME]` table for this sshd.
    pub fn server_toml(&self, name: &str, extra: &str) -> String {
        format!(
            "[servers.{name}]\nhost = \"127.0.0.1\"\nport = {}\nusername = \"{}\"\nkey_file = \"{}\"\nhost_key = \"{}\"\ntags = [\"test\", \"loopback\"]\n{extra}\n",
            self.port,
            self.user,
            self.client_key_path().display(),
            self.host_key_line()
        )
    }

    /// The per-connection sshd processes (not the listener).
    pub fn connection_pids(&self) -> Vec<u32> {
        crate::descendants_of(self.peer.pid())
    }

    /// PIDs of the test user's processes whose command line holds `needle`.
    pub fn remote_processes(&self, needle: &str) -> Vec<u32> {
        let mut found = Vec::new();
        for entry in std::fs::read_dir("/proc").unwrap().flatten() {
            let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
                continue;
            };
            let Ok(cmd) = std::fs::read(format!("/proc/{pid}/cmdline")) else {
                continue;
            };
            let cmd = String::from_utf8_lossy(&cmd).replace('\0', " ");
            if cmd.contains(needle) && !cmd.contains("sshd") {
                found.push(pid);
            }
        }
        found
    }
}

impl Drop for Sshd {
    fn drop(&mut self) {
        self.peer.kill();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() == 0 }
}
