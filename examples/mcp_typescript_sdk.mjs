// The MCP TypeScript SDK, without a model: list the tools and run a script.
//
//   npm install @modelcontextprotocol/sdk
//   TOOLGATE_TOKEN=... node mcp_typescript_sdk.mjs
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const url = new URL(process.env.TOOLGATE_URL ?? "http://127.0.0.1:8080/mcp");
const token = process.env.TOOLGATE_TOKEN;
const transport = new StreamableHTTPClientTransport(url, {
  requestInit: { headers: token ? { Authorization: `Bearer ${token}` } : {} },
});
const client = new Client({ name: "toolgate-example", version: "1.0.0" });
await client.connect(transport);

const { tools } = await client.listTools();
console.log(tools.map((t) => t.name));
const result = await client.callTool({
  name: "python__execute",
  arguments: { code: "result = sum(n * n for n in range(5))" },
});
if (result.isError) throw new Error(result.content[0].text);
console.log(result.structuredContent.result);
await client.close();
