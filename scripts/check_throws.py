#!/usr/bin/env python3
"""Fails when the library throws an exception outside weft's three roots.

A program (and the tool) tells failures apart by type: `config_error` and its kinds for bad
input, `run_error` and its kinds for a run that stopped, `internal_error` for a fault in weft
(include/weft/core/error.hpp). A bare `throw std::length_error(...)` in include/ would slip past
every handler written against that tree, so this check refuses any `throw std::...` in the
headers and .ipp bodies. Rethrowing (`throw;`, `std::rethrow_exception`) is fine.
"""
import pathlib
import re
import sys

BARE_THROW = re.compile(r"\bthrow\s+std::\w+")
COMMENT = re.compile(r"//.*$")


def main(root: pathlib.Path) -> int:
    errors = []
    top = root / "include" / "weft"
    files = sorted(list(top.rglob("*.hpp")) + list(top.rglob("*.ipp")))
    for path in files:
        for number, line in enumerate(path.read_text().splitlines(), 1):
            match = BARE_THROW.search(COMMENT.sub("", line))
            if match:
                errors.append(f"{path.relative_to(top)}:{number}: '{match.group(0)}': throw "
                              "config_error, run_error or internal_error (core/error.hpp)")
    for e in errors:
        print(f"weft: throws: {e}")
    if not files:
        print(f"weft: throws: no headers under {top}")
        return 1
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main(pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".")))
