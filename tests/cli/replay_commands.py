#!/usr/bin/env python3
"""Replays the command lines users are told to type, so that none is refused.

docs: every `weft ...` line of README.md's and docs/*.md's code blocks, and every inline code span
      that is a whole `weft SUBCOMMAND --flag V --flag ...` command (two flags or more, no
      placeholders), goes through the tool's own parser
      (parse_only): the subcommand it names must accept it.
search: each configuration `weft plan --search` prints plans as printed, the same step under weft's
      flags and Megatron's arguments.
plan: `weft plan` is run on a few jobs; the flags it recommends ("best of N plans judged: FLAGS",
      "weft plan: FLAGS runs this job") must run under `weft plan` for the same job, and their
      schedule and chunks must be accepted by the pipeline subcommands (generate, check,
      simulate, run) on the same pipeline shape; the best plan's whole weft flags plan the
      step it printed, and its Megatron arguments parse.
"""
import argparse
import json
import pathlib
import re
import shlex
import subprocess
import sys
import tempfile

COMMAND = re.compile(r"^(?:\$ )?(?:mpirun\s.*?\s)?(weft\s.*)$")
INLINE = re.compile(r"`(weft [a-z][a-z0-9-]* --[^`]*)`")
PLACEHOLDER = re.compile(r"\b[A-Z]+\b|\.\.\.|<|\[")


def doc_commands(root: pathlib.Path):
    """(where, command) for each command line of the docs' code blocks and inline spans."""
    for page in [root / "README.md"] + sorted((root / "docs").glob("*.md")):
        in_block, pending, start = False, "", 0
        for number, line in enumerate(page.read_text().split("\n"), 1):
            text = line.strip()
            if text.startswith("```"):
                in_block = not in_block
                continue
            if not in_block:
                for span in INLINE.findall(line):
                    # A whole command, not a flag named in passing ("`weft plan --check`").
                    if span.count(" --") >= 2 and not PLACEHOLDER.search(span):
                        yield f"{page.name}:{number}", span
                continue
            if pending:
                pending += " " + text.rstrip("\\").strip()
                if not text.endswith("\\"):
                    yield f"{page.name}:{start}", pending
                    pending = ""
                continue
            match = COMMAND.match(text)
            if not match:
                continue
            start = number
            if text.endswith("\\"):
                pending = match.group(1).rstrip("\\").strip()
            else:
                yield f"{page.name}:{number}", match.group(1)


def words(command: str):
    """The arguments after `weft`, without a trailing # comment."""
    return shlex.split(command, comments=True)[1:]


def replay_docs(parser: str, root: pathlib.Path) -> list:
    failures, count = [], 0
    for where, command in doc_commands(root):
        count += 1
        run = subprocess.run([parser] + words(command), capture_output=True, text=True)
        if run.returncode != 0:
            failures.append(f"{where}: '{command}' is refused: {run.stderr.strip()}")
    if count < 20:
        failures.append(f"only {count} command lines found in the docs; the extraction broke")
    print(f"replayed {count} command lines of the docs")
    return failures


# Jobs whose plan the tool prints (model, cluster and job flags), with a pipeline shape for
# the pipeline subcommands.
JOBS = [
    ["--model", "tests/data/hf/gpt2.json", "--cluster", "h800", "--pp", "4", "--dp", "2",
     "--global-batch-size", "64"],
    ["--model", "presets/models/gpt3-175b.json", "--cluster", "a100-80g", "--tp", "8", "--pp",
     "8", "--dp", "16", "--global-batch-size", "1536", "--seq-length", "2048",
     "--sequence-parallel", "--recompute", "selective"],
    ["--preset", "deepseek-v3"],
    ["--preset", "llama2-70b-xdc"],
]
BEST = re.compile(r"plans judged \(schedules, chunks, layouts\): (.*)$", re.M)
HINT = re.compile(r"^weft plan: (.*) runs this job", re.M)


def pipeline_flags(flags: list) -> list:
    """The recommended schedule and chunks, without plan's own --pipeline-layout."""
    out, skip = [], False
    for w in flags:
        if skip:
            skip = False
            continue
        if w == "--pipeline-layout":
            skip = True
            continue
        out.append(w)
    return out


def replay_plan(weft: str, parser: str, root: pathlib.Path) -> list:
    failures, count = [], 0
    for job in JOBS:
        run = subprocess.run([weft, "plan"] + job, capture_output=True, text=True, cwd=root)
        printed = BEST.findall(run.stdout) + HINT.findall(run.stderr)
        if not printed:
            failures.append(f"weft plan {' '.join(job)} printed no command line "
                            f"(exit {run.returncode}): {run.stderr.strip()}")
            continue
        for flags_text in printed:
            count += 1
            flags = shlex.split(flags_text)
            again = subprocess.run([weft, "plan"] + replan(job, flags, root), capture_output=True,
                                   text=True, cwd=root)
            if again.returncode not in (0, 1):  # 1: does not fit, still a plan
                failures.append(f"weft plan {' '.join(job)} recommends '{flags_text}', which "
                                f"weft plan refuses: {again.stderr.strip()}")
            for sub in ("generate", "check", "simulate", "run"):
                args = [sub, "--pp", "4", "--micro", "8"] + pipeline_flags(flags)
                parsed = subprocess.run([parser] + args, capture_output=True, text=True)
                if parsed.returncode != 0:
                    failures.append(f"weft plan recommends '{flags_text}'; weft {sub} refuses "
                                    f"it: {parsed.stderr.strip()}")
        failures += replay_best_figures(weft, parser, job, root)
    print(f"replayed {count} command lines weft plan printed")
    return failures


def replay_best_figures(weft: str, parser: str, job: list, root: pathlib.Path) -> list:
    """The best plan's weft flags plan the step it printed; its Megatron arguments, where it has
    them, parse and plan."""
    run = subprocess.run([weft, "plan", "--json"] + job, capture_output=True, text=True, cwd=root)
    if run.returncode not in (0, 1):
        return [f"weft plan --json {' '.join(job)} failed: {run.stderr.strip()}"]
    found = json.loads(run.stdout)
    best, failures = found["best"], []
    again = subprocess.run([weft, "plan"] + whole_job(job, shlex.split(best["weft_flags"]), root)
                           + ["--json"], capture_output=True, text=True, cwd=root)
    if again.returncode not in (0, 1):
        return [f"the best plan's weft flags '{best['weft_flags']}' do not plan: "
                f"{again.stderr.strip()}"]
    step = json.loads(again.stdout)["step_s"]
    if abs(step - best["step_s"]) > 1e-9 * best["step_s"]:
        failures.append(f"the best plan's weft flags '{best['weft_flags']}' plan a step of "
                        f"{step} s; weft plan printed {best['step_s']} s")
    if best["megatron_arguments"] and job[0] != "--preset":
        args = (["plan"] + job[:4] + ["--devices", str(found["devices"])] +
                shlex.split(best["megatron_arguments"]))
        parsed = subprocess.run([parser] + args, capture_output=True, text=True)
        if parsed.returncode != 0:
            failures.append(f"Megatron's '{best['megatron_arguments']}' is refused: "
                            f"{parsed.stderr.strip()}")
        planned = subprocess.run([weft] + args, capture_output=True, text=True, cwd=root)
        if planned.returncode not in (0, 1):  # 1: does not fit, still a plan
            failures.append(f"Megatron's '{best['megatron_arguments']}' does not plan: "
                            f"{planned.stderr.strip()}")
    return failures


def whole_job(job: list, flags: list, root: pathlib.Path) -> list:
    """The model and the cluster of `job` with `flags`, which state the whole job: on the
    command line, or for a preset as a job file (each flag without its dashes; `--no-X` is X
    false, a flag without a value true, one with several values a list)."""
    if job[0] != "--preset":
        return job[:4] + flags
    folder = root / "presets" / job[1]
    spec, i = {}, 0
    while i < len(flags):
        key, i = flags[i].lstrip("-"), i + 1
        values = []
        while i < len(flags) and not flags[i].startswith("--"):
            values.append(int(flags[i]) if flags[i].isdigit() else flags[i])
            i += 1
        if len(values) > 1 or key == "recompute-modules":  # a list
            spec[key] = values
        elif values:
            spec[key] = values[0]
        elif key.startswith("no-"):
            spec[key[3:]] = False
        else:
            spec[key] = True
    chosen = pathlib.Path(tempfile.mkdtemp()) / "job.json"
    chosen.write_text(json.dumps(spec))
    return ["--model", str(folder / "config.json"), "--cluster", str(folder / "cluster.json"),
            "--job", str(chosen)]


def replan(job: list, flags: list, root: pathlib.Path) -> list:
    """The job with the recommended flags. A preset's job is a file, which takes no job flags:
    the flags go into a copy of it, keyed as a job file is (the flag without its dashes)."""
    if job[0] != "--preset":
        return job + flags
    folder = root / "presets" / job[1]
    spec = json.loads((folder / "job.json").read_text())
    for key, value in zip(flags[::2], flags[1::2]):
        spec[key.lstrip("-")] = int(value) if value.isdigit() else value
    chosen = pathlib.Path(tempfile.mkdtemp()) / "job.json"
    chosen.write_text(json.dumps(spec))
    return ["--model", str(folder / "config.json"), "--cluster", str(folder / "cluster.json"),
            "--job", str(chosen)]


# Jobs whose configurations `weft plan --search` chooses: each printed configuration must plan
# as printed, under weft's flags and, where Megatron runs it, Megatron's arguments.
SEARCHES = [
    ["--model", "tests/data/hf/gpt2.json", "--cluster", "a100-80g", "--devices", "8",
     "--global-batch-size", "64", "--seq-length", "1024", "--search", "600", "--top", "5"],
    ["--model", "tests/data/hf/mixtral-8x7b.json", "--cluster", "h100-sxm", "--devices", "64",
     "--global-batch-size", "256", "--seq-length", "4096", "--search", "3", "--top", "5"],
    # Memory-bound: block recomputation of the first N layers among the choices.
    ["--model", "tests/data/hf/llama-3.1-8b.json", "--cluster", "h100-sxm", "--devices", "8",
     "--tp", "1", "--cp", "1", "--global-batch-size", "64", "--seq-length", "16384", "--search",
     "600", "--top", "5"],
]


def replay_search(weft: str, parser: str, root: pathlib.Path) -> list:
    failures, count = [], 0
    for job in SEARCHES:
        run = subprocess.run([weft, "plan", "--json"] + job, capture_output=True, text=True,
                             cwd=root)
        if run.returncode != 0:
            failures.append(f"weft plan {' '.join(job)} failed: {run.stderr.strip()}")
            continue
        found = json.loads(run.stdout)
        shape = job[:4]  # the model and the cluster; the flags state the rest
        devices = ["--devices", str(found["devices"])]  # Megatron's world size
        for x in found["top"]:
            count += 1
            forms = [("weft", x["weft_flags"], [])]
            if x["megatron_arguments"]:
                forms.append(("Megatron", x["megatron_arguments"], devices))
            for name, text, world in forms:
                args = ["plan"] + shape + world + shlex.split(text) + ["--json"]
                parsed = subprocess.run([parser] + args, capture_output=True, text=True)
                if parsed.returncode != 0:
                    failures.append(f"{name}'s '{text}' is refused: {parsed.stderr.strip()}")
                    continue
                again = subprocess.run([weft] + args, capture_output=True, text=True, cwd=root)
                if again.returncode != 0:
                    failures.append(f"{name}'s '{text}' does not plan: {again.stderr.strip()}")
                    continue
                step = json.loads(again.stdout)["step_s"]
                if abs(step - x["step_s"]) > 1e-9 * x["step_s"]:
                    failures.append(f"{name}'s '{text}' plans a step of {step} s, the search "
                                    f"printed {x['step_s']} s")
    if count < 6:
        failures.append(f"only {count} configurations printed; the search broke")
    print(f"replayed {count} configurations weft plan --search printed")
    return failures


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--weft", required=True)
    ap.add_argument("--parser", required=True)
    ap.add_argument("--root", required=True, type=pathlib.Path)
    ap.add_argument("what", choices=["docs", "plan", "search"])
    a = ap.parse_args()
    replay = {"docs": lambda: replay_docs(a.parser, a.root),
              "plan": lambda: replay_plan(a.weft, a.parser, a.root),
              "search": lambda: replay_search(a.weft, a.parser, a.root)}
    failures = replay[a.what]()
    for f in failures:
        print(f"weft: replay: {f}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
