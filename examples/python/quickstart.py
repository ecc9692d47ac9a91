"""Generate a schedule, certify a hand-edited PyTorch CSV, plan a job (docs/python.md)."""
import sys
import weft

presets = sys.argv[1] if len(sys.argv) > 1 else "presets"
s = weft.generate("dualpipev", pp=4, micro=10)  # PyTorch's DualPipeV, as its tests have it
print(repr(s), "takes", s.simulate(costs={"F": 1, "B": 2, "W": 1})["makespan"], "units")
rows = s.actions
rows[0][2], rows[0][7] = rows[0][7], rows[0][2]  # a hand edit: 7F0 before 0F2 on rank 0
report = weft.verify(weft.from_actions(rows))
for v in report["violations"][:1]:
    print("rule", v["rule"], v["rule_name"], "at rank", v["rank"], "slot", v["slot"], ":", v["op"])
plan = weft.plan(model=f"{presets}/models/gpt3-175b.json", cluster="a100-80g", tp=8, pp=8,
                 global_batch_size=64, seq_length=2048, sequence_parallel=True,
                 recompute="selective", schedule="interleaved", chunks=3)
print(f"GPT-3 175B on 64 A100s: {plan['step_s']:.2f} s a step, MFU {plan['mfu']:.1%},",
      f"best: {plan['best']['flags']}")
