"""The analysis notebook executes headless on small data (so it never rots)."""

import os
import pathlib

os.environ.setdefault("JUPYTER_PLATFORM_DIRS", "1")  # silence jupyter_core's path-migration notice

import nbclient  # noqa: E402  (the [test] extra installs nbclient, nbformat and ipykernel)
import nbformat  # noqa: E402

from spare_mc.sweep import SweepSpec, run_sweep  # noqa: E402

NOTEBOOK = pathlib.Path(__file__).resolve().parents[1] / "notebooks" / "analysis.ipynb"


def test_analysis_notebook_runs_on_small_data(tmp_path):
    specs = {
        "masked": '[sweep]\nname="masked"\nquantity="wipeout"\nreps=40\nseed=1\n'
                  '[grid]\nn_groups=[40, 60]\nr=[2, 4]\nlayout=["cyclic", "random"]\n',
        "overhead": '[sweep]\nname="overhead"\nquantity="overhead"\nreps=10\nseed=1\n'
                    '[grid]\nn_groups=[40]\nr=[2, 4]\nlayout=["cyclic", "sidon"]\n',
        "ttt_spare": '[sweep]\nname="ttt_spare"\nquantity="ttt"\nreps=3\nseed=1\n[grid]\nn_groups=[40]\nr=[2, 4]\n'
                     '[fixed]\nstrategy="spare"\nn_steps=200\n',
    }
    for name, text in specs.items():
        run_sweep(SweepSpec.from_toml(text), tmp_path / f"{name}.nc", workers=0, progress=False)
    nb = nbformat.read(NOTEBOOK, as_version=4)
    os.environ["SPARE_MC_DATA"] = str(tmp_path)
    try:
        nbclient.NotebookClient(nb, timeout=300, kernel_name="python3",
                                resources={"metadata": {"path": str(NOTEBOOK.parent)}}).execute()
    finally:
        del os.environ["SPARE_MC_DATA"]
    text = "".join(o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", []))
    assert "grid points consistent with the exact value" in text
    images = sum("image/png" in o.get("data", {}) for c in nb.cells if c.cell_type == "code"
                 for o in c.get("outputs", []))
    assert images >= 3
