"""weft.simulate and weft.search: the tool's figures, the search's bounds, the GIL let go."""
import threading
import time

import pytest
import weft


def test_gpipe_takes_micro_plus_stages_minus_one_rounds():
    # GPipe with uniform costs: (m + p - 1) (F + B) = (4 + 2 - 1) x 3 = 15 units.
    r = weft.simulate(weft.generate("gpipe", pp=2, micro=4), costs={"F": 1, "B": 2})
    assert r["makespan"] == pytest.approx(15)
    assert r["time_unit"] == "units" and len(r["ranks"]) == 2


@pytest.mark.parametrize("name,chunks", [("1f1b", 1), ("interleaved", 2), ("dualpipev", 2)])
def test_simulate_is_the_tools(name, chunks, cli_json):
    s = weft.generate(name, pp=4, micro=8, chunks=chunks)
    mine = s.simulate(costs={"F": 1, "B": 2, "W": 1, "P2P": 0.1}, contention=True)
    tool = cli_json("simulate", "--schedule", name, "--pp", 4, "--micro", 8, "--chunks", chunks,
                    "--cost", "F=1,B=2,W=1,P2P=0.1", "--contention", "on")
    assert mine == tool


def test_search_finds_a_legal_schedule():
    r = weft.search(pp=4, micro=8, budget_s=0.5)
    best = r["schedule"]
    assert isinstance(best, weft.Schedule) and weft.verify(best)["legal"]
    assert r["makespan"] >= r["bound"]["best"] - 1e-9
    assert r["makespan"] <= min(g["makespan"] for g in r["generators"] if "makespan" in g)
    assert r["evaluations"] > 0 and r["rate"] > 0 and r["estimated"] >= 0
    assert best.simulate()["makespan"] == pytest.approx(r["makespan"])
    # Nothing legal under a cap no schedule meets: no schedule, said so.
    none = weft.search(pp=4, micro=8, placement="vee", max_live=1, budget_s=0.2)
    assert none["schedule"] is None and none["makespan"] is None and not none["optimal"]


def test_one_rank_is_optimal_at_its_work():
    # One rank runs every forward and backward in turn: 4 x (1 + 2) = 12 units, its work bound.
    r = weft.search(pp=1, micro=4, budget_s=0.5)
    assert r["makespan"] == pytest.approx(12) and r["bound"]["work"] == pytest.approx(12)
    assert r["optimal"]


def ticks_while(call):
    """How far this thread counts while another runs `call`, against how far it counts alone in
    as long: a call holding the GIL would leave it near nothing."""
    done = threading.Event()

    def run():
        call()
        done.set()

    worker = threading.Thread(target=run)
    ticks = 0
    start = time.monotonic()
    worker.start()
    while not done.is_set():
        ticks += 1
    worker.join()
    elapsed = time.monotonic() - start
    alone, stop = 0, time.monotonic() + min(elapsed, 0.2)
    while time.monotonic() < stop:
        alone += 1
    return elapsed, ticks / elapsed, alone / min(elapsed, 0.2)


def test_a_search_leaves_the_interpreter_to_other_threads():
    # A problem it cannot prove optimal early: it runs its whole budget.
    elapsed, rate, alone = ticks_while(
        lambda: weft.search(pp=16, micro=64, chunks=2, moe=True, max_live=24, budget_s=1.0))
    assert elapsed >= 0.5
    assert rate > 0.1 * alone


def test_search_refuses_what_it_cannot_do():
    with pytest.raises(weft.ConfigError, match="budget_s must be in"):
        weft.search(pp=4, micro=8, budget_s=0)
    with pytest.raises(weft.ConfigError, match="placement must be 'loop' or 'vee'"):
        weft.search(pp=4, micro=8, placement="w")
    with pytest.raises(weft.ConfigError):
        weft.search(pp=0, micro=8)
    s = weft.generate("1f1b", pp=2, micro=2)
    with pytest.raises(weft.ConfigError, match=r"simulate: costs\['F'\] must be in \[0, 1e12\]"):
        weft.simulate(s, costs={"F": -1})
    with pytest.raises(weft.ConfigError, match=r"search: costs\['B'\] must be a number"):
        weft.search(pp=2, micro=2, costs={"B": "2"})
    with pytest.raises(weft.ConfigError, match="simulate: no cost 'X'"):
        s.simulate(costs={"X": 1})
    with pytest.raises(weft.ConfigError):
        weft.search(pp=4, micro=-1)
    with pytest.raises(weft.ConfigError):
        weft.search(pp=4, micro=8, layers=1 << 20)
    with pytest.raises(weft.ConfigError):  # more steps than the search judges
        weft.search(pp=64, micro=1 << 16, budget_s=0.1)
    with pytest.raises(weft.IllegalScheduleError, match="rule 2"):
        weft.simulate(weft.from_actions([["0B0", "0F0"], ["1F0", "1B0"]]))
