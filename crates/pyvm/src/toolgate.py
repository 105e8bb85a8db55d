"""Code mode: the server's tools, called from a script.

    from toolgate import tools, ToolError
    tools.list_servers()
    tools.ssh_run(server_name="web-1", command="df -h /")

Each call goes to the server, which runs the tool under the caller's own
scopes, approvals and audit, and answers with its result (as Python
values) or raises ToolError with the contract's error code.
"""

import json as _json


class ToolError(Exception):
    """A tool's error: `code` is the contract's code (`not_found`,
    `approval_required`, ...), `message` what went wrong, `detail` any more
    fields of the error object."""

    def __init__(self, code, message, detail=None):
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
        self.detail = detail or {}


# One encoder for every request: `json.dumps` with an option builds one per
# call.
_encode = _json.JSONEncoder(allow_nan=False).encode
_decode = _json.loads


def _ask(request):
    reply = _decode(_link(_encode(request)))
    if "error" in reply:
        e = dict(reply["error"])
        code = e.pop("code", "internal")
        message = e.pop("message", "")
        raise ToolError(code, message, e)
    return reply["ok"]


# The callables `tools.<name>` made so far, by name.
_calls = {}


class _Tools:
    """`tools.<name>(**arguments)` calls a tool; `tools.help()` lists them
    with their Python signatures."""

    __slots__ = ()

    def __getattr__(self, name):
        call = _calls.get(name)
        if call is not None:
            return call
        if name.startswith("__"):
            raise AttributeError(name)

        def call(**arguments):
            return _ask({"call": name, "arguments": arguments})

        call.__name__ = name
        call.__qualname__ = "tools." + name
        _calls[name] = call
        return call

    def __dir__(self):
        return sorted(t["name"] for t in _ask({"list": True}))

    def help(self, name=None):
        """Prints each tool's signature and description (or one tool's)."""
        for t in _ask({"list": True}):
            if name is None or t["name"] == name:
                print(f"tools.{t['signature']}")
                if t.get("description"):
                    print("    " + t["description"].replace("\n", "\n    "))

    def __repr__(self):
        return "<toolgate.tools: tools.help() lists them>"


tools = _Tools()
