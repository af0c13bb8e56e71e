#!/usr/bin/python3
"""Renders templates with Python's Jinja2 as Hugging Face transformers sets it up: the reference the C++
engine (model/jinja) is tested against. Run with Debian's /usr/bin/python3 (python3-jinja2).

stdin:  a JSON list of cases {"template": str, "context": object, "trim_blocks"?: bool, "lstrip_blocks"?: bool,
        "content_format"?: true}
stdout: a JSON list, one per case: {"ok": true, "text": str} or {"ok": false, "error": "Type: message"};
        with "content_format", vLLM's detection instead: {"ok": true, "text": "openai" | "string"}.
strftime_now always formats 2026-07-04 10:30:00, the time the C++ tests give the engine.
"""
import collections
import datetime
import json
import sys

import jinja2
import jinja2.ext
import jinja2.nodes
from jinja2.sandbox import ImmutableSandboxedEnvironment

FIXED_NOW = datetime.datetime(2026, 7, 4, 10, 30, 0)


class GenerationTag(jinja2.ext.Extension):
    """transformers' AssistantTracker without the tracking: {% generation %} renders its body as a call block."""

    tags = {"generation"}

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(["name:endgeneration"], drop_needle=True)
        return jinja2.nodes.CallBlock(self.call_method("_render_body"), [], [], body).set_lineno(lineno)

    def _render_body(self, caller):
        return caller()


def raise_exception(message):
    raise jinja2.exceptions.TemplateError(message)


def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)


def make_environment(trim_blocks, lstrip_blocks):
    env = ImmutableSandboxedEnvironment(trim_blocks=trim_blocks, lstrip_blocks=lstrip_blocks,
                                        extensions=[GenerationTag, jinja2.ext.loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = lambda fmt: FIXED_NOW.strftime(fmt)
    return env


# vLLM's _detect_content_format: does the template loop over a message's content (then it takes OpenAI parts)?
def _is_var_access(node, varname):
    return isinstance(node, jinja2.nodes.Name) and node.ctx == "load" and node.name == varname


def _is_attr_access(node, varname, key):
    if isinstance(node, jinja2.nodes.Getitem):
        return (_is_var_access(node.node, varname) and isinstance(node.arg, jinja2.nodes.Const)
                and node.arg.value == key)
    if isinstance(node, jinja2.nodes.Getattr):
        return _is_var_access(node.node, varname) and node.attr == key
    return False


def _is_var_or_elems_access(node, varname, key=None):
    if isinstance(node, jinja2.nodes.Filter):
        return node.node is not None and _is_var_or_elems_access(node.node, varname, key)
    if isinstance(node, jinja2.nodes.Test):
        return _is_var_or_elems_access(node.node, varname, key)
    if isinstance(node, jinja2.nodes.Getitem) and isinstance(node.arg, jinja2.nodes.Slice):
        return _is_var_or_elems_access(node.node, varname, key)
    return _is_attr_access(node, varname, key) if key else _is_var_access(node, varname)


def _assigned_names(root, varname):
    yield varname
    pending, seen = collections.deque([varname]), {varname}
    while pending:
        name = pending.popleft()
        for assign in root.find_all(jinja2.nodes.Assign):
            if _is_var_or_elems_access(assign.node, name):
                assert isinstance(assign.target, jinja2.nodes.Name)
                yield assign.target.name
                if assign.target.name != name and assign.target.name not in seen:  # vLLM would loop forever
                    seen.add(assign.target.name)
                    pending.append(assign.target.name)


def _loop_targets(root, varnames, key=None):
    for loop in root.find_all(jinja2.nodes.For):
        if any(_is_var_or_elems_access(loop.iter, v, key) for v in varnames):
            assert isinstance(loop.target, jinja2.nodes.Name)
            yield loop.target.name


def content_format(env, source):
    try:
        root = env.parse(source)
    except Exception:
        return "string"
    try:
        messages = list(_assigned_names(root, "messages"))
        message_names = list(_loop_targets(root, messages))
        next(_loop_targets(root, message_names, "content"))
    except StopIteration:
        return "string"
    except Exception:
        return "string"
    return "openai"


def main():
    cases = json.load(sys.stdin)
    environments, compiled, results = {}, {}, []
    for case in cases:
        options = (case.get("trim_blocks", True), case.get("lstrip_blocks", True))
        if options not in environments:
            environments[options] = make_environment(*options)
        env = environments[options]
        if case.get("content_format"):
            results.append({"ok": True, "text": content_format(env, case["template"])})
            continue
        try:
            key = (options, case["template"])
            if key not in compiled:
                compiled[key] = env.from_string(case["template"])
            results.append({"ok": True, "text": compiled[key].render(**case.get("context", {}))})
        except Exception as e:  # any failure counts: the engine must fail on the same input
            results.append({"ok": False, "error": f"{type(e).__name__}: {e}"})
    json.dump(results, sys.stdout)


if __name__ == "__main__":
    main()
