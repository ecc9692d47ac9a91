#!/usr/bin/env python3
"""Fails when a function in include/ (headers and .ipp bodies) or tools/ runs over LIMIT lines without saying why.

A function longer than LIMIT lines (signature to closing brace) must carry, in the comment right
above it, a sentence starting "One function:" that says why it must be one (a state machine whose
states share locals, a table read in one pass...). Everything else is split.

The scan is lexical: comments, strings, character literals and preprocessor lines are skipped, braces are matched,
and a brace opens a function when it is at namespace or class scope and the text before it ends
in a parameter list (with qualifiers, a trailing return type or a constructor's initialisers).
Lambdas inside a function count as part of it.

Usage: long_functions.py ROOT [--limit N] [--list]   (--list prints every function over the
limit, explained or not, longest first)
"""
import pathlib
import re
import sys

LIMIT = 100
MARKER = re.compile(r"one function:", re.I)
SCOPES = re.compile(r"\b(namespace|class|struct|union|enum)\b")
CONTROL = re.compile(r"\b(if|for|while|switch|catch|do|else|try)\s*(\(|$)")


def strip(text: str) -> str:
    """`text` with comments, strings and character literals blanked (newlines kept)."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        at_line_start = i == 0 or text[i - 1] == "\n"
        if at_line_start and text[i:].lstrip(" ").startswith("#"):  # a preprocessor line
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append("".join(ch if ch == "\n" else " " for ch in text[i:j]))
            i = j
        elif text.startswith('R"', i):
            m = re.match(r'R"([^(\s]*)\(', text[i:])
            end = text.find(")" + m.group(1) + '"', i) if m else -1
            j = n if end < 0 else end + len(m.group(1)) + 2
            out.append("".join(ch if ch == "\n" else " " for ch in text[i:j]))
            i = j
        elif c in "\"'":
            # a digit separator (1'000) is not a character literal
            if c == "'" and i > 0 and text[i - 1].isalnum() and i + 1 < n and text[i + 1].isalnum():
                out.append(" ")
                i += 1
                continue
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            j = min(j + 1, n)
            out.append(" " * (j - i))
            i = j
        else:
            out.append(c)
            i += 1
    return "".join(out)


def functions(text: str):
    """(name, first line, last line) of every function defined at namespace or class scope."""
    code = strip(text)
    stack = []  # scope kinds: ns, class, func, other
    start = 0  # where the current statement's text began
    found = []
    line_of = lambda pos: code.count("\n", 0, pos) + 1
    for pos, c in enumerate(code):
        if c in ";":
            start = pos + 1
        elif c == "{":
            head = code[start:pos].strip()
            inside_function = any(k == "func" for k, _ in stack)
            if inside_function:
                kind = "other"
            elif SCOPES.search(head) and "(" not in head.split("{")[0].split("=")[0]:
                kind = "ns" if "namespace" in head else "class"
            elif ")" in head and not CONTROL.search(head) and not head.rstrip().endswith("="):
                kind = "func"
            else:
                kind = "other"
            stack.append((kind, start if kind == "func" else pos))
            # A brace initialiser outside functions (a default argument `= {}`, a member's
            # `{1}`) is part of the declaration it sits in.
            if not (kind == "other" and not inside_function):
                start = pos + 1
        elif c == "}":
            if stack:
                kind, began = stack.pop()
                if kind == "other" and not any(k == "func" for k, _ in stack):
                    continue
                if kind == "func":
                    name = "?"
                    for m in re.finditer(r"([A-Za-z_~][\w:~]*)\s*\(", code[began:pos]):
                        if m.group(1) not in ("template", "requires", "decltype", "noexcept",
                                              "sizeof", "alignas", "static_assert"):
                            name = m.group(1)
                            break
                    first = line_of(began + len(code[began:]) - len(code[began:].lstrip()))
                    found.append((name, first, line_of(pos)))
            start = pos + 1
    return found


def explained(lines, first: int) -> bool:
    """Whether the comment block right above line `first` (1-based) says why it is one."""
    i = first - 2
    block = []
    while i >= 0 and (lines[i].strip().startswith("//") or lines[i].strip().startswith("template")):
        block.append(lines[i])
        i -= 1
    return bool(MARKER.search(" ".join(block)))


def main(argv) -> int:
    root = pathlib.Path(argv[1] if len(argv) > 1 and not argv[1].startswith("-") else ".")
    limit = int(argv[argv.index("--limit") + 1]) if "--limit" in argv else LIMIT
    listing = "--list" in argv
    files = sorted(list((root / "include").rglob("*.hpp")) + list((root / "include").rglob("*.ipp")) +
                   list((root / "tools").rglob("*.hpp")) + list((root / "tools").rglob("*.cpp")))
    over, bad = [], []
    for path in files:
        text = path.read_text()
        lines = text.split("\n")
        for name, first, last in functions(text):
            length = last - first + 1
            if length <= limit:
                continue
            ok = explained(lines, first)
            over.append((length, f"{path.relative_to(root)}:{first}", name, ok))
            if not ok:
                bad.append(over[-1])
    if listing:
        for length, where, name, ok in sorted(over, reverse=True):
            print(f"{length:5d}  {where}  {name}{'' if ok else '  (no reason given)'}")
    for length, where, name, _ in bad:
        print(f"weft: {where}: {name} is {length} lines (over {limit}); split it, or say why it "
              "must be one in a comment above it starting 'One function:'", file=sys.stderr)
    if not bad and not listing:
        print(f"weft: every function of include/ and tools/ within {limit} lines, or saying why")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
