//! `toolgate`: every tool on one machine, with embedded defaults.

mod inbox;

use std::io::Read;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use serde_json::{Value, json};
use toolgate_python::WithPython;
use toolgate_python::sandbox::alloc::SandboxAlloc;
use toolgate_shared::{
    config::Config,
    error::ToolError,
    http::serve::ServeLimits,
    http::{Origins, Tokens, router},
    invoke::{Transport, invoke},
    spec_export::{Format, export_specs},
    tool::CallContext,
    toolset::Toolset,
};
use toolgate_ssh::WithSsh;

// Reports out-of-memory from sandbox children instead of a bare abort.
#[global_allocator]
static ALLOC: SandboxAlloc = SandboxAlloc;

#[derive(Parser)]
#[command(
    name = "toolgate",
    version,
    about = "Tools for hosted AI agents, on one machine"
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
    /// Serve the HTTP API.
    Serve {
        /// Address to bind (default 127.0.0.1:8080).
        #[arg(long)]
        addr: Option<String>,
        /// Require `Authorization: Bearer TOKEN` (or set TOOLGATE_TOKEN).
        #[arg(long)]
        token: Option<String>,
    },
    /// Serve every tool over MCP on stdin and stdout, for desktop MCP
    /// clients that start a local server (Claude Desktop, VS Code).
    McpStdio,
    /// Call one tool and print its result as JSON.
    Call {
        /// Tool name, canonical (`python.execute`) or exported (`python__execute`).
        name: String,
        /// Arguments as JSON; read from stdin when absent.
        #[arg(long)]
        json: Option<String>,
    },
    /// Print the tool specs.
    Tools {
        #[arg(long, default_value = "native")]
        format: String,
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
            t.with_http(cfg)
                .sweep_every(std::time::Duration::from_secs(cfg.clarify.sweep_secs))
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
    rt.block_on(run(cli))
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
            serve(cfg).await
        }
        Cmd::Call { name, json } => call(cfg, &name, json).await,
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
                    print_json(&export_specs(&specs, format));
                    ExitCode::SUCCESS
                }
                Err(e) => fatal(&e),
            }
        }
    }
}

fn print_json(v: &Value) {
    println!("{}", serde_json::to_string_pretty(v).unwrap_or_default());
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
            print_json(&v);
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

/// Why `cfg` must not be served on `bound`: a non-loopback address
/// without any caller token lets anyone who reaches it run code. Judged on
/// the address actually bound, not on a name looked up before binding
/// (whose answer may change in between).
fn refuse_anonymous(cfg: &Config, bound: std::net::SocketAddr) -> Option<String> {
    if !cfg.server.tokens.is_empty() || bound.ip().to_canonical().is_loopback() {
        return None;
    }
    if cfg.server.allow_anonymous {
        tracing::warn!(
            addr = %cfg.server.addr,
            "serving a non-loopback address without a caller token (TOOLGATE_ALLOW_ANONYMOUS): anyone who reaches it can run code"
        );
        return None;
    }
    Some(format!(
        "refusing to serve {} without a caller token: anyone who reaches it could run code. \
         Give one with --token, TOOLGATE_TOKEN or [[server.tokens]] in the config file, \
         or bind 127.0.0.1 (--addr 127.0.0.1:8080); \
         TOOLGATE_ALLOW_ANONYMOUS=true serves it anyway",
        cfg.server.addr
    ))
}

async fn serve(cfg: Config) -> ExitCode {
    let listener = match tokio::net::TcpListener::bind(&cfg.server.addr).await {
        Ok(l) => l,
        Err(e) => return fatal(&format!("cannot bind {}: {e}", cfg.server.addr)),
    };
    let bound = listener.local_addr().ok();
    if let Some(why) = bound.and_then(|b| refuse_anonymous(&cfg, b)) {
        return fatal(&why);
    }
    toolgate_shared::sqlite_file::keep_private(&cfg.data_dir);
    let app = match build(&cfg, true).await {
        Ok(a) => a,
        Err(e) => return fatal(&e),
    };
    let local = bound
        .map(|a| a.to_string())
        .unwrap_or_else(|| cfg.server.addr.clone());
    // answer_url points at the address actually bound (a port chosen at bind).
    if let (Some(c), None) = (app.clarify(), &cfg.clarify.public_url) {
        c.set_base_url(format!("http://{local}"));
    }
    // Bound to loopback: answer only loopback Host names (DNS rebinding).
    let state = app.app_state(
        Tokens::new(&cfg.server.tokens, &cfg.approvals.approvers),
        bound.is_some_and(|a| a.ip().to_canonical().is_loopback()),
    );
    let mut limits = ServeLimits::from_config(&cfg.server);
    let open_files = limits.fit_descriptors();
    tracing::info!(
        addr = %local,
        auth = !cfg.server.tokens.is_empty(),
        max_connections = limits.max_connections,
        max_connections_per_client = limits.per_client,
        open_files_limit = open_files,
        callers = cfg.server.tokens.len(),
        approvers = cfg.approvals.approvers.len(),
        tools = ?app.registry.tools().iter().map(|t| t.spec().name.clone()).collect::<Vec<_>>(),
        "toolgate listening on http://{local}"
    );
    // On SIGTERM: stop accepting, let calls in flight finish within the
    // grace period, then stop anyway; dropping the sandbox kills its children.
    let grace = std::time::Duration::from_secs(cfg.server.shutdown_grace_secs);
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let app_router = router(state, Origins::from_config(&cfg));
    let server = toolgate_shared::http::serve::serve(listener, app_router, limits, async move {
        shutdown_signal().await;
        tracing::info!(grace_secs = grace.as_secs(), "shutting down");
        let _ = stop_tx.send(());
    });
    let served = tokio::select! {
        r = server => r,
        _ = async {
            let _ = stop_rx.await;
            tokio::time::sleep(grace).await;
        } => {
            tracing::warn!("calls still running after the grace period; stopping them");
            Ok(())
        }
    };
    // Close upstream sessions; dropping the tools kills the sandbox's children.
    app.shutdown().await;
    drop(app);
    match served {
        Ok(()) => {
            tracing::info!("toolgate stopped");
            ExitCode::SUCCESS
        }
        Err(e) => fatal(&format!("server error: {e}")),
    }
}

async fn shutdown_signal() {
    use tokio::signal::unix::{SignalKind, signal};
    let mut term = match signal(SignalKind::terminate()) {
        Ok(s) => s,
        Err(_) => return std::future::pending().await,
    };
    tokio::select! {
        _ = term.recv() => {},
        _ = tokio::signal::ctrl_c() => {},
    }
}
