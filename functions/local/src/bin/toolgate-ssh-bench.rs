//! ssh_run's latency on loopback, in one run: a first call to a server (TCP,
//! key exchange, authentication, command), a repeat call on the pooled
//! connection, and the OpenSSH `ssh` client doing the same, alternated so
//! that machine noise hits all three alike. Prints JSON medians and ratios.

use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use toolgate_shared::ssh::doc::ServerDoc;
use toolgate_shared::ssh::inventory::{ConfigServers, Inventory, Server};
use toolgate_ssh::{Request, Ssh, SshSettings};

const COMMAND: &str = "true";

fn percentile(v: &mut [f64], p: f64) -> f64 {
    v.sort_by(f64::total_cmp);
    v[((v.len() - 1) as f64 * p).round() as usize]
}

fn service(server: &Server) -> Ssh {
    Ssh::new(
        Inventory::new(
            Box::new(ConfigServers(vec![server.clone()])),
            Duration::from_secs(3600),
        ),
        SshSettings {
            max_timeout: Duration::from_secs(60),
            connect_timeout: Duration::from_secs(10),
            max_output_bytes: 8 << 20,
            approve: Default::default(),
            approve_tags: Vec::new(),
        },
    )
}

async fn call(ssh: &Ssh, server: &Server) -> f64 {
    let t = Instant::now();
    let (out, _) = ssh
        .run(Request {
            server,
            command: COMMAND,
            timeout: Duration::from_secs(30),
            cancel: None,
        })
        .await
        .expect("ssh_run");
    assert_eq!(out.exit_code, 0, "{out:?}");
    t.elapsed().as_secs_f64() * 1000.0
}

/// ssh_run's latency on loopback against OpenSSH's `ssh`.
#[derive(clap::Parser)]
struct Args {
    /// The sshd's port on 127.0.0.1.
    #[arg(long)]
    port: u16,
    /// The user to log in as.
    #[arg(long)]
    user: String,
    /// The private key file.
    #[arg(long, value_name = "FILE")]
    key: String,
    /// The server's public host key (`FILE.pub`).
    #[arg(long, value_name = "FILE")]
    host_key: String,
    /// Calls per series.
    #[arg(long, default_value_t = 101)]
    n: usize,
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let Args {
        port,
        user,
        key,
        host_key,
        n,
    } = <Args as clap::Parser>::parse();
    let doc = ServerDoc {
        key_file: None,
        host: "127.0.0.1".into(),
        port,
        username: user.clone(),
        tags: vec![],
        host_key: std::fs::read_to_string(&host_key).expect("host key file"),
        policy: None,
        max_sessions: None,
    };
    let private: Arc<str> = std::fs::read_to_string(&key).expect("key file").into();
    let server = doc.into_server("bench", private).expect("server");

    let reused = service(&server);
    call(&reused, &server).await; // connects once
    let (mut first, mut repeat, mut cli) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..n {
        let fresh = service(&server);
        first.push(call(&fresh, &server).await);
        fresh.close().await;
        repeat.push(call(&reused, &server).await);
        let t = Instant::now();
        let st = Command::new("ssh")
            .args([
                "-q",
                "-o",
                "BatchMode=yes",
                "-o",
                "StrictHostKeyChecking=no",
            ])
            .args(["-o", "UserKnownHostsFile=/dev/null", "-o", "LogLevel=ERROR"])
            .args(["-i", &key, "-p", &port.to_string()])
            .arg(format!("{user}@127.0.0.1"))
            .arg(COMMAND)
            .status()
            .expect("ssh");
        assert!(st.success(), "ssh CLI failed");
        cli.push(t.elapsed().as_secs_f64() * 1000.0);
    }
    let (f50, r50, c50) = (
        percentile(&mut first, 0.5),
        percentile(&mut repeat, 0.5),
        percentile(&mut cli, 0.5),
    );
    let report = serde_json::json!({
        "n": n,
        "command": COMMAND,
        "first_call_ms": {"p50": f50, "p90": percentile(&mut first, 0.9)},
        "repeat_call_ms": {"p50": r50, "p90": percentile(&mut repeat, 0.9)},
        "ssh_cli_ms": {"p50": c50, "p90": percentile(&mut cli, 0.9)},
        "first_over_cli": f50 / c50,
        "repeat_over_cli": r50 / c50,
        "goals": {
            "repeat_p50_at_most_10ms": r50 <= 10.0,
            "first_at_most_half_of_cli": f50 <= c50 / 2.0,
        }
    });
    println!("{}", serde_json::to_string_pretty(&report).unwrap());
}
