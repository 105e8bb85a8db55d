"""Toolgate's /mcp through the client libraries agents use, as their users
wire them: the MCP Python SDK, LangChain's MultiServerMCPClient (and the
function definitions bind_tools sends a model), the OpenAI Agents SDK's
MCPServerStreamableHttp, and the Anthropic SDK's MCP helpers.

Usage: client_libraries.py URL TOKEN ACCOUNT
(ACCOUNT: a cloud account serving the MCP reference server's tools, or -
where there is none, as on the Worker: the cloud checks are then left out.)
Prints one line per check and exits 1 if any failed. No model is called.
"""

import asyncio
import json
import re
import sys

URL, TOKEN, ACCOUNT = sys.argv[1], sys.argv[2], sys.argv[3]
CLOUD = ACCOUNT != "-"
HEADERS = {"Authorization": f"Bearer {TOKEN}"}
# What OpenAI, Anthropic and Bedrock take as a function's name.
PROVIDER_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
PY = "python__execute"
ECHO = f"{ACCOUNT}__echo"
WEATHER = f"{ACCOUNT}__get-structured-content"
# Text, an image, and bytes that are neither: every client must take them.
FILES_CODE = (
    "open('report.json', 'w').write('{}')\n"
    "import base64\n"
    # A real 1x1 PNG: what a model provider takes as an image.
    "open('pic.png', 'wb').write(base64.b64decode('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=='))\n"
    "open('blob.bin', 'wb').write(bytes(range(256)))\n"
    "result = 42"
)

failed = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what, flush=True)
    if not ok:
        failed.append(what)


async def mcp_sdk():
    global PY
    from mcp import ClientSession
    from mcp.client.streamable_http import streamablehttp_client

    async with streamablehttp_client(URL, headers=HEADERS) as (r, w, _):
        async with ClientSession(r, w) as s:
            await s.initialize()
            tools = {t.name: t for t in (await s.list_tools()).tools}
            bad = [n for n in tools if not PROVIDER_NAME.match(n)]
            check(not bad, f"mcp sdk: every name is a provider function name {bad}")
            check(PY in tools and (ECHO in tools or not CLOUD), f"mcp sdk: {PY} and {ECHO} listed")
            # The checks below do not hang on the names: each fails alone.
            PY = PY if PY in tools else "python.execute"
            a = tools[PY].annotations
            check(
                a is not None and a.readOnlyHint is False and a.openWorldHint is False,
                f"mcp sdk: {PY} has annotations {a}",
            )
            if CLOUD:
                await cloud_checks(s, tools)

            res = await s.call_tool(PY, {"code": FILES_CODE})
            check(
                not res.isError and res.structuredContent["result"] == 42,
                "mcp sdk: python__execute runs",
            )
            kinds = [
                (c.resource.uri, c.resource.mimeType)
                for c in res.content
                if c.type == "resource"
            ]
            check(
                all(m for _, m in kinds) and len(kinds) == 2,
                f"mcp sdk: every file resource has a media type {kinds}",
            )
            check(
                "base64" in res.structuredContent["files"]["blob.bin"],
                "mcp sdk: bytes no client can show stay in files",
            )

            res = await s.call_tool(PY, {"code": "1", "sesion": "new"})
            text = res.content[0].text if res.content else ""
            check(
                res.isError and 'did you mean \\"session\\"' in text,
                f"mcp sdk: a misspelt key is named {text}",
            )


async def cloud_checks(s, tools):
    """A cloud account's tools as the account gives them."""
    a = tools[ECHO].annotations
    check(
        a is not None and a.readOnlyHint is True and a.idempotentHint is True,
        f"mcp sdk: {ECHO} keeps its account's annotations {a}",
    )
    check(
        tools[WEATHER].outputSchema is not None
        and "temperature" in tools[WEATHER].outputSchema["properties"],
        "mcp sdk: a cloud tool lists its account's output schema",
    )

    res = await s.call_tool(ECHO, {"message": "hi"})
    check(
        not res.isError
        and res.content[0].type == "text"
        and res.content[0].text == "Echo: hi",
        f"mcp sdk: a cloud result is the account's own {res.content}",
    )
    res = await s.call_tool(ECHO, {"message": 5})
    check(res.isError is True, f"mcp sdk: a cloud tool's failure is isError {res}")
    res = await s.call_tool(WEATHER, {"location": "Chicago"})
    check(
        not res.isError and res.structuredContent.get("temperature") == 36,
        f"mcp sdk: a cloud tool's structuredContent passes through {res.structuredContent}",
    )


async def langchain():
    from langchain_core.messages import ToolMessage
    from langchain_core.utils.function_calling import convert_to_openai_tool
    from langchain_mcp_adapters.client import MultiServerMCPClient

    for prefix in (False, True):
        client = MultiServerMCPClient(
            {"toolgate": {"transport": "streamable_http", "url": URL, "headers": HEADERS}},
            tool_name_prefix=prefix,
        )
        tools = await client.get_tools()
        # What bind_tools sends a model: the function definitions.
        sent = [convert_to_openai_tool(t)["function"]["name"] for t in tools]
        bad = [n for n in sent if not PROVIDER_NAME.match(n)]
        check(
            not bad and sent,
            f"langchain (tool_name_prefix={prefix}): bind_tools names {bad}",
        )
    client = MultiServerMCPClient(
        {"toolgate": {"transport": "streamable_http", "url": URL, "headers": HEADERS}}
    )
    tools = {t.name: t for t in await client.get_tools()}
    call = {"type": "tool_call", "id": "c1", "name": PY, "args": {"code": FILES_CODE}}
    try:
        msg = await tools[PY].ainvoke(call)
        check(isinstance(msg, ToolMessage), "langchain: a result with files reaches the agent")
    except Exception as e:  # noqa: BLE001 - the failure under test
        check(False, f"langchain: a result with files raised {type(e).__name__}: {e}")
    if not CLOUD:
        return
    call = {"type": "tool_call", "id": "c2", "name": ECHO, "args": {"message": 5}}
    try:
        msg = await tools[ECHO].ainvoke(call)
        check(
            getattr(msg, "status", "") == "error",
            f"langchain: a cloud tool's failure is an error message {msg!r}",
        )
    except Exception as e:  # noqa: BLE001 - the adapters raise a tool error
        check(
            "ToolException" in type(e).__name__ or "Error" in type(e).__name__,
            f"langchain: a cloud tool's failure is a tool error ({type(e).__name__})",
        )


async def openai_agents():
    from agents import RunContextWrapper
    from agents.mcp import MCPServerStreamableHttp, MCPUtil

    server = MCPServerStreamableHttp(
        params={"url": URL, "headers": HEADERS, "timeout": 30},
        client_session_timeout_seconds=30,
    )
    async with server:
        listed = await server.list_tools()
        for strict in (False, True):
            fns = [MCPUtil.to_function_tool(t, server, strict) for t in listed]
            bad = [f.name for f in fns if not PROVIDER_NAME.match(f.name)]
            check(not bad and fns, f"openai agents (strict={strict}): names {bad}")
        by = {t.name: t for t in listed}
        ctx = RunContextWrapper(context=None)
        out = await MCPUtil.invoke_mcp_tool(server, by[PY], ctx, json.dumps({"code": FILES_CODE}))
        check("42" in json.dumps(out, default=str), "openai agents: python__execute runs")


async def anthropic_helpers():
    from anthropic.lib.tools.mcp import async_mcp_tool
    from mcp import ClientSession
    from mcp.client.streamable_http import streamablehttp_client

    async with streamablehttp_client(URL, headers=HEADERS) as (r, w, _):
        async with ClientSession(r, w) as s:
            await s.initialize()
            listed = (await s.list_tools()).tools
            tools = {t.name: async_mcp_tool(t, s) for t in listed}
            bad = [n for n in tools if not PROVIDER_NAME.match(tools[n].to_dict()["name"])]
            check(not bad, f"anthropic: tool names {bad}")
            try:
                out = await tools[PY].call({"code": FILES_CODE})
                check(bool(out), "anthropic: a result with files converts")
            except Exception as e:  # noqa: BLE001 - the failure under test
                check(False, f"anthropic: a result with files raised {type(e).__name__}: {e}")


async def main():
    for part in (mcp_sdk, langchain, openai_agents, anthropic_helpers):
        try:
            await part()
        except Exception as e:  # noqa: BLE001 - one library's crash is one failure
            check(False, f"{part.__name__} crashed: {type(e).__name__}: {e}")
    if failed:
        print(f"{len(failed)} checks failed", flush=True)
        sys.exit(1)


asyncio.run(main())
