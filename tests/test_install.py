"""A regular (non-editable) install works on its own: the studies and the paper's numbers ship as package data.

Slow tier: it creates a fresh virtual environment outside the clone and installs the whole stack into it.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_pip_install_then_reproduce_quick_from_another_directory(tmp_path):
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    py = venv / "bin" / "python"
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    install = subprocess.run([str(py), "-m", "pip", "install", "--quiet", str(REPO)], capture_output=True, text=True,
                             env=env, timeout=3000)
    assert install.returncode == 0, install.stderr[-3000:]
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    where = subprocess.run([str(py), "-c", "import spare_mc; print(spare_mc.__file__)"], capture_output=True,
                           text=True, cwd=elsewhere, env=env, check=True).stdout.strip()
    assert where.startswith(str(venv)), where  # the installed copy, not the clone
    proc = subprocess.run([str(venv / "bin" / "spare-mc"), "reproduce", "--quick", "--json"], capture_output=True,
                          text=True, cwd=elsewhere, env=env, timeout=3000)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout)
    assert [row["n_groups"] for row in out["rows"]] == [200, 600, 1000]
    assert (elsewhere / "data" / "quick" / "main_table.json").exists()
    assert sorted(Path(p).name for p in out["figures"]) == ["masked.png", "overhead.png", "phase.png", "ttt.png"]
    assert (elsewhere / "data" / "quick" / "phase.json").exists() and out["phase_map"].endswith("phase.json")
    assert out["paper_N600"]["spare"]["best_r"] == 8  # read from the installed package data
