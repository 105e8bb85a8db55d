"""The Anthropic SDK: Toolgate's /mcp tools through the SDK's MCP helpers
and its tool runner.

    pip install anthropic mcp
    TOOLGATE_TOKEN=... ANTHROPIC_API_KEY=... python anthropic_tool_runner.py

(Anthropic's API can also reach a public Toolgate itself, with the MCP
connector: `mcp_servers=[{"type": "url", "url": ".../mcp", "name":
"toolgate", "authorization_token": TOKEN}]`.)
"""

import asyncio
import os

from anthropic.lib.tools.mcp import async_mcp_tool
from mcp import ClientSession
from mcp.client.streamable_http import streamablehttp_client

URL = os.environ.get("TOOLGATE_URL", "http://127.0.0.1:8080/mcp")
TOKEN = os.environ.get("TOOLGATE_TOKEN")


async def main():
    headers = {"Authorization": f"Bearer {TOKEN}"} if TOKEN else {}
    async with streamablehttp_client(URL, headers=headers) as (read, write, _):
        async with ClientSession(read, write) as session:
            await session.initialize()
            tools = [async_mcp_tool(t, session) for t in (await session.list_tools()).tools]
            if os.environ.get("TOOLGATE_EXAMPLE_SCRIPTED"):
                # The model's step, scripted: the tool definitions it would
                # get, and the call it would make.
                from _scripted import ARGS, TOOL, check_names

                check_names([t.to_dict()["name"] for t in tools])
                runnable = next(t for t in tools if t.name == TOOL)
                print(await runnable.call(ARGS))
                return
            from anthropic import AsyncAnthropic

            runner = AsyncAnthropic().beta.messages.tool_runner(
                model="claude-sonnet-4-5",
                max_tokens=1024,
                tools=tools,
                messages=[{"role": "user", "content": "Sum the squares of 0..4 with Python."}],
            )
            async for message in runner:
                print(message.content)


asyncio.run(main())
