"""The model step of the examples, scripted, so that they run without a
model or an API key (TOOLGATE_EXAMPLE_SCRIPTED=1, as CI runs them): the
scripted model picks python__execute once, then answers with what it got.
Like a real provider, it refuses tool names outside ^[a-zA-Z0-9_-]{1,64}$.
Nothing here is needed when a real model is used.
"""

import json
import re

PROVIDER_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
TOOL = "python__execute"
# A script that writes a file (returned as a resource) and sets a result.
ARGS = {
    "code": "rows = [(n, n * n) for n in range(5)]\n"
    "open('squares.csv', 'w').write(''.join(f'{n},{sq}\\n' for n, sq in rows))\n"
    "result = sum(sq for _, sq in rows)"
}


def check_names(names):
    """What OpenAI, Anthropic and Bedrock answer to a bad function name."""
    bad = [n for n in names if not PROVIDER_NAME.match(n)]
    if bad:
        raise SystemExit(f"a model provider would refuse these tool names: {bad}")
    if TOOL not in names:
        raise SystemExit(f"{TOOL} is not among the tools: {names}")


def langchain_model():
    """A LangChain chat model that calls the tool once, then answers."""
    from langchain_core.language_models.chat_models import BaseChatModel
    from langchain_core.messages import AIMessage, ToolMessage
    from langchain_core.outputs import ChatGeneration, ChatResult
    from langchain_core.utils.function_calling import convert_to_openai_tool

    class Scripted(BaseChatModel):
        @property
        def _llm_type(self):
            return "scripted"

        def bind_tools(self, tools, **kwargs):
            # What bind_tools sends a provider: the function definitions.
            check_names([convert_to_openai_tool(t)["function"]["name"] for t in tools])
            return self

        def _generate(self, messages, stop=None, run_manager=None, **kwargs):
            done = [m for m in messages if isinstance(m, ToolMessage)]
            if done:
                reply = AIMessage(content=f"The tool said: {done[-1].content}")
            else:
                reply = AIMessage(
                    content="", tool_calls=[{"name": TOOL, "args": ARGS, "id": "call_1"}]
                )
            return ChatResult(generations=[ChatGeneration(message=reply)])

    return Scripted()


def openai_agents_model():
    """An OpenAI Agents SDK model that calls the tool once, then answers."""
    from agents import ModelResponse, Usage
    from agents.models.interface import Model
    from openai.types.responses import (
        ResponseFunctionToolCall,
        ResponseOutputMessage,
        ResponseOutputText,
    )

    class Scripted(Model):
        async def get_response(self, system_instructions, input, model_settings, tools, *args, **kwargs):
            check_names([t.name for t in tools])
            results = [i for i in input if isinstance(i, dict) and i.get("type") == "function_call_output"]
            if results:
                text = f"The tool said: {results[-1]['output']}"
                out = ResponseOutputMessage(
                    id="msg_1",
                    content=[ResponseOutputText(text=text, type="output_text", annotations=[])],
                    role="assistant",
                    status="completed",
                    type="message",
                )
            else:
                out = ResponseFunctionToolCall(
                    arguments=json.dumps(ARGS), call_id="call_1", name=TOOL, type="function_call", id="fc_1"
                )
            return ModelResponse(output=[out], usage=Usage(), response_id=None)

        def stream_response(self, *args, **kwargs):
            raise NotImplementedError

    return Scripted()
