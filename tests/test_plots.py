"""Figures of any sweep spare-mc can write; what they are labelled with; the `plot` command's exits."""

import os

import matplotlib
import matplotlib.pyplot as plt
import numpy as np
import pytest
import xarray as xr

from spare_mc import plots
from spare_mc._lib.validation import UsageValueError
from spare_mc.cli import main
from spare_mc.sweep import SweepSpec, open_dataset, run_sweep

matplotlib.use("Agg")  # before any figure is made

WIPEOUT = '[sweep]\nname="{name}"\nquantity="wipeout"\nreps=30\nseed=3\n[grid]\n{grid}\n[fixed]\n{fixed}\n'
OVERHEAD = '[sweep]\nname="{name}"\nquantity="overhead"\nreps=8\nseed=3\n[grid]\n{grid}\n[fixed]\n{fixed}\n'
TTT = ('[sweep]\nname="{name}"\nquantity="ttt"\nreps=4\nseed=3\n[grid]\n{grid}\n[fixed]\n{fixed}\nn_steps=40\n'
       'jitter_sd=0.0\n')

#: name -> (template, grid, fixed): the shapes of sweep the QA report found unplottable, and the reproduce trio
SWEEPS = {
    "wipe_mtbf": (WIPEOUT, "mtbf_s = [100.0, 1000.0]", 'n_groups = 40\nr = 3\nfailure_model = "system"'),
    "wipe_failure_model": (WIPEOUT, 'n_groups = [30]\nr = [2, 4]\nfailure_model = ["uniform", "system"]', ""),
    "wipe_n_r": (WIPEOUT, "n_groups = [24, 40]\nr = [2, 3]", ""),
    "wipe_only_categorical": (WIPEOUT, 'layout = ["cyclic", "sidon"]', "n_groups = 30\nr = 3"),
    "over_n_r": (OVERHEAD, "n_groups = [24]\nr = [2, 3]", ""),
    "over_no_r": (OVERHEAD, 'n_groups = [24, 40]\nlayout = ["cyclic", "random"]', "r = 3"),
    "ttt_failure_model": (TTT, 'r = [2, 3]\nfailure_model = ["system", "per_gpu"]',
                          'strategy = "spare"\nn_groups = 24'),
    "ttt_shape": (TTT, "shape = [0.78]\nrestart_s = [600.0, 3600.0]", 'strategy = "spare"\nn_groups = 24\nr = 3'),
    "ttt_spare": (TTT, "n_groups = [24, 48]\nr = [2, 3, 4]", 'strategy = "spare"'),
    "ttt_rep": (TTT, "n_groups = [24, 48]\nr = [2, 3, 4]", 'strategy = "rep"'),
    "ttt_ckpt": (TTT, "n_groups = [24, 48]", 'strategy = "ckpt"\nr = 1'),
    "ttt_ckpt_half": (TTT, "n_groups = [24, 48]", 'strategy = "ckpt"\nr = 1\nckpt_period_factor = 0.5'),
}
#: sweeps plotted alone (one figure each)
ALONE = ["wipe_mtbf", "wipe_failure_model", "wipe_n_r", "wipe_only_categorical", "over_n_r", "over_no_r",
         "ttt_failure_model", "ttt_shape"]


@pytest.fixture(scope="module")
def sweeps(tmp_path_factory):
    """name -> path of a small stored sweep."""
    root = tmp_path_factory.mktemp("sweeps")
    out = {}
    for name, (template, grid, fixed) in SWEEPS.items():
        spec = SweepSpec.from_toml(template.format(name=name, grid=grid, fixed=fixed))
        out[name] = str(root / f"{name}.nc")
        run_sweep(spec, out[name], workers=0, progress=False)
    return out


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def _labels(ax):
    return ax.get_legend_handles_labels()[1]


def _all_labels(fig):
    return [lab for ax in fig.axes for lab in _labels(ax)]


# ------------------------------------------------------------------------------------- bug 1: the text output
def test_plot_command_prints_the_paths_and_exits_0(sweeps, tmp_path, capsys):
    """`spare-mc plot X.nc` (no --json) used to write the figure, then die formatting the paths as numbers."""
    assert main(["plot", sweeps["wipe_n_r"], "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    path = str(tmp_path / "wipe_n_r.png")
    assert path in out and "figures" in out
    assert os.path.getsize(path) > 5_000
    assert main(["plot", sweeps["wipe_n_r"], "--out", str(tmp_path), "--json"]) == 0
    assert '"figures": ["' in capsys.readouterr().out


# ------------------------------------------------------------------------------- bug 2: any sweep draws
@pytest.mark.parametrize("name", ALONE)
def test_every_shape_of_sweep_plots(sweeps, tmp_path, name, capsys):
    assert main(["plot", sweeps[name], "--out", str(tmp_path)]) == 0, capsys.readouterr().err
    written = os.listdir(tmp_path)
    assert len(written) == 1 and written[0].endswith(".png")
    assert os.path.getsize(tmp_path / written[0]) > 5_000
    paths = plots.save_figures({name: open_dataset(sweeps[name])}, tmp_path / "again")
    assert len(paths) == 1 and os.path.exists(paths[0])


def test_roles_follow_the_generic_rule(sweeps):
    roles = {name: plots.axes_roles(open_dataset(sweeps[name])) for name in ALONE}
    assert roles["wipe_mtbf"] == {**roles["wipe_mtbf"], "x": "mtbf_s", "line": None, "panels": []}
    assert roles["wipe_failure_model"] == {**roles["wipe_failure_model"], "x": "r", "line": "failure_model",
                                           "panels": ["n_groups"]}  # a length-1 dimension: one panel
    assert roles["wipe_n_r"] == {**roles["wipe_n_r"], "x": "r", "line": None, "panels": ["n_groups"]}
    assert roles["wipe_only_categorical"] == {**roles["wipe_only_categorical"], "x": "layout", "line": None,
                                              "panels": []}
    assert roles["over_no_r"] == {**roles["over_no_r"], "x": "n_groups", "line": "layout", "panels": []}
    # a dimension with more than one value is preferred on the x axis over a length-1 one
    assert roles["ttt_shape"] == {**roles["ttt_shape"], "x": "restart_s", "line": None, "panels": ["shape"]}


def test_one_line_per_category_and_exact_values_only_where_they_hold(sweeps):
    fig = plots.figure_masked(open_dataset(sweeps["wipe_failure_model"]))
    labels = _labels(fig.axes[0])
    assert {"uniform (MC)", "system (MC)", "uniform (exact)", "system (exact)"} <= set(labels)
    fig = plots.figure_ttt(open_dataset(sweeps["ttt_failure_model"]))
    assert {"system", "per_gpu"} <= set(_labels(fig.axes[0]))


def test_too_many_panels_are_capped_and_the_figure_says_so(tmp_path):
    spec = WIPEOUT.format(name="many", grid=f"n_groups = {list(range(10, 10 + plots.MAX_PANELS + 2))}\nr = [2, 3]",
                          fixed="").replace("reps=30", "reps=3")
    ds = run_sweep(SweepSpec.from_toml(spec), tmp_path / "many.nc", workers=0, progress=False)
    with pytest.warns(UserWarning, match="panels"):
        fig = plots.figure_masked(ds)
    assert sum(ax.has_data() for ax in fig.axes) == plots.MAX_PANELS
    assert f"first {plots.MAX_PANELS} of {plots.MAX_PANELS + 2} panels" in fig._suptitle.get_text()


def test_not_a_sweep_is_a_usage_error(tmp_path, capsys):
    path = tmp_path / "other.nc"
    xr.Dataset({"a": ("x", np.arange(3.0))}).to_netcdf(path, engine="scipy")
    assert main(["plot", str(path), "--out", str(tmp_path / "fig")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "not a spare-mc sweep dataset" in err[0] and str(path) in err[0]
    assert "quantity" in err[0]
    assert not (tmp_path / "fig").exists()  # checked before anything is written
    (tmp_path / "text.nc").write_text("not NetCDF\n")
    assert main(["plot", str(tmp_path / "text.nc"), "--out", str(tmp_path / "fig")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "not a spare-mc sweep dataset" in err[0]
    with pytest.raises(UsageValueError, match="not a spare-mc sweep dataset.*masked_mean"):
        plots.save_figures({"q": xr.Dataset(attrs={"quantity": "wipeout"})}, tmp_path / "fig")
    with pytest.raises(UsageValueError, match="non-empty"):
        plots.save_figures({}, tmp_path / "fig")


# ---------------------------------------------------------------------- bug 3: figures say what they show
def test_ttt_figure_states_the_checkpoint_period_of_its_spec(sweeps):
    trio = {n: open_dataset(sweeps[n]) for n in ("ttt_ckpt", "ttt_rep", "ttt_spare")}
    fig = plots.figure_ttt(trio)
    labels = _all_labels(fig)
    assert any(lab.startswith("CKPT-only (r = 1) at T_c = 1 × T_c* (theory period)") for lab in labels)
    assert "T_c = 1 × T_c* (theory period)" in fig._suptitle.get_text()
    assert "main table" in fig._suptitle.get_text()
    half = plots.plot_ttt([open_dataset(sweeps["ttt_ckpt_half"]), trio["ttt_spare"]], 24)
    assert any("at T_c = 0.5 × T_c* (theory period)" in str(a.get_label()) for a in half)


def test_best_r_panel_is_the_sweep_argmin_with_the_indistinguishable_r(sweeps):
    spare = open_dataset(sweeps["ttt_spare"])
    # means 3.0, 2.0, 2.1 with CIs [2.9, 3.1], [1.9, 2.1], [2.0, 2.2]: argmin r = 3, r = 4 overlaps it, r = 2 not
    for v, vals in (("mean", [3.0, 2.0, 2.1]), ("ci_low", [2.9, 1.9, 2.0]), ("ci_high", [3.1, 2.1, 2.2])):
        spare[f"ttt_over_t0_{v}"] = (("n_groups", "r"), np.array([vals, vals]))
    _, ax = plt.subplots()
    artists = plots.plot_optimal_r({"ttt_spare": spare}, ax=ax)
    labels = _labels(ax)
    assert "SPARe+CKPT: argmin over the sweep at T_c*" in labels
    assert "SPARe+CKPT: r whose 95% CI overlaps the argmin's" in labels
    line = next(a for a in artists if a.get_label() == "SPARe+CKPT: argmin over the sweep at T_c*")
    assert list(line.get_ydata()) == [3, 3]
    bar = next(a for a in artists if a.get_label() == "SPARe+CKPT: r whose 95% CI overlaps the argmin's")
    for seg in bar.get_segments():
        assert 2.5 < seg[:, 1].min() < 3 and 4 < seg[:, 1].max() < 4.5  # r = 3..4, not 2


def test_overhead_legend_and_axis_say_what_is_drawn(sweeps):
    _, ax = plt.subplots()
    plots.plot_overhead(open_dataset(sweeps["over_n_r"]), 24, ax=ax)
    labels = _labels(ax)
    assert "exact c(k) bound" in labels and "measured S*" in labels
    assert "mean stack number S per epoch" in ax.get_ylabel() and "units of T_comp" in ax.get_ylabel()
    assert "x compute" not in ax.get_ylabel()


def test_log_axes_print_plain_decimals(sweeps):
    from matplotlib.ticker import LogFormatterMathtext

    fig, ax = plt.subplots()
    plots.plot_ttt([open_dataset(sweeps[n]) for n in ("ttt_ckpt", "ttt_spare")], 24, ax=ax)
    assert ax.get_yscale() == "log"
    for fmt in (ax.yaxis.get_major_formatter(), ax.yaxis.get_minor_formatter()):
        assert not isinstance(fmt, LogFormatterMathtext)
    fig.canvas.draw()
    texts = [t.get_text() for t in ax.get_yticklabels() + ax.get_yticklabels(minor=True) if t.get_text()]
    assert texts and all("$" not in t and "times" not in t and "×" not in t for t in texts)
    assert all(float(t.replace("\u2212", "-")) > 0 for t in texts)


# --------------------------------------------------------------------------------- bug 4: the written rule
def test_the_figure_table_rule_is_written_down():
    doc = " ".join(plots.__doc__.split())
    assert "A figure and a table from the same run must show the same numbers, or the figure must label why" in doc


def test_reproduce_style_datasets_give_the_three_figures(sweeps, tmp_path):
    names = ["wipe_n_r", "over_n_r", "ttt_ckpt", "ttt_rep", "ttt_spare"]
    paths = plots.save_figures({n: open_dataset(sweeps[n]) for n in names}, tmp_path)
    assert sorted(os.path.basename(p) for p in paths) == ["over_n_r.png", "ttt.png", "wipe_n_r.png"]


def test_capped_points_variants_and_theory_are_those_of_the_sweep(tmp_path):
    """A QA pass: (1) a point where every run hit the cap was drawn as a value, labelled 'excluded from the mean'
    (capped runs enter at the cap: a lower bound) and ranked in the best-r panel; (2) a variant's parameters were
    ignored, so a random-holders variant got the cyclic exact values; (3) the theory marker left out options such
    as load_s, which move its best r."""
    import spare_mc as sm
    from spare_mc.ttt.config import TimelineConfig

    def sweep(name, text):
        spec = SweepSpec.from_toml(text)
        return run_sweep(spec, tmp_path / f"{name}.nc", workers=0, progress=False)

    capped = sweep("capped", TTT.format(name="capped", grid="r = [2, 3]",
                                        fixed='strategy = "spare"\nn_groups = 16\nmax_wall_factor = 1.5'))
    assert float(capped["finished_mean"].max()) == 0  # the premise: no run finished
    _, ax = plt.subplots()
    plots.plot_ttt(capped, ax=ax)
    assert [t.get_text() for t in ax.texts] == ["SPARe+CKPT: no finished run at r = 2, 3 (every run hit the "
                                                 "wall-clock cap 1.5 × T0)"]
    assert "runs capped (counted at the cap: the mean is a lower bound)" in _labels(ax)
    _, ax = plt.subplots()
    plots.plot_optimal_r(capped, ax=ax)
    assert [t.get_text() for t in ax.texts] == ["no finished runs to compare"]

    variants = sweep("variants", WIPEOUT.format(name="variants", grid="r = [2, 3]", fixed="n_groups = 20")
                     + '[variants.a]\nlayout = "cyclic"\n[variants.b]\nlayout = "random"\n')
    _, ax = plt.subplots()
    plots.plot_masked(variants, ax=ax)
    exact = {line.get_label(): list(line.get_ydata()) for line in ax.get_lines() if "(exact)" in line.get_label()}
    for name, layout in (("a", "cyclic"), ("b", "random")):
        assert exact[f"variant = {name} (exact)"] == pytest.approx(
            [sm.exact_wipeout(layout, 20, r).mean - 1 for r in (2, 3)])

    loaded = sweep("loaded", TTT.format(name="loaded", grid="r = [6, 7, 8, 9]",
                                        fixed='strategy = "spare"\nn_groups = 600\nload_s = 1800.0'))
    _, ax = plt.subplots()
    plots.plot_optimal_r(loaded, ax=ax)
    theory = next(line for line in ax.get_lines() if "theory J(r)" in line.get_label())
    best = min(range(6, 10), key=lambda r: sm.theory_ttt(TimelineConfig("spare", 600, r=r, n_steps=40,
                                                                        jitter_sd=0.0, load_s=1800.0)).ttt_over_t0)
    plain = min(range(6, 10), key=lambda r: sm.theory_ttt(TimelineConfig("spare", 600, r=r)).ttt_over_t0)
    assert list(theory.get_ydata()) == [best] and best != plain  # the load moves it (8 against 7)


def test_figures_go_into_a_folder_named_plainly(sweeps, tmp_path, capsys):
    """A QA pass: an existing file as --out was 'File exists' (exit 1), '' said only 'No such file or directory',
    --out fig.png made a folder named fig.png, and a dataset named '../x' wrote outside the folder."""
    ds = {"wipe_n_r": open_dataset(sweeps["wipe_n_r"])}
    (tmp_path / "afile").write_text("x")
    for out, match in ((tmp_path / "afile", r"is a file, not a folder"), ("", r"must be a folder path, got ''"),
                       (tmp_path / "fig.png", r"a figure's file name: give a folder")):
        with pytest.raises(UsageValueError, match=match):
            plots.save_figures(ds, out)
    assert not (tmp_path / "fig.png").exists()
    with pytest.raises(UsageValueError, match=r"it must be a plain name, got '../escape'"):
        plots.save_figures({"../escape": ds["wipe_n_r"]}, tmp_path / "figs")
    assert main(["plot", sweeps["wipe_n_r"], "--out", str(tmp_path / "afile")]) == 2
    assert "`--out`" in capsys.readouterr().err
