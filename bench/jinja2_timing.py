#!/usr/bin/python3
"""Jinja2's render time per template, for bench_templates: stdin [{"name", "template", "context"}], stdout
[{"name", "render_us"}] (best of repeated renders, transformers' environment from tests/jinja2_oracle.py;
null when Jinja2 raises)."""
import json
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))
from jinja2_oracle import make_environment  # noqa: E402

env = make_environment(True, True)
out = []
for case in json.load(sys.stdin):
    try:
        tmpl = env.from_string(case["template"])
        tmpl.render(**case["context"])
        best = float("inf")
        for _ in range(5):
            n, t0 = 0, time.perf_counter()
            while time.perf_counter() - t0 < 0.02:
                tmpl.render(**case["context"])
                n += 1
            best = min(best, (time.perf_counter() - t0) / n * 1e6)
        out.append({"name": case["name"], "render_us": best})
    except Exception:
        out.append({"name": case["name"], "render_us": None})
json.dump(out, sys.stdout)
