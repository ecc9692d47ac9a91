#!/usr/bin/env python3
"""Extracts the C++ blocks of the README and docs/ into translation units the tests compile.

Every ```cpp block compiles. A block may be preceded by an HTML comment that the rendered page
hides:

    <!-- compile
    #include <iostream>
    const weft::schedule s = weft::one_f_one_b({.ranks = 2, .micro = 2});
    -->

Its lines after `compile` are the block's context, put before it. `<!-- compile fails: REGEX`
says the block shows an error: it must fail to compile with a diagnostic matching REGEX.

One page's compiling blocks go into one file, `<page>.cpp`, each block in a namespace of its own
with its context, the block's code in a function there (a block with `int main` at namespace
scope, `main` renamed), every `#include` first; each failing block into `<page>_fails_<n>.cpp`,
its pattern in `<page>_fails_<n>.expect`.

    doc_snippets.py OUT_DIR PAGE.md...
"""
import pathlib
import re
import sys

FENCE = re.compile(r"^```cpp\n(.*?)^```", re.S | re.M)
CONTEXT = re.compile(r"<!--\s*compile(?P<fails>\s+fails:(?P<regex>[^\n]*))?\n?(?P<body>.*?)-->\s*$",
                     re.S)


def blocks(text):
    """(context, code, fails regex or None) for each ```cpp block of a page."""
    for m in FENCE.finditer(text):
        before = text[:m.start()].rstrip("\n")
        context, regex = "", None
        start = before.rfind("<!--")
        if start >= 0:
            c = CONTEXT.fullmatch(before[start:])
            if c:
                context = c.group("body")
                regex = c.group("regex").strip() if c.group("fails") else None
        yield context, m.group(1), regex


def unit(parts):
    """One translation unit from (name, context, code) parts: the `#include`s first, then each
    part in a namespace of its own, its context at namespace scope and its code in a function
    (at namespace scope when it has `int main`, renamed)."""
    includes, bodies = [], []
    for name, context, code in parts:
        def split(text):
            lines = text.splitlines()
            includes.extend(l for l in lines if l.startswith("#include"))
            return "\n".join(l for l in lines if not l.startswith("#include"))
        context, code = split(context), split(code)
        if re.search(r"^int main\(", code, re.M):
            code = re.sub(r"^int main\(", "int main_(", code, flags=re.M)
        else:
            code = f"[[maybe_unused]] static void body() {{\n{code}\n}}"
        bodies.append(f"namespace {name} {{\n{context}\n{code}\n}}  // namespace {name}\n")
    head = "".join(f"{i}\n" for i in dict.fromkeys(includes))
    return head + "\n" + "\n".join(bodies)


def main():
    out = pathlib.Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    written = set()
    for page in sys.argv[2:]:
        path = pathlib.Path(page)
        stem = re.sub(r"\W", "_", path.stem.lower())
        ok, n = [], 0
        for k, (context, code, regex) in enumerate(blocks(path.read_text())):
            name = f"block_{k + 1}"
            if regex is None:
                ok.append((name, context, code))
                continue
            n += 1
            base = out / f"{stem}_fails_{n}"
            base.with_suffix(".cpp").write_text(unit([(name, context, code)]))
            base.with_suffix(".expect").write_text(regex + "\n")
            written |= {base.with_suffix(".cpp").name, base.with_suffix(".expect").name}
        if ok:
            (out / f"{stem}.cpp").write_text(f"// C++ blocks of {path.name}\n" + unit(ok))
            written.add(f"{stem}.cpp")
    for stale in out.iterdir():
        if stale.name not in written:
            stale.unlink()


if __name__ == "__main__":
    main()
