"""The MCP Python SDK, without a model: list the tools, run a script, read
its result and the file it wrote.

    pip install mcp
    TOOLGATE_TOKEN=... python mcp_python_sdk.py
"""

import asyncio
import os

from mcp import ClientSession
from mcp.client.streamable_http import streamablehttp_client

URL = os.environ.get("TOOLGATE_URL", "http://127.0.0.1:8080/mcp")
TOKEN = os.environ.get("TOOLGATE_TOKEN")


async def main():
    headers = {"Authorization": f"Bearer {TOKEN}"} if TOKEN else {}
    async with streamablehttp_client(URL, headers=headers) as (read, write, _):
        async with ClientSession(read, write) as session:
            await session.initialize()
            print([t.name for t in (await session.list_tools()).tools])
            result = await session.call_tool(
                "python__execute",
                {"code": "open('hello.txt', 'w').write('hi')\nresult = 6 * 7"},
            )
            if result.isError:
                raise SystemExit(result.content[0].text)
            print(result.structuredContent["result"])
            for block in result.content:
                if block.type == "resource":
                    print(block.resource.uri, block.resource.mimeType)


asyncio.run(main())
