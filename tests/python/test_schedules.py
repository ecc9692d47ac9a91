"""Schedules in and out: generate, load_csv, from_actions, the CSV both ways, pictures."""
import os
import pathlib

import pytest
import weft

from conftest import ORACLES


def test_generate_is_pytorchs_dualpipev():
    # PyTorch's own DualPipeV test artifact: 4 ranks, 10 micro-batches, compute only.
    s = weft.generate("dualpipev", pp=4, micro=10)
    assert s.to_csv() == (ORACLES / "pytorch_dualpipev_4rank_10mb.csv").read_text()
    assert (s.ranks, s.micro, s.chunks_per_rank, s.placement) == (4, 10, 2, "vee")
    assert s.actions[0][:3] == ["0F0", "0F1", "0F2"]
    assert "(0F7;7B3)OVERLAP_F_B" in s.actions[0]
    assert not s.has_comms


def test_generate_matches_the_tool(cli):
    for name, pp, micro, chunks in [("1f1b", 4, 8, 1), ("interleaved", 4, 8, 2), ("zb-v", 4, 8, 2)]:
        code, out, err = cli("generate", "--schedule", name, "--pp", pp, "--micro", micro,
                             "--chunks", chunks, "--format", "csv")
        assert code == 0, err
        assert weft.generate(name, pp=pp, micro=micro, chunks=chunks).to_csv() == out


def test_every_generator_has_a_line():
    names = [n for n, _ in weft.generators()]
    assert {"gpipe", "1f1b", "interleaved", "zb-v", "dualpipe", "dualpipev"} <= set(names)


def test_comms_added_and_taken_away():
    plain = weft.generate("1f1b", pp=2, micro=4)
    with_comms = weft.generate("1f1b", pp=2, micro=4, comms=True)
    assert with_comms.has_comms and not plain.has_comms
    # Adding PyTorch's transfers to the compute-only schedule gives the generator's own.
    assert plain.to_csv(comms=True) == with_comms.to_csv()
    assert with_comms.to_csv(comms=False) == plain.to_csv()
    assert weft.load_csv(with_comms.to_csv(comms=False)) == plain
    assert "SEND_F" in with_comms.to_csv() and "RECV_B" in with_comms.to_csv()


def test_megatron_transfers():
    s = weft.generate("1f1b", pp=4, micro=8, p2p="blocking")
    assert s.has_comms and weft.verify(s)["legal"]
    with pytest.raises(weft.ConfigError, match="p2p must be 'pytorch', 'megatron' or 'blocking'"):
        weft.generate("1f1b", pp=4, micro=8, p2p="nccl")


def test_load_csv_from_a_path_text_or_pathlike(tmp_path):
    path = ORACLES / "torchtitan_custom_4rank_8stage_6mb_compute.csv"
    text = path.read_text()
    a, b, c = weft.load_csv(str(path)), weft.load_csv(path), weft.load_csv(text)
    assert a == b == c
    assert a.to_csv() == text
    assert (a.ranks, a.micro, a.chunks_per_rank) == (4, 6, 2)


def test_from_actions_is_the_csvs_rows():
    rows = [["0F0", "0F1", "", "0B0", "0B1"], ["1F0", "1B0", "1F1", "1B1"]]
    s = weft.from_actions(rows)
    assert s.actions == rows
    assert s == weft.load_csv("0F0,0F1,,0B0,0B1\n1F0,1B0,1F1,1B1\n")


def test_save_and_pictures(tmp_path):
    s = weft.generate("zb-h1", pp=2, micro=4)
    s.save(tmp_path / "s.csv")
    assert weft.load_csv(tmp_path / "s.csv") == s
    s.svg(tmp_path / "s.svg", costs={"P2P": 0.1})
    assert (tmp_path / "s.svg").read_text().startswith("<svg")
    s.trace(str(tmp_path / "s.json"))
    assert '"traceEvents"' in (tmp_path / "s.json").read_text()


def test_a_refusal_is_the_tools_line(cli):
    code, _, err = cli("generate", "--schedule", "zb-v", "--pp", 4, "--micro", 3)
    with pytest.raises(weft.ConfigError) as caught:
        weft.generate("zb-v", pp=4, micro=3)
    assert code == 2 and str(caught.value) == err.splitlines()[0]


def test_schedules_compare_with_anything():
    s = weft.generate("1f1b", pp=2, micro=2)
    assert (s == None) is False and (s == 3) is False and s in [1, s]  # noqa: E711
    assert s != weft.generate("1f1b", pp=2, micro=4)


def test_bad_input_is_a_config_error():
    with pytest.raises(weft.ConfigError, match="no generator named 'dualpipe-x'"):
        weft.generate("dualpipe-x", pp=4, micro=8)
    with pytest.raises(ValueError):  # ConfigError is a ValueError
        weft.generate("zb-v", pp=4, micro=3)
    for bad in ({"pp": 0, "micro": 8}, {"pp": 4, "micro": -1}, {"pp": 1 << 20, "micro": 8}):
        with pytest.raises(weft.ConfigError):
            weft.generate("1f1b", **bad)
    with pytest.raises(weft.ConfigError):
        weft.generate("1f1b", pp=4, micro=8, layers=1 << 20)
    with pytest.raises(weft.ConfigError, match="cannot open 'runs/best.csv'"):
        weft.load_csv("runs/best.csv")  # a path with a typo, not a CSV's text
    with pytest.raises(weft.ConfigError, match="text: csv row 2, column 2: 'XX'"):
        weft.load_csv("0F0,0F1\n1F0,XX\n")
    with pytest.raises(weft.ConfigError, match="holds a comma or a line break"):
        weft.from_actions([["0F0,0B0"]])
    with pytest.raises(weft.ConfigError, match="load_csv takes a path or a CSV's text"):
        weft.load_csv(3)
    with pytest.raises(weft.ConfigError, match="cannot open"):
        weft.load_csv(pathlib.Path("/no/such/schedule.csv"))
    with pytest.raises(weft.ConfigError, match="DualPipe's two directions"):
        weft.generate("dualpipe", pp=4, micro=8).to_csv()
    with pytest.raises(TypeError):
        weft.generate("1f1b", 4, 8)  # pp and micro by name only
