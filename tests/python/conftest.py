"""What the Python module's tests share: the weft tool to compare with, and the data's paths.

CTest sets WEFT_CLI (the tool), WEFT_SOURCE (the repository) and puts the built module on
PYTHONPATH.
"""
import json
import os
import pathlib
import subprocess

import pytest

SOURCE = pathlib.Path(os.environ.get("WEFT_SOURCE", pathlib.Path(__file__).parents[2]))
DATA = SOURCE / "tests" / "data"
# The public schedule files beside the repository when they are there, else the copies in it.
SHARED = SOURCE.parent / "shared" / "oracles"
ORACLES = SHARED if SHARED.is_dir() else DATA / "pytorch"
PRESETS = SOURCE / "presets"


@pytest.fixture(scope="session")
def cli():
    """Runs the weft tool: (exit code, stdout, stderr)."""
    tool = os.environ.get("WEFT_CLI")
    if not tool:
        pytest.skip("WEFT_CLI names no weft tool")

    def run(*args):
        p = subprocess.run([tool, *map(str, args)], capture_output=True, text=True, timeout=300)
        return p.returncode, p.stdout, p.stderr

    return run


@pytest.fixture(scope="session")
def cli_json(cli):
    """The tool's --json output of a command that succeeds, as Python objects."""

    def run(*args):
        code, out, err = cli(*args, "--json")
        assert code in (0, 1), err
        return json.loads(out)

    return run
