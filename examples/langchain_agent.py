"""LangChain: Toolgate's /mcp through MultiServerMCPClient, bound to a chat
model, in a tool loop.

    pip install langchain-mcp-adapters langchain-anthropic
    TOOLGATE_TOKEN=... ANTHROPIC_API_KEY=... python langchain_agent.py

TOOLGATE_URL defaults to http://127.0.0.1:8080/mcp (toolgate serve).
"""

import asyncio
import os

from langchain_core.messages import HumanMessage
from langchain_mcp_adapters.client import MultiServerMCPClient

URL = os.environ.get("TOOLGATE_URL", "http://127.0.0.1:8080/mcp")
TOKEN = os.environ.get("TOOLGATE_TOKEN")


def chat_model():
    if os.environ.get("TOOLGATE_EXAMPLE_SCRIPTED"):
        from _scripted import langchain_model

        return langchain_model()
    from langchain_anthropic import ChatAnthropic

    return ChatAnthropic(model="claude-sonnet-4-5")


async def main():
    client = MultiServerMCPClient(
        {
            "toolgate": {
                "transport": "streamable_http",
                "url": URL,
                "headers": {"Authorization": f"Bearer {TOKEN}"} if TOKEN else {},
            }
        }
    )
    tools = await client.get_tools()
    by_name = {t.name: t for t in tools}
    model = chat_model().bind_tools(tools)
    messages = [HumanMessage("Sum the squares of 0..4 with Python, and write them to squares.csv.")]
    while True:
        reply = await model.ainvoke(messages)
        messages.append(reply)
        if not reply.tool_calls:
            break
        for call in reply.tool_calls:
            # A tool's failure comes back as a ToolMessage with status "error".
            messages.append(await by_name[call["name"]].ainvoke(call))
    print(reply.content)


asyncio.run(main())
