"""weft.simulate and weft.search: the tool's figures, the search's bounds, the GIL let go."""
import threading
import time

import pytest
import weft


def test_gpipe_takes_micro_plus_stages_minus_one_rounds():
    # GPipe with uniform costs: (m + p - 1) (F + B) = (4 + 2 - 1) x 3 = 15 units.
    r = weft.simulate(weft.generate("gpipe", pp=2, micro=4), F=1, B=2)
    assert r["makespan"] == pytest.approx(15)
    assert r["time_unit"] == "units" and len(r["ranks"]) == 2


@pytest.mark.parametrize("name,chunks", [("1f1b", 1), ("interleaved", 2), ("dualpipev", 2)])
def test_simulate_is_the_tools(name, chunks, cli_json):
    s = weft.generate(name, pp=4, micro=8, chunks=chunks)
    mine = s.simulate(F=1, B=2, W=1, P2P=0.1, contention=True)
    tool = cli_json("simulate", "--schedule", name, "--pp", 4, "--micro", 8, "--chunks", chunks,
                    "--cost", "F=1,B=2,W=1,P2P=0.1", "--contention", "on")
    assert mine == tool


def test_search_finds_a_legal_schedule_at_its_bound():
    r = weft.search(pp=4, micro=8, budget_s=0.5)
    best = r["schedule"]
    assert isinstance(best, weft.Schedule) and weft.verify(best)["legal"]
    assert r["makespan"] >= r["bound"]["best"] - 1e-9
    assert r["optimal"] == (r["makespan"] <= r["bound"]["best"])
    assert r["makespan"] <= min(g["makespan"] for g in r["generators"] if "makespan" in g)
    assert r["evaluations"] > 0 and r["rate"] > 0
    assert best.simulate()["makespan"] == pytest.approx(r["makespan"])


def test_a_search_leaves_the_interpreter_to_other_threads():
    ticks = 0
    done = threading.Event()

    def search():  # a problem it cannot prove optimal early: it runs its whole budget
        weft.search(pp=16, micro=64, chunks=2, moe=True, max_live=24, budget_s=1.0, seed=3)
        done.set()

    worker = threading.Thread(target=search)
    worker.start()
    start = time.monotonic()
    while not done.is_set():
        ticks += 1
    worker.join()
    # Holding the GIL for the second the search runs would have kept this loop at a standstill.
    assert time.monotonic() - start >= 0.9
    assert ticks > 10_000


def test_search_refuses_what_it_cannot_do():
    with pytest.raises(weft.ConfigError, match="budget_s must be in"):
        weft.search(pp=4, micro=8, budget_s=0)
    with pytest.raises(weft.ConfigError, match="placement must be 'loop' or 'vee'"):
        weft.search(pp=4, micro=8, placement="w")
    with pytest.raises(weft.ConfigError):
        weft.search(pp=0, micro=8)
    with pytest.raises(weft.ConfigError, match="every cost must be a number"):
        weft.simulate(weft.generate("1f1b", pp=2, micro=2), F=-1)
    with pytest.raises(weft.IllegalScheduleError, match="rule 2"):
        weft.simulate(weft.from_actions([["0B0", "0F0"], ["1F0", "1B0"]]))
