#!/usr/bin/env python3
"""`mpirun -np N weft run --backend mpi ...` against the in-process `weft run ...`, and faults.

  run_cli_mpi.py --weft W --mpirun M same       every generator, dense and MoE: equal results
  run_cli_mpi.py --weft W --mpirun M library    the library's sums: within 1e-6
  run_cli_mpi.py --weft W --mpirun M errors     a wrong process count, options without MPI
  run_cli_mpi.py --weft W --mpirun M fault K    K = throw, exit, kill or stall: every rank ends
"""
import argparse
import json
import re
import subprocess
import sys
import time

GENERATORS = ["gpipe", "1f1b", "zb-h1", "interleaved", "zb-v", "dualpipe", "dualpipev"]


def run(cmd, timeout=120):
    start = time.monotonic()
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    return p.returncode, p.stdout, p.stderr, time.monotonic() - start


def fail(why, *outputs):
    print("FAILED: " + why)
    for o in outputs:
        print(o)
    sys.exit(1)


def weft_json(cmd):
    rc, out, err, _ = run(cmd)
    if rc != 0:
        fail(" ".join(cmd) + f": exit code {rc}", out, err)
    lines = [l for l in out.splitlines() if l.startswith("{")]
    if len(lines) != 1:  # rank 0 reports, nobody else
        fail(" ".join(cmd) + f": {len(lines)} JSON reports, expected 1", out, err)
    return json.loads(lines[0])


def compare(args, np, weft_args, exact=True, mpi_args=()):
    """Runs `weft run` in-process and over MPI; returns the MPI run's report."""
    inproc = weft_json([args.weft, "run"] + weft_args + ["--json"])
    mpi = weft_json([args.mpirun, "--oversubscribe", "-np", str(np), args.weft, "run",
                     "--backend", "mpi"] + list(mpi_args) + weft_args + ["--json"])
    what = f"np {np}: weft run {' '.join(weft_args)}"
    if sorted(inproc) != sorted(mpi):
        fail(f"{what}: JSON keys differ", sorted(inproc), sorted(mpi))
    if [r["rank"] for r in inproc["ranks"]] != [r["rank"] for r in mpi["ranks"]]:
        fail(f"{what}: per-rank entries differ")
    for key in ("loss", "serial_loss", "max_grad_rel_err"):
        a, b = inproc[key], mpi[key]
        ok = a == b if exact else abs(a - b) <= 1e-6 * max(1.0, abs(a))
        if not ok:
            fail(f"{what}: {key} in-process {a!r}, over MPI {b!r}")
    if not mpi["makespan"] > 0 or not mpi["predicted_makespan"] > 0:
        fail(f"{what}: no step time measured or predicted", mpi)
    if "4 processes" not in mpi["backend"] and f"{np} processes" not in mpi["backend"]:
        fail(f"{what}: backend {mpi['backend']!r}")
    print(f"ok {what}: loss {mpi['loss']}, max grad rel err {mpi['max_grad_rel_err']}")
    return mpi


def same(args):
    # Dense whole blocks on 2 and 3 processes, every generator.
    for g in GENERATORS:
        compare(args, 2 if g != "1f1b" else 3, ["--schedule", g, "--pp", "2" if g != "1f1b" else "3",
                                                "--micro", "4"])
    # MoE sub-stages: 2 pipeline ranks x 2 expert-parallel replicas, with and without fb-overlap.
    compare(args, 4, ["--schedule", "dualpipev", "--pp", "2", "--micro", "4", "--fb-overlap"])
    compare(args, 4, ["--schedule", "1f1b", "--pp", "2", "--micro", "4", "--moe"])
    compare(args, 4, ["--schedule", "interleaved", "--pp", "2", "--micro", "4", "--moe",
                      "--layers", "2"])
    # The later MindSpeed notes' options: AMPipe's splits, the cross-DC transfer options.
    compare(args, 4, ["--schedule", "1f1b", "--pp", "2", "--micro", "4", "--moe",
                      "--ampipe-degree", "2"])
    compare(args, 2, ["--schedule", "interleaved", "--pp", "2", "--micro", "4", "--overlap-p2p",
                      "--multi-stream", "--async-log-allreduce"])
    compare(args, 2, ["--schedule", "1f1b", "--pp", "2", "--micro", "4", "--p2p", "blocking",
                      "--log-allreduce"])
    # One progress thread owning every MPI call.
    mpi = compare(args, 4, ["--schedule", "dualpipev", "--pp", "2", "--micro", "4", "--fb-overlap"],
                  mpi_args=["--mpi-threads", "progress"])
    if "a progress thread owns MPI" not in mpi["backend"]:
        fail(f"--mpi-threads progress: backend {mpi['backend']!r}")


def library(args):
    mpi = compare(args, 4, ["--schedule", "dualpipev", "--pp", "2", "--micro", "4", "--fb-overlap",
                            "--log-allreduce"], exact=False, mpi_args=["--reduce", "library"])
    if "the library's sums" not in mpi["backend"]:
        fail(f"--reduce library: backend {mpi['backend']!r}")


def errors(args):
    # 3 processes for a world of 4 ranks: said once, by rank 0; the job fails.
    rc, out, err, _ = run([args.mpirun, "--oversubscribe", "-np", "3", args.weft, "run", "--backend",
                           "mpi", "--schedule", "dualpipev", "--pp", "2", "--micro", "4",
                           "--fb-overlap"])
    said = "the program runs on 4 ranks (2 pipeline ranks x 2 replicas); the communicator has 3"
    if rc == 0 or (out + err).count(said) != 1:
        fail("a world of the wrong size", out, err)
    for bad, why in (
        (["--reduce", "library"], "--reduce and --mpi-threads apply to --backend mpi"),
        (["--inject-fault", "kill:1"], "it needs --backend mpi"),
        (["--inject-fault", "melt:1"], "the kind is throw, exit, kill or stall"),
        (["--inject-fault", "throw:x"], "give KIND:RANK[:N]"),
        # 2 ranks; rank 1 of 1F1B on 2 micro-batches runs 2 forward and 2 backward blocks, 2
        # receives of activations and 2 sends of gradients: 8 ops.
        (["--inject-fault", "throw:5"], "rank 5 is outside the world of 2 ranks"),
        (["--inject-fault", "throw:1:8"], "rank 1 runs 8 ops (0 to 7)"),
        (["--backend", "mpi", "--delay-model", "inter-node"], "over MPI the links are real"),
    ):
        rc, out, err, _ = run([args.weft, "run", "--schedule", "1f1b", "--pp", "2", "--micro", "2"] + bad)
        if rc != 2 or why not in err:
            fail(f"weft run {' '.join(bad)}: exit {rc}", out, err)
    print("ok errors")


def fault(args, kind):
    # 4 ranks (2 pipeline x 2 expert-parallel); rank 2 fails before its 6th op. A stall holds
    # it for twice the 2 s timeout: the others time out at 2 s.
    timeout = 2
    rc, out, err, took = run([args.mpirun, "--oversubscribe", "-np", "4", args.weft, "run",
                              "--backend", "mpi", "--schedule", "dualpipev", "--pp", "2",
                              "--micro", "4", "--fb-overlap", "--timeout", str(timeout),
                              "--inject-fault", f"{kind}:2:5"], timeout=90)
    text = out + err
    if rc == 0:
        fail(f"{kind}: mpirun exited 0", text)
    # Bounded: a throw is told at once, the others end within the timeout and the launcher's
    # second; nothing waits for the (stalled) peer's whole stall.
    bound = {"throw": 8, "exit": 10, "kill": 10, "stall": 2 * timeout + 8}[kind]
    if took > bound:
        fail(f"{kind}: took {took:.1f} s, bound {bound} s", text)
    survivors = [0, 1, 3]
    for r in survivors:
        # Each survivor names the op it waited at.
        if not re.search(rf"\n  rank {r} \(pipeline rank {r // 2}, replica {r % 2}\): \S+", text):
            fail(f"{kind}: rank {r} does not say what it waited at", text)
    if kind == "throw" and "rank 2 (pipeline rank 1, replica 0), " not in text:
        fail("throw: the failing rank does not name itself and its op", text)
    if kind == "throw" and not all(f"rank {r} (pipeline rank {r // 2}, replica {r % 2}) stopped: rank 2: "
                                   in text for r in survivors):
        fail("throw: a survivor does not name rank 2", text)
    # The launcher names the rank that went: Open MPI's own words.
    if kind == "kill" and "process rank 2 with PID" not in text:
        fail("kill: nothing names rank 2", text)
    if kind == "exit" and not re.search(r"Process name: \[\[\d+,\d+\],2\]", text):
        fail("exit: nothing names rank 2", text)
    if kind in ("exit", "kill") and "the launcher is ending the job" not in text:
        fail(f"{kind}: the survivors do not say why they stopped", text)
    if kind == "stall" and "not finished after 2 s" not in text:
        fail("stall: no timeout reported", text)
    print(f"ok {kind}: exit {rc} after {took:.1f} s")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--weft", required=True)
    ap.add_argument("--mpirun", required=True)
    ap.add_argument("mode", choices=["same", "library", "errors", "fault"])
    ap.add_argument("kind", nargs="?")
    args = ap.parse_args()
    if args.mode == "fault":
        fault(args, args.kind)
    else:
        {"same": same, "library": library, "errors": errors}[args.mode](args)


if __name__ == "__main__":
    main()
