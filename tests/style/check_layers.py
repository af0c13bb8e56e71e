#!/usr/bin/env python3
"""Every project include points down the layers (docs/architecture.md): kernels, model, engine, http, actors.

A file may include its own layer and those below it; an include that runs back up prints and fails.
Usage: check_layers.py [ROOT] (default: the checkout this script sits in).
"""
import os
import re
import sys

LAYERS = ["kernels", "model", "engine", "http", "actors"]  # ground first
RANK = {name: i for i, name in enumerate(LAYERS)}
INCLUDE = re.compile(r'\s*#\s*include\s+"([a-z_]+)/')
SOURCES = (".hpp", ".cpp", ".h", ".cu", ".cuh")


def violations(root):
    for layer in LAYERS:
        for folder, _, files in os.walk(os.path.join(root, layer)):
            for name in sorted(files):
                if not name.endswith(SOURCES):
                    continue
                path = os.path.join(folder, name)
                with open(path, errors="replace") as f:
                    for number, line in enumerate(f, 1):
                        m = INCLUDE.match(line)
                        if m and RANK.get(m.group(1), -1) > RANK[layer]:
                            yield f"{os.path.relpath(path, root)}:{number}: {layer}/ includes {m.group(1)}/: {line.strip()}"


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "..")
    bad = list(violations(root))
    if bad:
        print("includes that run up the layers (" + " < ".join(LAYERS) + "):")
        print("\n".join("  " + b for b in bad))
        return 1
    print("PASS layers: every include points down (" + " < ".join(LAYERS) + ")")
    return 0


if __name__ == "__main__":
    sys.exit(main())
