"""The analysis notebook executes headless on small data (so it never rots)."""

import contextlib
import os
import pathlib
import re

os.environ.setdefault("JUPYTER_PLATFORM_DIRS", "1")  # silence jupyter_core's path-migration notice

import nbclient  # noqa: E402  (the [test] extra installs nbclient, nbformat and ipykernel)
import nbformat  # noqa: E402
import pytest  # noqa: E402

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
    # another tool's NetCDF file in the folder (a QA pass: the notebook crashed on it with a KeyError)
    import xarray as xr

    xr.Dataset({"x": ("i", [1.0, 2.0])}).to_netcdf(tmp_path / "foreign.nc", engine="scipy")
    # and a truncated copy of a sweep (a QA pass: one damaged file stopped the loader, so nothing loaded)
    (tmp_path / "cut.nc").write_bytes((tmp_path / "masked.nc").read_bytes()[:3000])
    text, images = _execute(NOTEBOOK, "SPARE_MC_DATA", tmp_path)
    assert "grid points consistent with the exact value" in text
    assert "(not sweeps, left out: ['foreign'])" in text
    assert "left out, unreadable: cut.nc: " in text and "most likely truncated" in text
    assert images >= 3


def _execute(notebook, env_var, data):
    """Run ``notebook`` headless with ``env_var`` pointing at ``data``: (the text it printed, images drawn)."""
    nb = nbformat.read(notebook, as_version=4)
    os.environ[env_var] = str(data)
    try:
        nbclient.NotebookClient(nb, timeout=300, kernel_name="python3",
                                resources={"metadata": {"path": str(notebook.parent)}}).execute()
    finally:
        del os.environ[env_var]
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])]
    return "".join(o.get("text", "") for o in outputs), sum("image/png" in o.get("data", {}) for o in outputs)


HEADLINE = NOTEBOOK.parent / "headline.ipynb"


def test_headline_notebook_runs_on_small_data(tmp_path):
    """The four files of notebooks/headline.ipynb, from small runs of the commands that write them."""
    import json

    from spare_mc.analyses.calibrate import calibrate, write_preset
    from spare_mc.analyses.reproduce import reproduce
    from spare_mc.analyses.sensitivity import Variant, sensitivity
    from spare_mc.sweep.storage import write_json

    rr, pf, base = {"rep": (2, 3), "spare": (2, 4)}, (0.71, 1.41), {"n_steps": 120}
    variants = [Variant("stay_dead", "option", "restart_failures", "stay_dead", {"restart_failures": "stay_dead"}),
                Variant("redo", "option", "rep_masked_cost", "redo_step", {"rep_masked_cost": "redo_step"})]
    sens = sensitivity((24, 30), variants=variants, reps=3, pilot_reps=6, max_confirm_reps=6, base=base, r_ranges=rr,
                       period_factors=pf, out_dir=tmp_path / "s", workers=0)
    write_json(json.loads(json.dumps(sens.to_dict(), default=str)), tmp_path / "sensitivity.json")
    table = {"name": "small", "rows": [{"n_groups": 24, "rep": {"r": 2, "ttt_over_t0": 3.0, "availability": 0.7},
                                        "spare": {"r": 3, "ttt_over_t0": 2.5, "availability": 0.9}}]}
    space = {"restart_failures": [("absorbed", {}), ("stay_dead", {"restart_failures": "stay_dead"})]}
    cal = calibrate(table, space=space, base=base, schedule=((2, 4),), r_ranges=rr, period_factors=pf,
                    predict_n=(30,), out_dir=tmp_path / "c", workers=0)
    write_json(json.loads(json.dumps(cal.to_dict(), default=str)), tmp_path / "calibration.json")
    preset = write_preset(cal, tmp_path / "p.json")
    for name, kw in (("main_table.json", {"base": base}), ("main_table_paper-n600.json", {"preset": preset})):
        # a calibration of this size may reject every combination: its preset then says so when loaded
        warns = "preset" in kw and not cal.accepted
        with pytest.warns(UserWarning, match="is a REJECTED fit") if warns else contextlib.nullcontext():
            mt = reproduce(table="main", n_values=(24, 30), reps=2, confirm_reps=3, **kw)  # the preset: n_steps
        write_json(json.loads(json.dumps(mt.to_dict(), default=str)), tmp_path / name)
    text, images = _execute(HEADLINE, "SPARE_MC_HEADLINE", tmp_path)
    assert "baseline reduction" in text and "equivalence set" in text and "preset paper-n600" in text
    assert "prediction at N = 30" in text
    assert ("preset paper-n600 (REJECTED fit)" in text) == (not cal.accepted)  # a rejected fit is labelled
    assert images >= 1


BEYOND = NOTEBOOK.parent / "beyond.ipynb"


def test_beyond_notebook_runs_on_small_data(tmp_path):
    """notebooks/beyond.ipynb: its own small exact checks, and a tiny dynamic-checkpointing study."""
    from spare_mc.analyses.dynamic import dynamic_study
    from spare_mc.sweep.storage import write_json

    res = dynamic_study((24,), shapes=(1.0,), r_values={"ckpt": (1,), "rep": (3,), "spare": (3,)},
                        factors=(0.5, 1.0), screen_reps=2, confirm_reps=4, base={"n_steps": 200, "mtbf_s": 200.0},
                        out_dir=str(tmp_path), workers=0)
    write_json(res.to_dict(), tmp_path / "dynamic.json")
    from spare_mc.analyses.repair import repair_study

    rep = repair_study((24,), repair_times=(60.0,), r_values={"rep": (2,), "spare": (2,)}, reps=2,
                       base={"n_steps": 100, "mtbf_s": 100.0}, out_dir=str(tmp_path / "repair"), workers=0)
    write_json(rep.to_dict(), tmp_path / "repair" / "repair.json")
    os.environ["SPARE_MC_NB_REPS"] = "40"
    os.environ["SPARE_MC_REPAIR"] = str(tmp_path / "repair")
    try:
        text, images = _execute(BEYOND, "SPARE_MC_DYNAMIC", tmp_path)
    finally:
        del os.environ["SPARE_MC_NB_REPS"], os.environ["SPARE_MC_REPAIR"]
    assert "exact optimum" in text and "rollback points" in text and "SPARe's reduction over Rep" in text
    assert "best r changes" in text
    assert "what a rack-blind layout loses" in text and "pod" in text  # section 5, the shipped domain study
    assert images >= 3


FAILURE_LOG = NOTEBOOK.parent / "failure_log_to_recommendation.ipynb"


def test_failure_log_notebook_runs_on_small_data(tmp_path):
    """notebooks/failure_log_to_recommendation.ipynb, small version (128 nodes, half a year, 20 jobs a candidate):
    from a raw operator's export to a recommendation, every step's output shown."""
    os.environ["SPARE_MC_EXAMPLE_SMALL"] = "1"
    try:
        text, images = _execute(FAILURE_LOG, "SPARE_MC_EXAMPLE_DIR", tmp_path)
    finally:
        del os.environ["SPARE_MC_EXAMPLE_SMALL"]
    assert (tmp_path / "tickets.csv").exists() and (tmp_path / "log.csv").exists()
    assert "(small version)" in text
    for counted in ("reordered", "duplicates", "duplicates_conflicting_repair"):
        assert re.search(rf"^  {counted} +[1-9]", text, re.MULTILINE), counted  # the export's mess, found and counted
    assert "resolution: 60 s" in text and "AIC - min" in text
    assert text.count("check") >= 3 and "p times" in text
    assert "repairs: the log's repair times" in text and "repairs: ignored" in text
    assert "best:" in text and "runner-up:" in text and "replay on the log's own events" in text
    assert "the log's events and repair times" in text and "notebook run time" in text
    assert images >= 1
