"""weft.verify: the checker's report as data, the same as `weft verify --json`."""
import pytest
import weft

from conftest import ORACLES

ORACLE_FILES = sorted(ORACLES.glob("*.csv"))


@pytest.mark.parametrize("path", ORACLE_FILES, ids=lambda p: p.name)
def test_every_oracle_schedule_is_certified(path):
    r = weft.verify(weft.load_csv(path))
    assert r["legal"] and r["violations"] == [] and r["blocked"] == []
    assert len(r["peak_live_per_rank"]) == weft.load_csv(path).ranks


@pytest.mark.parametrize("path", ORACLE_FILES, ids=lambda p: p.name)
def test_the_tool_certifies_them_alike(path, cli_json):
    r = weft.verify(weft.load_csv(path))
    tool = cli_json("verify", path)
    assert tool["legal"] and tool.get("note") == r.get("note")


def broken_zb1p():
    """PyTorch's ZB1P schedule with rank 0's 2I0 and 2F0 swapped: the dX of stage 2 for
    micro-batch 0 now sits in slot 2, before its own forward (moved to slot 5)."""
    rows = (ORACLES / "pytorch_zb1p_2rank_2stagep_compute.csv").read_text().splitlines()
    cells = rows[0].split(",")
    assert cells[2] == "2F0" and cells[5] == "2I0"
    cells[2], cells[5] = cells[5], cells[2]
    rows[0] = ",".join(cells)
    return "\n".join(rows) + "\n"


def test_a_hand_broken_csv_names_the_rule_and_the_op():
    r = weft.verify(weft.load_csv(broken_zb1p()))
    assert not r["legal"]
    first = r["violations"][0]
    assert (first["rule"], first["rule_name"], first["fault"]) == (2, "order", "runs_before_producer")
    assert (first["rank"], first["slot"], first["other_rank"], first["other_slot"]) == (0, 2, 0, 5)
    assert "dX" in first["op"] and "mb=0" in first["op"] and "F" in first["other"]
    assert first["message"].startswith("weft: rule 2 (order): ")


def test_the_tool_says_the_same_of_the_same_file(tmp_path, cli_json):
    text = broken_zb1p()
    r = weft.verify(weft.load_csv(text))
    path = tmp_path / "broken.csv"
    path.write_text(text)
    tool = cli_json("verify", path)
    assert not tool["legal"]
    assert tool["violations"] == r["violations"][: len(tool["violations"])]
    assert tool["more_violations"] == len(r["violations"]) - len(tool["violations"])


def test_a_deadlock_names_the_stuck_ops():
    # PyTorch's DualPipeV with rank 0's 0F2 and 7F0 swapped: 7F0 (now rank 0's slot 2) needs
    # 6F0, which rank 1 runs after 1F2 (its slot 2); 1F2 needs 0F2, now after 7F0 — a cycle. Rank
    # 2 waits at 2F2 (slot 2) for 1F2, rank 3 at 3F2 (slot 4) for 2F2.
    rows = weft.generate("dualpipev", pp=4, micro=10).actions
    assert (rows[0][2], rows[0][7], rows[1][2], rows[2][2], rows[3][4]) == (
        "0F2", "7F0", "1F2", "2F2", "3F2")
    rows[0][2], rows[0][7] = rows[0][7], rows[0][2]
    r = weft.verify(weft.from_actions(rows))
    assert not r["legal"]
    first = r["violations"][0]
    assert (first["rule"], first["fault"], first["rank"], first["slot"]) == (4, "cycle", 0, 2)
    assert "chunk=7" in first["op"] and "chunk=6" in first["other"] and first["other_rank"] == 1
    stuck = [line.split(" on ")[1].split(" can never")[0] for line in r["blocked"]]
    assert stuck == ["rank 0, slot 2", "rank 1, slot 2", "rank 2, slot 2", "rank 3, slot 4"]


def test_pytorchs_simulator_would_stall_on_a_legal_schedule(cli_json):
    # Legal for PyTorch's runtime (receives posted without blocking), but its unit-step
    # simulator holds rank 0 at RECV_B0 until rank 1 sent it: "Schedule is not progressing".
    s = weft.load_csv("0F0,0RECV_B0,0SEND_F0,0B0\n1RECV_F0,1F0,1B0,1SEND_B0\n")
    r = weft.verify(s)
    assert r["legal"] and r["pytorch_simulator_stalls"]
    assert "Schedule is not progressing" in r["note"] and "RECV_B0" in r["note"]


def test_memory_cap_and_bytes_per_rank():
    # 1F1B keeps at most pp - r micro-batches live on rank r: 2 on rank 0, 1 on rank 1.
    s = weft.generate("1f1b", pp=2, micro=4)
    r = weft.verify(s, memory={"activation_bytes": 10, "states_bytes": [100, 200]})
    assert r["peak_live_per_rank"] == [2, 1]
    assert r["bytes_per_rank"] == [120, 210]
    assert all(isinstance(b, int) for b in r["bytes_per_rank"])
    capped = weft.verify(s, max_live=1)
    assert not capped["legal"]
    assert capped["violations"][0]["rule"] == 5 and capped["violations"][0]["rank"] == 0
    assert s.verify(max_live=2)["legal"]
    with pytest.raises(weft.ConfigError, match="memory takes 'activation_bytes'"):
        weft.verify(s, memory={"activations": 1})
    with pytest.raises(weft.ConfigError, match="has 3 entries, the schedule needs 2"):
        weft.verify(s, memory={"states_bytes": [1, 2, 3]})
    with pytest.raises(weft.ConfigError, match="max_live must be at least 1"):
        weft.verify(s, max_live=0)
    for bad in ("100", None, -1, float("nan"), float("inf"), 1e30, [1, "2"]):
        with pytest.raises(weft.ConfigError, match=r"memory\['states_bytes'\] must be"):
            weft.verify(s, memory={"states_bytes": bad})
    # Checked before the schedule is: an illegal one does not hide a bad memory=.
    with pytest.raises(weft.ConfigError, match="memory takes"):
        weft.verify(weft.from_actions([["0B0", "0F0"], ["1F0", "1B0"]]), memory={"bogus": 1})
