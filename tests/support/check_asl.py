#!/usr/bin/env python3
"""Offline Amazon States Language check, built on LocalStack's ASL parser as
vendored by moto (moto/stepfunctions/parser, tested with moto 5.2.5).

Usage (with the interpreter of the venv that has moto installed):

    ~/.cache/toolgate/tools/aws/bin/python check_asl.py [options] DEFINITION.json

Options:
    --type STANDARD|EXPRESS  state machine type (default STANDARD); EXPRESS
                             adds LocalStack's ExpressStaticAnalyser
    --sub NAME=VALUE         replace ${NAME} before checking (repeatable)
    --dummy-subs             replace every remaining ${NAME} with
                             arn:aws:lambda:us-east-1:123456789012:function:NAME
    --strict                 treat warnings as problems

What it runs, in order:
  1. JSON syntax and duplicate keys (json module).
  2. LocalStack's parse: the ASL lexer/parser (ANTLR grammar, which refuses
     unknown fields and wrong shapes) with the syntax errors of the lexer AND
     the parser collected (LocalStack only collects the parser's), then the
     Preprocessor that builds the program (it refuses e.g. HeartbeatSeconds >=
     TimeoutSeconds, Next together with End, bad Retry/Catch values), then the
     static analyser LocalStack's CreateStateMachine runs (StaticAnalyser for
     STANDARD, ExpressStaticAnalyser for EXPRESS). Intrinsic functions are
     parsed with their syntax errors collected too: LocalStack's own intrinsic
     parser has no error listener, so a missing ')' or an unescaped quote only
     prints to stderr and is otherwise accepted.
     When the whole document fails, every top-level state is also parsed on
     its own so that each failing state gets its own message.
  3. Checks LocalStack does not make but AWS does at CreateStateMachine:
     StartAt/Next/Default/Catch targets exist, every non-terminal state has
     exactly one of Next/End, every state is reachable, each States scope has a
     terminal state, every "x.$" value is a JSONPath ($... / $$...) or an
     intrinsic call (States.X(...)), JSONPath strings parse (jsonpath-ng,
     the library LocalStack evaluates them with), and States.Format literals
     have no unescaped '{' '}' and as many '{}' as value arguments.

Warnings (exit code unaffected unless --strict):
  - a line break or other control character inside an intrinsic function
    (AWS accepts it; some editors' ASL language services flag it).

Exit codes: 0 valid, 1 problems found (one line per problem on stderr),
2 usage error / unreadable file.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import re
import sys

PROG = "check_asl"
DUMMY_ARN = "arn:aws:lambda:us-east-1:123456789012:function:{}"

# ---------------------------------------------------------------------------
# LocalStack (moto-vendored) parser, with error collection
# ---------------------------------------------------------------------------
try:
    from antlr4 import CommonTokenStream, InputStream
    from antlr4.error.ErrorListener import ErrorListener

    from moto.stepfunctions.parser.asl.antlr.runtime.ASLIntrinsicLexer import ASLIntrinsicLexer
    from moto.stepfunctions.parser.asl.antlr.runtime.ASLIntrinsicParser import ASLIntrinsicParser
    from moto.stepfunctions.parser.asl.antlr.runtime.ASLLexer import ASLLexer
    from moto.stepfunctions.parser.asl.antlr.runtime.ASLParser import ASLParser
    from moto.stepfunctions.parser.asl.parse import preprocessor as asl_preprocessor
    from moto.stepfunctions.parser.asl.parse.intrinsic import intrinsic_parser as intrinsic_module
    from moto.stepfunctions.parser.asl.parse.intrinsic.preprocessor import (
        Preprocessor as IntrinsicPreprocessor,
    )
    from moto.stepfunctions.parser.asl.static_analyser.express_static_analyser import (
        ExpressStaticAnalyser,
    )
    from moto.stepfunctions.parser.asl.static_analyser.static_analyser import StaticAnalyser
except ImportError as exc:  # pragma: no cover
    print(
        f"{PROG}: cannot import LocalStack's ASL parser from moto ({exc}); run this with the "
        "python of a venv that has moto[stepfunctions] installed, e.g. "
        "~/.cache/toolgate/tools/aws/bin/python",
        file=sys.stderr,
    )
    sys.exit(2)


class _Collect(ErrorListener):
    def __init__(self) -> None:
        super().__init__()
        self.errors: list[str] = []

    def syntaxError(self, recognizer, offending_symbol, line, column, msg, e):  # noqa: N802
        self.errors.append(f"line {line}:{column}: {msg}")


class IntrinsicSyntaxError(Exception):
    def __init__(self, src: str, errors: list[str]):
        super().__init__(src, errors)
        self.src = src
        self.errors = errors

    def __str__(self) -> str:
        shown = self.src if len(self.src) <= 160 else self.src[:157] + "..."
        return f"invalid intrinsic function {shown!r}: " + "; ".join(self.errors)


def _antlr(lexer_cls, parser_cls, text: str, rule: str):
    """Parses `text` from grammar rule `rule`, with the lexer's and the
    parser's syntax errors both collected; the tree and the errors."""
    listener = _Collect()
    lexer = lexer_cls(InputStream(text))
    lexer.removeErrorListeners()
    lexer.addErrorListener(listener)
    parser = parser_cls(CommonTokenStream(lexer))
    parser.removeErrorListeners()
    parser.addErrorListener(listener)
    tree = getattr(parser, rule)()
    return tree, listener.errors


def _parse_intrinsic(src: str):
    """LocalStack's IntrinsicParser.parse, with lexer and parser errors raised."""
    tree, errors = _antlr(ASLIntrinsicLexer, ASLIntrinsicParser, src, "func_decl")
    if errors:
        raise IntrinsicSyntaxError(src, errors)
    function = IntrinsicPreprocessor().visit(tree)
    return function, tree


# Every LocalStack module calls IntrinsicParser.parse through the class.
intrinsic_module.IntrinsicParser.parse = staticmethod(_parse_intrinsic)


class ASLSyntaxError(Exception):
    def __init__(self, errors: list[str]):
        super().__init__(errors)
        self.errors = errors


def localstack_check(text: str, sm_type: str) -> None:
    """Parse + preprocess + static analysis, as LocalStack's CreateStateMachine.

    Raises ASLSyntaxError (grammar), IntrinsicSyntaxError, or whatever the
    Preprocessor / static analyser raise (RuntimeError, ValueError, ...)."""
    tree, errors = _antlr(ASLLexer, ASLParser, text, "state_machine")
    if errors:
        raise ASLSyntaxError(errors)
    # Anything LocalStack prints while building the program is noise here.
    with contextlib.redirect_stderr(io.StringIO()):
        asl_preprocessor.Preprocessor().visit(tree)
        analyser = ExpressStaticAnalyser() if sm_type == "EXPRESS" else StaticAnalyser()
        analyser.visit(tree)


def describe(exc: BaseException) -> str:
    if isinstance(exc, ASLSyntaxError):
        return "; ".join(exc.errors)
    if isinstance(exc, IntrinsicSyntaxError):
        return str(exc)
    msg = " ".join(str(a) for a in exc.args) if exc.args else ""
    return f"{type(exc).__name__}: {msg}".rstrip(": ")


# ---------------------------------------------------------------------------
# Checks LocalStack does not make
# ---------------------------------------------------------------------------
TERMINAL_TYPES = {"Succeed", "Fail"}
PATH_FIELDS = ("InputPath", "OutputPath", "ResultPath", "ItemsPath")
TEMPLATE_FIELDS = ("Parameters", "ResultSelector", "ItemSelector", "Credentials")
INTRINSIC_RE = re.compile(r"^States\.[A-Za-z0-9]+\(")

try:
    from jsonpath_ng.ext import parse as jsonpath_parse
except ImportError:  # pragma: no cover
    jsonpath_parse = None


def _jsonpath_problem(path: str) -> str | None:
    if jsonpath_parse is None:
        return None
    p = path[1:] if path.startswith("$$") else path
    try:
        with contextlib.redirect_stderr(io.StringIO()), contextlib.redirect_stdout(io.StringIO()):
            jsonpath_parse(p)
    except Exception as exc:  # jsonpath-ng raises several types
        return f"{type(exc).__name__}: {exc}"
    return None


def _format_problems(src: str) -> list[str]:
    """States.Format checks on the JSON-decoded intrinsic text (AWS semantics):
    unescaped '{' / '}' outside a '{}' placeholder, and placeholder count vs
    argument count. Syntax errors are left to the LocalStack step."""
    tree, errors = _antlr(ASLIntrinsicLexer, ASLIntrinsicParser, src, "func_decl")
    if errors:
        return []
    out: list[str] = []

    def walk(node):
        if isinstance(node, ASLIntrinsicParser.States_func_declContext):
            if node.state_fun_name().getText() == "Format":
                arg_list = node.func_arg_list()
                fargs = arg_list.func_arg() if arg_list is not None else []
                first = fargs[0] if fargs else None
                if isinstance(first, ASLIntrinsicParser.Func_arg_stringContext):
                    raw = first.STRING().getText()[1:-1]
                    i, holes = 0, 0
                    while i < len(raw):
                        if raw[i] == "\\":
                            i += 2
                        elif raw.startswith("{}", i):
                            holes += 1
                            i += 2
                        elif raw[i] in "{}":
                            out.append(
                                f"States.Format literal has an unescaped {raw[i]!r} at offset {i} "
                                "(write \\{ or \\} in the intrinsic, i.e. \\\\{ in JSON)"
                            )
                            i += 1
                        else:
                            i += 1
                    if holes != len(fargs) - 1:
                        out.append(
                            f"States.Format has {holes} '{{}}' placeholder(s) but "
                            f"{len(fargs) - 1} value argument(s)"
                        )
        for child in getattr(node, "children", None) or []:
            walk(child)

    walk(tree)
    return out


def _control_chars(s: str) -> list[str]:
    return sorted({repr(c) for c in s if ord(c) < 0x20})


class Checker:
    def __init__(self) -> None:
        self.problems: list[str] = []
        self.warnings: list[str] = []

    def problem(self, where: str, msg: str) -> None:
        self.problems.append(f"{where}: {msg}")

    def warn(self, where: str, msg: str) -> None:
        self.warnings.append(f"{where}: {msg}")

    # -- payload templates / paths ------------------------------------------
    def template(self, where: str, value, qlang: str) -> None:
        if isinstance(value, dict):
            for key, v in value.items():
                if isinstance(key, str) and key.endswith(".$") and qlang == "JSONPath":
                    self.dollar_value(f"{where}.{key}", v)
                else:
                    self.template(f"{where}.{key}", v, qlang)
        elif isinstance(value, list):
            for i, v in enumerate(value):
                self.template(f"{where}[{i}]", v, qlang)

    def dollar_value(self, where: str, v) -> None:
        field = where.rsplit(".", 2)[-2] + ".$" if where.endswith(".$") else where
        if not isinstance(v, str):
            self.problem(where, f"the value for the field '{field}' must be a string")
            return
        if v.startswith("$"):
            why = _jsonpath_problem(v)
            if why:
                self.problem(where, f"invalid JSONPath {v!r}: {why}")
        elif INTRINSIC_RE.match(v):
            for why in _format_problems(v):
                self.problem(where, why)
            ctl = _control_chars(v)
            if ctl:
                self.warn(
                    where,
                    "intrinsic function contains line breaks/control characters "
                    f"({', '.join(ctl)}); AWS accepts this, some ASL editors flag it",
                )
        else:
            self.problem(
                where,
                f"the value for the field '{field}' must be a valid JSONPath or a valid "
                f"intrinsic function call, got {v!r}",
            )

    def path_field(self, where: str, v, allow_null: bool = True) -> None:
        if v is None and allow_null:
            return
        if not isinstance(v, str) or not v.startswith("$"):
            self.problem(where, f"must be a JSONPath starting with '$', got {v!r}")
            return
        why = _jsonpath_problem(v)
        if why:
            self.problem(where, f"invalid JSONPath {v!r}: {why}")

    def choice_rule(self, where: str, rule, qlang: str) -> None:
        if not isinstance(rule, dict):
            return
        if qlang == "JSONPath" and "Variable" in rule:
            self.path_field(f"{where}.Variable", rule["Variable"], allow_null=False)
        for op in ("And", "Or"):
            for i, sub in enumerate(rule.get(op) or []):
                self.choice_rule(f"{where}.{op}[{i}]", sub, qlang)
        if isinstance(rule.get("Not"), dict):
            self.choice_rule(f"{where}.Not", rule["Not"], qlang)
        for k, v in rule.items():
            if k.endswith("Path") and k not in ("Variable",) and qlang == "JSONPath":
                self.path_field(f"{where}.{k}", v, allow_null=False)

    # -- graph ----------------------------------------------------------------
    def scope(self, where: str, machine: dict, default_qlang: str) -> None:
        states = machine.get("States")
        if not isinstance(states, dict) or not states:
            self.problem(where, "'States' must be a non-empty object")
            return
        start = machine.get("StartAt")
        if start not in states:
            self.problem(where, f"StartAt {start!r} is not a state in this States object")
        qlang_scope = machine.get("QueryLanguage", default_qlang)
        edges: dict[str, list[str]] = {}
        for name, st in states.items():
            sw = f"{where}.States.{name}"
            if not isinstance(st, dict):
                self.problem(sw, "a state must be an object")
                continue
            qlang = st.get("QueryLanguage", qlang_scope)
            stype = st.get("Type")
            targets: list[tuple[str, str]] = []
            if stype == "Choice":
                for i, rule in enumerate(st.get("Choices") or []):
                    if isinstance(rule, dict) and "Next" in rule:
                        targets.append((f"Choices[{i}].Next", rule["Next"]))
                    self.choice_rule(f"{sw}.Choices[{i}]", rule, qlang)
                if "Default" in st:
                    targets.append(("Default", st["Default"]))
            elif stype not in TERMINAL_TYPES:
                has_next = "Next" in st
                is_end = st.get("End") is True
                if has_next == is_end:
                    self.problem(sw, "must have exactly one of 'Next' or 'End': true")
                if has_next:
                    targets.append(("Next", st["Next"]))
            for i, c in enumerate(st.get("Catch") or []):
                if isinstance(c, dict) and "Next" in c:
                    targets.append((f"Catch[{i}].Next", c["Next"]))
            for label, t in targets:
                if t not in states:
                    self.problem(sw, f"{label} {t!r} is not a state in this States object")
            edges[name] = [t for _, t in targets if t in states]
            if qlang == "JSONPath":
                for f in PATH_FIELDS:
                    if f in st:
                        self.path_field(f"{sw}.{f}", st[f])
                for f in TEMPLATE_FIELDS:
                    if f in st:
                        self.template(f"{sw}.{f}", st[f], qlang)
            for i, br in enumerate(st.get("Branches") or []):
                if isinstance(br, dict):
                    self.scope(f"{sw}.Branches[{i}]", br, qlang)
            for key in ("ItemProcessor", "Iterator"):
                if isinstance(st.get(key), dict):
                    self.scope(f"{sw}.{key}", st[key], qlang)
        # reachability and terminal state
        if start in states:
            seen, todo = set(), [start]
            while todo:
                n = todo.pop()
                if n in seen:
                    continue
                seen.add(n)
                todo.extend(edges.get(n, []))
            for name in states:
                if name not in seen:
                    self.problem(f"{where}.States.{name}", "state is not reachable from StartAt")
        terminal = [
            n
            for n, st in states.items()
            if isinstance(st, dict) and (st.get("Type") in TERMINAL_TYPES or st.get("End") is True)
        ]
        if not terminal:
            self.problem(where, "no terminal state (Succeed, Fail or End: true)")


# ---------------------------------------------------------------------------
def _no_dup_pairs(problems: list[str]):
    def hook(pairs):
        seen = set()
        for k, _ in pairs:
            if k in seen:
                problems.append(f"$: duplicate key {k!r} in a JSON object")
            seen.add(k)
        return dict(pairs)

    return hook


def check(text: str, sm_type: str = "STANDARD") -> tuple[list[str], list[str]]:
    """The problems and warnings of definition `text`: steps 1-3 above."""
    chk = Checker()

    # 1. JSON
    dup: list[str] = []
    try:
        doc = json.loads(text, object_pairs_hook=_no_dup_pairs(dup))
    except json.JSONDecodeError as exc:
        return [f"not valid JSON: {exc}"], []
    chk.problems.extend(dup)
    if not isinstance(doc, dict):
        return ["the definition must be a JSON object"], []

    # 2. LocalStack parse / preprocess / static analysis
    try:
        localstack_check(text, sm_type)
    except ASLSyntaxError as exc:
        for e in exc.errors:
            chk.problem("LocalStack ASL grammar", e)
    except Exception as whole_exc:  # noqa: BLE001 - any exception means refused
        found = False
        states = doc.get("States") if isinstance(doc.get("States"), dict) else {}
        for name, st in states.items():
            one = {"StartAt": name, "States": {name: st}}
            if "QueryLanguage" in doc:
                one["QueryLanguage"] = doc["QueryLanguage"]
            try:
                localstack_check(json.dumps(one, indent=2), sm_type)
            except Exception as exc:  # noqa: BLE001
                found = True
                chk.problem(f"$.States.{name}", "LocalStack refuses: " + describe(exc))
        if not found:
            chk.problem("$", "LocalStack refuses: " + describe(whole_exc))

    # 3. structure, paths, intrinsic shape
    qlang = doc.get("QueryLanguage", "JSONPath")
    chk.scope("$", doc, qlang)
    return chk.problems, chk.warnings


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="check_asl.py", description=__doc__.split("\n\n")[0])
    ap.add_argument("definition")
    ap.add_argument("--type", default="STANDARD", type=str.upper, choices=("STANDARD", "EXPRESS"))
    ap.add_argument("--sub", action="append", default=[], metavar="NAME=VALUE")
    ap.add_argument("--dummy-subs", action="store_true")
    ap.add_argument("--strict", action="store_true")
    args = ap.parse_args(argv)

    try:
        with open(args.definition, encoding="utf-8") as fh:
            text = fh.read()
    except OSError as exc:
        print(f"{PROG}: {args.definition}: {exc}", file=sys.stderr)
        return 2
    for s in args.sub:
        if "=" not in s:
            print(f"{PROG}: --sub wants NAME=VALUE, got {s!r}", file=sys.stderr)
            return 2
        name, value = s.split("=", 1)
        text = text.replace("${" + name + "}", value)
    if args.dummy_subs:
        text = re.sub(r"\$\{([A-Za-z0-9_]+)\}", lambda m: DUMMY_ARN.format(m.group(1)), text)

    file = args.definition
    found, warnings = check(text, args.type)
    for w in warnings:
        print(f"{PROG}: {file}: warning: {w}", file=sys.stderr)
    problems = found + (warnings if args.strict else [])
    for p in found:
        print(f"{PROG}: {file}: {p}", file=sys.stderr)
    if problems:
        print(f"{PROG}: {file}: {len(problems)} problem(s)", file=sys.stderr)
        return 1
    print(f"{PROG}: {file}: OK ({args.type}; LocalStack parser from moto, structure checks)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
