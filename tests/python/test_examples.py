"""The examples in examples/python run, and the module works installed as well as built."""
import os
import pathlib
import subprocess
import sys

import pytest

from conftest import PRESETS, SOURCE


def test_quickstart_runs_as_docs_python_md_shows_it():
    example = SOURCE / "examples" / "python" / "quickstart.py"
    out = subprocess.run([sys.executable, str(example)], capture_output=True, text=True,
                         cwd=SOURCE, timeout=300)
    assert out.returncode == 0, out.stderr
    page = (SOURCE / "docs" / "python.md").read_text()
    section = page[page.index("## In fifteen lines"):page.index("## The calls")]
    code = section.split("```python\n")[1].split("```")[0]
    printed = section.split("```\n")[2].split("```")[0]
    assert code == example.read_text()
    assert out.stdout == printed


def test_installed_module_plans(tmp_path):
    build = os.environ.get("WEFT_BUILD")
    if not build:
        pytest.skip("WEFT_BUILD names no build tree")
    subprocess.run(["cmake", "--install", build, "--component", "python", "--prefix",
                    str(tmp_path)], check=True, capture_output=True, timeout=300)
    found = list(tmp_path.rglob("weft*.so"))
    assert len(found) == 1 and (found[0].parent / "weft.pyi").exists()
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONPATH"] = str(found[0].parent)
    code = ("import weft; print(weft.__file__); print(weft.plan(model='" +
            str(PRESETS / "deepseek-v3" / "config.json") +
            "', cluster='h800', pp=16, dp=128, ep=64, schedule='dualpipe', "
            "pipeline_layout='Et*3|(t*4|)*14,t*2mL', global_batch_size=15360, "
            "seq_length=4096)['step_s'])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                         cwd=tmp_path, timeout=300)
    assert out.returncode == 0, out.stderr
    where, step = out.stdout.split()
    assert pathlib.Path(where).parent == found[0].parent and float(step) > 0
