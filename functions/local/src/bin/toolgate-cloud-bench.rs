//! The cloud proxy's overhead: the same MCP tool call made directly to the
//! MCP server (one rmcp session, reused) and through `toolgate serve`
//! (`POST /tools/<account>__echo` on one keep-alive connection), alternated
//! in one run. Prints JSON medians and the difference.

use std::time::Instant;

use clap::Parser;
use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::transport::StreamableHttpClientTransport;
use serde_json::json;

mod common;
use common::{Conn, median};

/// The cloud proxy's overhead over calling the MCP server directly.
#[derive(Parser)]
struct Args {
    /// The MCP server's URL.
    #[arg(long, value_name = "URL")]
    mcp: String,
    /// A running `toolgate serve` with that server as an account.
    #[arg(long, value_name = "HOST:PORT")]
    toolgate: String,
    /// The account's id in toolgate.
    #[arg(long, value_name = "ID")]
    account: String,
    /// Calls per series.
    #[arg(long, default_value_t = 301)]
    n: usize,
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let Args {
        mcp,
        toolgate,
        account,
        n,
    } = Args::parse();
    let client =
        ().serve(StreamableHttpClientTransport::from_uri(mcp))
            .await
            .expect("connect to the MCP server");
    let mut conn = Conn::open(&toolgate);
    let path = format!("/tools/{account}__echo");
    let body = json!({"message": "bench"}).to_string();
    let (mut direct, mut proxied) = (Vec::new(), Vec::new());
    for i in 0..n + 20 {
        let t = Instant::now();
        let mut call = CallToolRequestParams::new("echo");
        call.arguments = json!({"message": "bench"}).as_object().cloned();
        client.call_tool(call).await.expect("direct call");
        let d = t.elapsed().as_secs_f64() * 1000.0;
        let t = Instant::now();
        assert_eq!(conn.post(&path, &body).0, 200, "proxied call");
        let p = t.elapsed().as_secs_f64() * 1000.0;
        if i >= 20 {
            // The first calls warm both paths up.
            direct.push(d);
            proxied.push(p);
        }
    }
    let (d, p) = (median(direct), median(proxied));
    println!(
        "{}",
        json!({"n": n, "direct_median_ms": d, "proxied_median_ms": p, "overhead_median_ms": p - d})
    );
}
