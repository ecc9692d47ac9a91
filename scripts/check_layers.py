#!/usr/bin/env python3
"""Fails when a header of weft includes one from a layer above its own.

The layers, lowest first (docs/concepts.md): core < schedule < schedules < {sim, rt, io} < nn <
{exec, cp, search, mpi} < tp (its layers run on exec's runner); tools, examples, tests and benchmarks
sit above everything. Folders on
one level (sim, rt, io; exec, cp, search, mpi) must not include each other at all: no edges
between them, so no cycles. The umbrella headers (weft/weft.hpp, weft/exec.hpp, ...) may include
anything.
"""
import pathlib
import re
import sys

LEVELS = [["core"], ["schedule"], ["schedules"], ["sim", "rt", "io"], ["nn"],
          ["exec", "cp", "search", "mpi"], ["tp"]]
LEVEL = {folder: i for i, group in enumerate(LEVELS) for folder in group}
INCLUDE = re.compile(r'^\s*#\s*include\s*<weft/([a-z_]+)/[^>]+>', re.M)


def main(root: pathlib.Path) -> int:
    errors = []
    for header in sorted((root / "include" / "weft").rglob("*.hpp")):
        rel = header.relative_to(root / "include" / "weft")
        if len(rel.parts) < 2:
            continue  # an umbrella header
        here = rel.parts[0]
        if here not in LEVEL:
            errors.append(f"{rel}: folder '{here}' has no layer (add it to scripts/check_layers.py)")
            continue
        for match in INCLUDE.finditer(header.read_text()):
            there = match.group(1)
            if there == here:
                continue
            if there not in LEVEL:
                errors.append(f"{rel}: includes weft/{there}/, which has no layer")
            elif LEVEL[there] > LEVEL[here]:
                errors.append(f"{rel}: includes weft/{there}/ from a layer above '{here}'")
            elif LEVEL[there] == LEVEL[here]:
                errors.append(f"{rel}: includes weft/{there}/, a sibling layer of '{here}'")
    for e in errors:
        print("weft: layering:", e)
    if not errors:
        print("weft: layering: every include goes down")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main(pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".")))
