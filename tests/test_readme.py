"""Every Python block of the README runs on its own, in a fresh interpreter, and prints its result."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"
BLOCKS = re.findall(r"^```python\n(.*?)^```", README.read_text(encoding="utf-8"), flags=re.MULTILINE | re.DOTALL)
#: A block that reads these real datasets runs only when their files are in the data home.
NEEDS = {"load_law_school": "law_school", "from_fico": "fico"}


def _data_ready(name: str) -> bool:
    from dpfair.datasets import DataIntegrityError, DataUnavailableError, dataset_paths

    try:
        dataset_paths(name, download=False)
    except (DataUnavailableError, DataIntegrityError):
        return False
    return True


def test_the_readme_has_python_blocks():
    assert len(BLOCKS) >= 4


@pytest.mark.slow
@pytest.mark.processes
@pytest.mark.parametrize("index", range(len(BLOCKS)), ids=[f"block{i + 1}" for i in range(len(BLOCKS))])
def test_readme_block_runs_alone_and_prints(index, tmp_path):
    code = BLOCKS[index]
    missing = [name for marker, name in NEEDS.items() if marker in code and not _data_ready(name)]
    if missing:
        pytest.skip(f"needs {missing} in the data home (`dpfair data info`)")
    env = {**os.environ, "MPLBACKEND": "Agg", "PYTHONWARNINGS": "ignore"}
    res = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr[-3000:]
    assert res.stdout.strip(), "the block prints nothing"
    for marker, check in PROOFS.items():
        if marker in code:
            check(res.stdout)


def _fold_scores(stdout: str) -> None:
    line = next(line for line in stdout.splitlines() if line.startswith("fold R^2:"))
    folds = [float(v) for v in re.findall(r"-?\d+\.\d+", line)]
    assert len(folds) == 5 and all(v > 0 for v in folds), line  # unshuffled folds gave -16.6


def _ks(stdout: str) -> None:
    before, after = (float(v) for v in re.search(r"before ([0-9.]+), after ([0-9.]+)", stdout).groups())
    assert after < 0.5 * before, stdout


def _selection(stdout: str) -> None:
    assert "[9.43" in stdout, stdout


def _privacy_core(stdout: str) -> None:
    lines = stdout.strip().splitlines()
    assert "(0.5, 0.0)" in lines[0] and lines[-1] == "10.0", stdout  # spent what was asked; m = 10 members


def _assessment(stdout: str) -> None:
    assert stdout.strip().splitlines()[-1] == "1.0", stdout  # both metrics from one release at epsilon = 1
    assert all(g in stdout for g in ("a", "b", "c")) and "sr" in stdout and "tpr" in stdout


#: What each block must print to show it works (a marker of the block's code -> a check of its output).
PROOFS = {"cross_validate(": _fold_scores, "statistical_parity_ks(": _ks, "perfectly_fair_epsilons": _selection,
          "TopMExponentialMechanism": _privacy_core, "PrivateMetricFrame(": _assessment}


def test_every_block_has_a_proof_of_what_it_prints():
    for block in BLOCKS:
        assert any(marker in block for marker in PROOFS), block[:200]
