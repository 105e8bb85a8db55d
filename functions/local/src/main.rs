//! `toolgate`: every tool on one machine, with embedded defaults.

mod check;
mod inbox;
mod init;
mod out;
mod serve;

use std::io::Read;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use serde_json::json;
use toolgate_python::WithPython;
use toolgate_python::sandbox::alloc::SandboxAlloc;
use toolgate_shared::{
    config::Config,
    error::ToolError,
    invoke::{Transport, invoke},
    spec_export::{Format, export_specs},
    tool::CallContext,
    toolset::Toolset,
};
use toolgate_ssh::WithSsh;

// Reports out-of-memory from sandbox children instead of a bare abort.
#[global_allocator]
static ALLOC: SandboxAlloc = SandboxAlloc;

/// Shown after the top-level help.
const MORE_HELP: &str = "\
Start here:
  toolgate init                 write a commented toolgate.toml
  toolgate check                is this config and this machine ready?
  toolgate serve                serve HTTP, MCP (/mcp) and OpenAPI on 127.0.0.1:8080

Environment (each overrides the config file's setting; docs/configuration.md lists all):
  TOOLGATE_CONFIG          the config file (default ./toolgate.toml when present)
  TOOLGATE_ADDR            where serve listens
  TOOLGATE_TOKEN           the caller token serve requires
  TOOLGATE_DATA_DIR        sessions, questions and approvals (default ~/.local/share/toolgate)
  TOOLGATE_PUBLIC_URL      the base of the answer links people open
  TOOLGATE_PYTHON_TIMEOUT  seconds a script may run (1-1200, default 20)
  TOOLGATE_LOG=json        one JSON object per log line
  TOOLGATE_LOG_LEVEL       a tracing filter (default info)

Each command's own help shows an example: toolgate help call";

#[derive(Parser)]
#[command(
    name = "toolgate",
    version,
    about = "Tools for hosted AI agents, on one machine: sandboxed Python, questions to a \
             person, SSH and cloud tools behind approvals",
    after_help = MORE_HELP
)]
struct Cli {
    /// Config file (default: ./toolgate.toml when present).
    #[arg(long, global = true, env = "TOOLGATE_CONFIG")]
    config: Option<PathBuf>,
    #[command(subcommand)]
    command: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Serve the HTTP API, MCP at /mcp and OpenAPI at /openapi.json.
    #[command(after_help = "\
Examples:
  toolgate serve
  toolgate serve --addr 0.0.0.0:8080 --token \"$(openssl rand -hex 24)\"
  curl -s localhost:8080/tools/python.execute -H 'content-type: application/json' \\
       -d '{\"code\": \"print(6 * 7)\"}'")]
    Serve {
        /// Address to bind [default: server.addr in the config file, else
        /// TOOLGATE_ADDR, else 127.0.0.1:8080].
        #[arg(long)]
        addr: Option<String>,
        /// Require `Authorization: Bearer TOKEN` from callers [default:
        /// TOOLGATE_TOKEN, or the config file's tokens].
        #[arg(long)]
        token: Option<String>,
    },
    /// Serve every tool over MCP on stdin and stdout, for desktop MCP
    /// clients that start a local server (Claude Desktop, VS Code).
    #[command(after_help = "\
Example (Claude Desktop's claude_desktop_config.json):
  {\"mcpServers\": {\"toolgate\": {\"command\": \"toolgate\", \"args\": [\"mcp-stdio\"]}}}")]
    McpStdio,
    /// Call one tool and print its result as JSON.
    #[command(after_help = "\
Examples:
  toolgate call python.execute --json '{\"code\": \"result = 6 * 7\"}'
  echo '{\"code\": \"print(1)\"}' | toolgate call python__execute

Exit status: 0 with the result on stdout; 1 with the contract's error on stderr.")]
    Call {
        /// Tool name, canonical (`python.execute`) or exported (`python__execute`).
        name: String,
        /// Arguments as JSON; read from stdin when absent.
        #[arg(long)]
        json: Option<String>,
    },
    /// Print the tool specs.
    #[command(after_help = "\
Examples:
  toolgate tools
  toolgate tools --format openai > tools.json")]
    Tools {
        /// How to write them.
        #[arg(long, default_value = "native", value_parser = ["native", "openai", "anthropic", "mcp"])]
        format: String,
    },
    /// Write a commented config file to start from.
    #[command(after_help = "\
Examples:
  toolgate init                     writes ./toolgate.toml (never over an existing file)
  toolgate init /etc/toolgate.toml
  toolgate init - | less            prints it instead")]
    Init {
        /// Where to write it (`-`: stdout).
        #[arg(default_value = "toolgate.toml")]
        path: PathBuf,
        /// Replace a file that exists.
        #[arg(long)]
        force: bool,
    },
    /// Check the config and this machine: the data folder, the sandbox, each
    /// SSH server (host key and login), each cloud account, clarify's store.
    #[command(after_help = "\
Examples:
  toolgate check
  toolgate --config prod.toml check --json

Exit status: 0 when nothing failed (warnings included), 1 otherwise. Nothing is run
on an SSH server and no notification is sent.")]
    Check {
        /// One JSON document instead of lines.
        #[arg(long)]
        json: bool,
    },
    /// Review and decide approvals (this machine's, or a server's with --url).
    Approvals {
        #[command(flatten)]
        target: inbox::Target,
        #[command(subcommand)]
        cmd: inbox::ApprovalsCmd,
    },
    /// Review, answer or withdraw the questions agents asked.
    Clarifications {
        #[command(flatten)]
        target: inbox::Target,
        #[command(subcommand)]
        cmd: inbox::ClarificationsCmd,
    },
}

/// Every tool this machine can serve; `serving` for a server that lives on
/// between requests (`call` runs one and exits).
async fn build(cfg: &Config, serving: bool) -> Result<Toolset, String> {
    let set = Toolset::new().with_backends(toolgate_aws::Aws::backends());
    let set = if serving { set.long_running() } else { set };
    set.with_approvals(cfg)
        .await?
        .with_python(cfg)
        .await?
        .with_cloud(cfg)
        .await?
        .with_ssh(cfg)
        .await?
        .with_clarify(cfg)
        .await
        .map(|t| {
            let t = t.with_http(cfg);
            // A one-off `call` exits at once: a timer of its own would be cut
            // mid-sweep (an error line after the answer) and sweeps nothing.
            if serving {
                t.sweep_every(std::time::Duration::from_secs(cfg.clarify.sweep_secs))
            } else {
                t
            }
        })
}

/// The specs of every tool `cfg` configures, in the order [`build`]'s
/// server lists them, without starting any.
async fn specs(cfg: &Config) -> Result<Vec<toolgate_shared::tool::ToolSpec>, String> {
    let mut specs = toolgate_python::specs(cfg);
    specs.extend(toolgate_ssh::specs(cfg));
    specs.extend(Toolset::specs(cfg).await?);
    Ok(specs)
}

fn main() -> ExitCode {
    toolgate_python::sandbox::zygote::maybe_run();
    let cli = Cli::parse();
    // One-shot commands print JSON on stdout; keep stderr to what matters.
    let level = match cli.command {
        Cmd::Serve { .. } => "info",
        _ => "warn",
    };
    toolgate_shared::logging::init(level);
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => return fatal(&format!("cannot start the runtime: {e}")),
    };
    rt.block_on(async {
        let code = run(cli).await;
        // Spans still queued are sent before the process ends.
        toolgate_shared::traces::flush(std::time::Duration::from_secs(3)).await;
        code
    })
}

fn fatal(msg: &str) -> ExitCode {
    eprintln!("toolgate: {msg}");
    ExitCode::from(2)
}

async fn run(cli: Cli) -> ExitCode {
    // Against a server the inbox is a client: this machine's config (whose
    // TOOLGATE_APPROVER_TOKEN would define a server's approver) plays no part.
    match &cli.command {
        Cmd::Approvals { target, cmd } if target.remote() => {
            return inbox::approvals(None, target.clone(), cmd.clone()).await;
        }
        Cmd::Clarifications { target, cmd } if target.remote() => {
            return inbox::clarifications(None, target.clone(), cmd.clone()).await;
        }
        _ => {}
    }
    let mut cfg = match Config::from_env_and_file(cli.config.as_deref()) {
        Ok(c) => c,
        Err(e) => return fatal(&e.to_string()),
    };
    // `check` lists them among its findings.
    if !matches!(cli.command, Cmd::Check { .. }) {
        for warning in &cfg.warnings {
            tracing::warn!(target: "toolgate::config", "{warning}");
        }
    }
    match cli.command {
        Cmd::Serve { addr, token } => {
            if let Some(a) = addr {
                cfg.server.addr = a;
            }
            if let Some(t) = token
                && let Err(e) = cfg.set_caller_token(&t)
            {
                return fatal(&e.to_string());
            }
            serve::run(cfg).await
        }
        Cmd::Call { name, json } => call(cfg, &name, json).await,
        Cmd::Init { path, force } => init::run(&path, force),
        Cmd::Check { json } => check::run(&cfg, json).await,
        Cmd::McpStdio => mcp_stdio(cfg).await,
        Cmd::Approvals { target, cmd } => inbox::approvals(Some(cfg), target, cmd).await,
        Cmd::Clarifications { target, cmd } => inbox::clarifications(Some(cfg), target, cmd).await,
        Cmd::Tools { format } => {
            let format = match Format::parse(&format) {
                Ok(f) => f,
                Err(e) => return fatal(&e.message),
            };
            match specs(&cfg).await {
                Ok(specs) => {
                    out::json(&export_specs(&specs, format));
                    ExitCode::SUCCESS
                }
                Err(e) => fatal(&e),
            }
        }
    }
}

async fn call(cfg: Config, name: &str, args: Option<String>) -> ExitCode {
    toolgate_shared::sqlite_file::keep_private(&cfg.data_dir);
    let app = match build(&cfg, false).await {
        Ok(a) => a,
        Err(e) => return fatal(&e),
    };
    let raw = match args {
        Some(a) => a,
        None => {
            let mut s = String::new();
            if let Err(e) = std::io::stdin().read_to_string(&mut s) {
                return fatal(&format!("cannot read arguments from stdin: {e}"));
            }
            s
        }
    };
    let args = |_| async {
        if raw.trim().is_empty() {
            return Ok(json!({}));
        }
        serde_json::from_str(&raw)
            .map_err(|e| ToolError::invalid_input(format!("Arguments are not valid JSON: {e}")))
    };
    let ctx = CallContext::default();
    let outcome = invoke(&app.registry, Transport::Cli, name, args, &ctx).await;
    match outcome {
        Ok(v) => {
            out::json(&v);
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("{}", e.body());
            ExitCode::from(1)
        }
    }
}

/// `toolgate mcp-stdio`: the tools of `toolgate serve`, for one client on
/// stdin and stdout; the local user is the caller, as with `call`.
async fn mcp_stdio(cfg: Config) -> ExitCode {
    toolgate_shared::sqlite_file::keep_private(&cfg.data_dir);
    let app = match build(&cfg, true).await {
        Ok(a) => a,
        Err(e) => return fatal(&e),
    };
    if app.clarify().is_some() && cfg.clarify.public_url.is_none() {
        tracing::warn!(
            "no TOOLGATE_PUBLIC_URL: clarify's answer links point at this machine's default address, \
             where nothing listens unless `toolgate serve` runs on the same data folder; people can \
             answer with `toolgate clarifications answer`"
        );
    }
    let registry = std::sync::Arc::new(app.registry.clone());
    let outcome = serve_stdio(registry).await;
    app.shutdown().await;
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => fatal(&e),
    }
}

/// The `/mcp` server over stdin and stdout; returns when the client closes
/// the stream. Stdout carries only protocol messages: logs go to stderr.
async fn serve_stdio(
    registry: std::sync::Arc<toolgate_shared::registry::Registry>,
) -> Result<(), String> {
    use rmcp::ServiceExt;
    let running = toolgate_shared::mcp::McpServer::new(registry)
        .serve(rmcp::transport::stdio())
        .await
        .map_err(|e| format!("MCP over stdio did not start: {e}"))?;
    running
        .waiting()
        .await
        .map(|_| ())
        .map_err(|e| format!("MCP over stdio stopped: {e}"))
}
