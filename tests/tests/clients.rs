//! `/mcp` through the client libraries agents use (the MCP Python SDK,
//! LangChain's adapters, the OpenAI Agents SDK, the Anthropic SDK's MCP
//! helpers), installed as their users install them: names every model
//! provider takes, files every client can hand on, a cloud account's
//! result and failure as its own, annotations, misspelt keys named
//! (`support/client_libraries.py`). No model is called.

use std::time::Duration;

use toolgate_e2e::launch::Launch;
use toolgate_e2e::peer::{Peer, everything, free_port, tools_dir};
use toolgate_e2e::{Server, support, temp_file};

const TOKEN: &str = "client-libraries-token-0123456789";

/// What a process printed, stdout then stderr.
fn said(out: &std::process::Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

fn run_checks(server: &Server) -> (bool, String) {
    let out = Launch::new(tools_dir().join("clients/bin/python"))
        .arg(support("client_libraries.py"))
        .arg(format!("http://{}/mcp", server.addr))
        .args([TOKEN, "acct"])
        .within(Duration::from_secs(180))
        .output();
    (out.status.success(), said(&out))
}

fn server(extra: &[(&str, &str)]) -> (toolgate_e2e::peer::Peer, Server) {
    let (peer, port) = everything();
    let cfg = temp_file(
        "toolgate-clients",
        &format!("[clouds.acct]\nurl = \"http://127.0.0.1:{port}/mcp\"\n"),
    );
    let mut env = vec![("TOOLGATE_TOKEN", TOKEN)];
    env.extend_from_slice(extra);
    let s = Server::start_with_args(&env, &["--config", cfg.0.to_str().unwrap()]);
    (peer, s)
}

#[test]
fn every_client_library_takes_names_files_and_errors() {
    let (_peer, s) = server(&[]);
    let (ok, said) = run_checks(&s);
    assert!(ok, "{said}");
    assert!(!said.contains("FAIL"), "{said}");
}

/// The checks can fail: with the dotted names MCP allows (the setting
/// kept for clients that want them), every library's name check fails.
#[test]
fn canonical_names_fail_the_providers_pattern() {
    let (_peer, s) = server(&[("TOOLGATE_MCP_NAMES", "canonical")]);
    let (ok, said) = run_checks(&s);
    assert!(!ok, "{said}");
    for library in [
        "mcp sdk",
        "langchain (tool_name_prefix=False)",
        "openai agents (strict=False)",
        "anthropic",
    ] {
        assert!(
            said.lines().any(|l| l.starts_with("FAIL")
                && l.contains(library)
                && l.contains("python.execute")),
            "{library}: {said}"
        );
    }
}

/// `toolgate mcp-stdio` as a desktop client starts it: the MCP Python
/// SDK's stdio client lists the tools and runs a script; stdout carries
/// nothing but the protocol.
#[test]
fn mcp_over_stdio_serves_the_same_tools() {
    let check = r#"
import asyncio, os, sys
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

async def main():
    env = {k: os.environ[k] for k in ("HOME", "TOOLGATE_DATA_DIR", "PATH") if k in os.environ}
    params = StdioServerParameters(command=sys.argv[1], args=["mcp-stdio"], env=env)
    async with stdio_client(params) as (r, w):
        async with ClientSession(r, w) as s:
            await s.initialize()
            names = [t.name for t in (await s.list_tools()).tools]
            assert names == ["python__execute", "clarify"], names
            res = await s.call_tool("python__execute", {"code": "print('hi'); result = 6 * 7"})
            assert not res.isError and res.structuredContent["result"] == 42, res
            res = await s.call_tool("python__execute", {"code": "1", "timeout": 5})
            assert res.isError and "Unknown input key" in res.content[0].text, res
    print("stdio ok")

asyncio.run(main())
"#;
    let out = Launch::new(tools_dir().join("clients/bin/python"))
        .args(["-c", check])
        .arg(toolgate_e2e::toolgate_bin())
        .within(Duration::from_secs(120))
        .output();
    let text = said(&out);
    assert!(out.status.success() && text.contains("stdio ok"), "{text}");
}

/// Every file in `examples/` runs against `toolgate serve` with its model
/// step scripted (`examples/_scripted.py`, which refuses names a model
/// provider refuses): what README points users at works as written.
#[test]
fn every_example_runs() {
    let s = Server::start(&[("TOOLGATE_TOKEN", TOKEN)]);
    let examples = toolgate_e2e::workspace().join("examples");
    let url = format!("http://{}/mcp", s.addr);
    let env = [
        ("TOOLGATE_URL", url.as_str()),
        ("TOOLGATE_BASE", &url[..url.len() - 4]),
        ("TOOLGATE_TOKEN", TOKEN),
        ("TOOLGATE_EXAMPLE_SCRIPTED", "1"),
    ];
    let run = |launch: Launch, name: &str, want: &str| {
        let out = launch.envs(&env).within(Duration::from_secs(120)).output();
        let text = said(&out);
        assert!(out.status.success(), "{name}: {text}");
        assert!(text.contains(want), "{name}: wanted {want:?} in {text}");
    };
    let python = tools_dir().join("clients/bin/python");
    for (file, want) in [
        ("langchain_agent.py", "\"result\":30"),
        ("openai_agents.py", "\"result\":30"),
        ("anthropic_tool_runner.py", "\"result\":30"),
        ("mcp_python_sdk.py", "file:///hello.txt text/plain"),
    ] {
        let launch = Launch::new(&python).arg(examples.join(file));
        run(launch, file, want);
    }
    // ES modules find packages beside the file, not on NODE_PATH.
    let dir = toolgate_e2e::launch::TempDir::new("toolgate-example-ts");
    std::os::unix::fs::symlink(
        tools_dir().join("node_modules"),
        dir.path().join("node_modules"),
    )
    .unwrap();
    let ts = dir.path().join("mcp_typescript_sdk.mjs");
    std::fs::copy(examples.join("mcp_typescript_sdk.mjs"), &ts).unwrap();
    run(Launch::new("node").arg(&ts), "mcp_typescript_sdk.mjs", "30");
    run(
        Launch::new("bash").arg(examples.join("curl.sh")),
        "curl.sh",
        "did you mean \\\"session\\\"",
    );

    // Claude Desktop's config runs `toolgate … mcp-stdio` (through WSL).
    let desktop: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(examples.join("claude_desktop_config.json")).unwrap(),
    )
    .unwrap();
    let args = &desktop["mcpServers"]["toolgate"]["args"];
    assert_eq!(
        args.as_array().and_then(|a| a.last()),
        Some(&serde_json::json!("mcp-stdio"))
    );
    assert!(args.to_string().contains("/toolgate\""), "{args}");
    // VS Code's is the HTTP endpoint with a prompted token.
    let vscode: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(examples.join("vscode_mcp.json")).unwrap())
            .unwrap();
    assert_eq!(vscode["servers"]["toolgate"]["type"], "http");
}

/// examples/oauth_client_credentials.py against `toolgate serve`, whose
/// callers are the tokens a stand-in token endpoint hands out
/// (support/token_endpoint.py: no Cognito can run here). The first token it
/// hands out is one the server does not take (as if revoked), so the
/// example's retry after a 401 fetches the next; tokens last 3 s and the
/// example pauses 4 s between its calls, so the second call renews first.
#[test]
fn an_agents_oauth_token_is_renewed_before_it_expires_and_after_a_401() {
    let (id, secret) = ("agent-1", "secret-of-agent-1-0123456789");
    let tokens = [
        "revoked-token-0000000000000000",
        "first-token-aaaaaaaaaaaaaaaaaaaa",
        "second-token-bbbbbbbbbbbbbbbbbbb",
    ];
    let port = free_port();
    let mut endpoint = Peer::spawn(
        "token endpoint",
        std::process::Command::new(tools_dir().join("clients/bin/python"))
            .arg(support("token_endpoint.py"))
            .args([&port.to_string(), id, secret, "3"])
            .args(tokens),
    );
    endpoint.wait_for_port(port, Duration::from_secs(30));
    let cfg = temp_file(
        "toolgate-oauth",
        &format!(
            "[[server.tokens]]\nname = \"agent-first\"\ntoken = \"{}\"\n\n\
             [[server.tokens]]\nname = \"agent-second\"\ntoken = \"{}\"\n",
            tokens[1], tokens[2]
        ),
    );
    let s = Server::start_with_args(&[], &["--config", cfg.0.to_str().unwrap()]);
    let token_url = format!("http://127.0.0.1:{port}/oauth2/token");
    let url = format!("http://{}/mcp", s.addr);
    let out = Launch::new(tools_dir().join("clients/bin/python"))
        .arg(toolgate_e2e::workspace().join("examples/oauth_client_credentials.py"))
        .envs(&[
            ("TOOLGATE_URL", url.as_str()),
            ("TOOLGATE_TOKEN_URL", &token_url),
            ("TOOLGATE_CLIENT_ID", id),
            ("TOOLGATE_CLIENT_SECRET", secret),
            ("TOOLGATE_SCOPE", "toolgate/tools"),
            ("TOOLGATE_EXAMPLE_PAUSE", "4"),
        ])
        .within(Duration::from_secs(120))
        .output();
    let text = said(&out);
    assert!(
        out.status.success() && text.contains("first call: 42") && text.contains("second call: 48"),
        "{text}"
    );
    let requests: Vec<serde_json::Value> = endpoint
        .logs()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let issued: Vec<&str> = requests
        .iter()
        .map(|r| r["issued"].as_str().unwrap_or("(refused)"))
        .collect();
    // A slow machine may renew once more within a call: the last token
    // again, never an error.
    assert!(
        issued.len() >= 3 && issued[..3] == tokens && issued[3..].iter().all(|t| *t == tokens[2]),
        "{requests:?}\n{text}"
    );
    assert!(
        requests.iter().all(|r| r["scope"] == "toolgate/tools"),
        "{requests:?}"
    );
}
