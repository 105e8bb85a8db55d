"""The OpenAI Agents SDK: Toolgate's /mcp as an agent's MCP server.

    pip install openai-agents
    TOOLGATE_TOKEN=... OPENAI_API_KEY=... python openai_agents.py

The SDK's default MCP client timeout is 5 s, below python.execute's 20 s
(and ssh_run's minutes): give the client the tool's timeout, as below.
"""

import asyncio
import os

from agents import Agent, Runner, set_tracing_disabled
from agents.mcp import MCPServerStreamableHttp

URL = os.environ.get("TOOLGATE_URL", "http://127.0.0.1:8080/mcp")
TOKEN = os.environ.get("TOOLGATE_TOKEN")


async def main():
    toolgate = MCPServerStreamableHttp(
        name="toolgate",
        params={
            "url": URL,
            "headers": {"Authorization": f"Bearer {TOKEN}"} if TOKEN else {},
            "timeout": 30,
        },
        client_session_timeout_seconds=30,
    )
    async with toolgate:
        model = None
        if os.environ.get("TOOLGATE_EXAMPLE_SCRIPTED"):
            from _scripted import openai_agents_model

            set_tracing_disabled(True)
            model = openai_agents_model()
        agent = Agent(
            name="analyst",
            instructions="Use python__execute for any computation.",
            mcp_servers=[toolgate],
            **({"model": model} if model else {}),
        )
        result = await Runner.run(agent, "Sum the squares of 0..4 with Python.")
        print(result.final_output)


asyncio.run(main())
