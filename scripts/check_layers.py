#!/usr/bin/env python3
"""Fails when a header of weft (or an .ipp body, compiled once) includes one from a layer above its own.

The layers come from docs/architecture.md, the line "Layers, lowest first: core < schedule < ...",
so the page and the check cannot disagree. Folders on one level (separated by commas) must not
include each other at all: no edges between them, so no cycles. tools, examples, tests and
benchmarks sit above everything. The umbrella headers (weft/weft.hpp, weft/exec.hpp, ...) may
include anything.
"""
import pathlib
import re
import sys

ARCHITECTURE = pathlib.Path(__file__).resolve().parent.parent / "docs" / "architecture.md"
LAYERS_LINE = re.compile(r"^Layers, lowest first: (.+)$", re.M)


def read_levels(page: pathlib.Path) -> list:
    """The layer groups of the architecture page, lowest first."""
    match = LAYERS_LINE.search(page.read_text())
    if not match:
        sys.exit(f"weft: layering: {page} has no line 'Layers, lowest first: ...'")
    return [[f.strip() for f in group.split(",")] for group in match.group(1).split("<")]


LEVELS = read_levels(ARCHITECTURE)
LEVEL = {folder: i for i, group in enumerate(LEVELS) for folder in group}
INCLUDE = re.compile(r'^\s*#\s*include\s*<weft/([a-z_]+)/[^>]+>', re.M)


def main(root: pathlib.Path) -> int:
    errors = []
    headers = list((root / "include" / "weft").rglob("*.hpp"))
    headers += (root / "include" / "weft").rglob("*.ipp")  # the bodies compiled once, too
    for header in sorted(headers):
        rel = header.relative_to(root / "include" / "weft")
        if len(rel.parts) < 2:
            continue  # an umbrella header
        here = rel.parts[0]
        if here not in LEVEL:
            errors.append(f"{rel}: folder '{here}' has no layer (add it to the line "
                          "'Layers, lowest first' of docs/architecture.md)")
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
