"""The phase map (spare_mc.analyses.phase, ``reproduce --table phase``): its settings and their errors, the cell's decision
rule on constructed inputs, the pairing of the six confirmation runs, the JSON rows, resuming, the figure and the
command line."""

import json

import numpy as np
import pytest

from spare_mc.analyses import phase as ph
from spare_mc.analyses.phase import PhaseStudy, checkpointing, cluster, decide, phase_rows, run_phase_study
from spare_mc.ttt.config import TimelineConfig
from spare_mc.ttt.run import simulate_ttt

#: A study small enough for a unit test (well under a second per cell).
TINY = dict(n_gpus=(16_384,), save_s=(1.0,), restart_s=(60.0,), kinds=("today", "modern"), n_steps=300, reps=2,
            confirm_reps=4, period_factors=(1.0,), rep_r_max=2, spare_r_max=3)


# ------------------------------------------------------------------------------------------------ the model
def test_cluster_scales_the_mtbf_with_the_gpus():
    assert cluster(600_000) == {"n_gpus": 600_000, "n_groups": 600, "mtbf_s": 300.0}
    c = cluster(16_384)
    assert c["n_groups"] == 16 and c["mtbf_s"] == pytest.approx(1.8e8 / 16_384)
    assert 3.0 < c["mtbf_s"] / 3600 < 3.1  # the Llama 3 405B report's one interruption per ~3 h
    assert cluster(100_000)["n_groups"] == 100


def test_checkpointing_kinds():
    assert checkpointing("today", 15, 600) == {"save_s": 15.0, "restart_s": 600.0}
    m = checkpointing("modern", 15, 600)
    assert m["memory_copies"] == 2 and m["remote_every"] == 5 and m["ckpt_async"] is True
    assert m["async_slowdown"] == 1.2
    assert m["memory_save_s"] == m["memory_load_s"] == 1.5
    assert m["load_s"] == 15.0 and m["restart_s"] == 585.0  # a restart from remote storage still costs T_r
    corner = checkpointing("modern", 60, 60)  # the load is at most half of T_r: a restart is never loading alone
    assert corner["load_s"] == 30.0 and corner["restart_s"] == 30.0
    with pytest.raises(ValueError, match="`kind` must be one of"):
        checkpointing("future", 1, 60)
    with pytest.raises(ValueError, match="`save_s` must be > 0"):
        checkpointing("today", 0, 60)


def test_modern_checkpointing_is_a_valid_timeline_setting_in_every_cell():
    """Every cell of the default grid gives every strategy a valid config, and a restart from remote storage costs
    today's T_r (restart + load)."""
    st = PhaseStudy()
    for g in st.n_gpus:
        n = st.n_groups(g)
        for save in st.save_s:
            for restart in st.restart_s:
                for strategy in ph.BASE_STRATEGIES:
                    r = st.r_range(strategy, g)[1]
                    cfg = TimelineConfig(strategy, n, r=r, **checkpointing("modern", save, restart))
                    assert cfg.restart + cfg.load_s == pytest.approx(restart)
                    assert cfg.memory_copies == 2 and cfg.ckpt_async


def test_r_ranges_per_cluster():
    st = PhaseStudy(kinds=("today",))
    assert st.r_range("ckpt", 16_384) == (1, 1)
    assert st.r_range("rep", 16_384) == (2, 4)
    assert [st.r_range("spare", g) for g in (16_384, 100_000, 600_000)] == [(2, 8), (2, 8), (2, 11)]
    assert PhaseStudy(kinds=("today",), spare_r_max=30).r_range("spare", 16_384) == (2, 16)  # at most N


@pytest.mark.parametrize("kw, match", [
    (dict(n_gpus=()), "`n_gpus` must not be empty"),
    (dict(n_gpus=(1000,)), "at least 2 groups"),
    (dict(n_gpus=(16_384, 16_384)), "`n_gpus` must not repeat"),
    (dict(n_gpus="16384"), "`n_gpus` must be a sequence"),
    (dict(save_s=(1.0, -5.0)), "`save_s` must be > 0"),
    (dict(save_s=()), "`save_s` must not be empty"),
    (dict(restart_s=(60.0, 60.0)), "`restart_s` must not repeat"),
    (dict(kinds=("today", "tomorrow")), "`kinds` must be one of"),
    (dict(kinds=()), "`kinds` must name each"),
    (dict(kinds="today"), "`kinds` must be a sequence"),
    (dict(reps=1), "`reps` must be >= 2"),
    (dict(confirm_reps=1), "`confirm_reps` must be >= 2"),
    (dict(period_factors=(0.0,)), "`period_factors` must be > 0"),
    (dict(rep_r_max=1), "`rep_r_max` must be >= 2"),
    (dict(spare_r_max=1), "`spare_r_max` must be >= 2"),
    (dict(max_wall_factor=1.0), "`max_wall_factor` must be > 1"),
    (dict(seed=-1), "`seed` must be >= 0"),
    (dict(gpus_per_group=0), "`gpus_per_group` must be >= 1"),
    (dict(per_gpu_mtbf_s=0.0), "`per_gpu_mtbf_s` must be > 0"),
])
def test_study_validation(kw, match):
    with pytest.raises(ValueError, match=match):
        PhaseStudy(**{"kinds": ("today",), **kw})


def test_modern_kind_needs_the_timeline_fields(monkeypatch):
    monkeypatch.setattr(ph, "modern_available", lambda: False)
    with pytest.raises(ValueError, match="`kinds` includes 'modern'"):
        PhaseStudy(kinds=("today", "modern"))
    assert PhaseStudy(kinds=("today",)).kinds == ("today",)


def test_study_is_frozen_and_quick_overrides():
    st = PhaseStudy.quick(kinds=("today",), reps=3)
    assert st.reps == 3 and st.n_gpus[0] == 16_384
    with pytest.raises(AttributeError):
        st.reps = 5
    assert isinstance(PhaseStudy(kinds=("today",), save_s=[1, 2]).save_s, tuple)  # cleaned to floats in a tuple
    assert PhaseStudy(kinds=("today",), save_s=[1, 2]).save_s == (1.0, 2.0)


def test_the_experiment_spec_states_the_defaults(tmp_path):
    import pathlib

    spec = pathlib.Path(__file__).resolve().parents[1] / "experiments" / "phase_map.toml"
    assert PhaseStudy.from_file(spec) == PhaseStudy()
    assert PhaseStudy.from_file(spec, quick=True) == PhaseStudy.quick()
    bad = tmp_path / "bad.toml"
    bad.write_text("[phase]\nn_gpu = [16384]\n")
    with pytest.raises(ValueError, match=r"unknown keys \['n_gpu'\] in \[phase\] of .* \(did you mean 'n_gpus'\?\)"):
        PhaseStudy.from_file(bad)
    bad.write_text("[main_table]\nreps = 3\n")
    with pytest.raises(ValueError, match="has no \\[phase\\] table"):
        PhaseStudy.from_file(bad)
    bad.write_text("[phase\n")
    with pytest.raises(ValueError, match="is not valid TOML"):
        PhaseStudy.from_file(bad)


# ---------------------------------------------------------------------------------------- the decision rule
def test_decide_winner_is_the_argmin_and_the_margin_is_paired():
    rng = np.random.default_rng(3)
    common = rng.normal(0, 1.0, 50)  # a large trace effect shared by every strategy: pairing removes it
    vals = {"ckpt": 3.0 + common, "rep": 2.5 + common + rng.normal(0, 0.01, 50),
            "spare": 2.0 + common + rng.normal(0, 0.01, 50)}
    d = decide(vals, {k: 0 for k in vals})
    assert d["winner"] == "spare" and d["runner_up"] == "rep" and d["significant"]
    assert d["margin"] == pytest.approx(np.mean(vals["rep"] - vals["spare"]))
    lo, hi = d["margin_ci95"]
    assert 0.49 < lo < d["margin"] < hi < 0.51  # unpaired, the interval would be about +-0.4
    assert d["margin_ratio"] == pytest.approx(1 - vals["spare"].mean() / vals["rep"].mean())
    assert set(d["margins"]) == {"ckpt", "rep"}


def test_decide_flags_a_margin_whose_interval_includes_zero():
    vals = {"a": [1.0, 1.2, 0.9, 1.1], "b": [1.05, 1.1, 1.0, 1.1]}
    d = decide(vals, {"a": 0, "b": 0})
    assert d["winner"] == "a" and not d["significant"]
    assert d["margin_ci95"][0] < 0 < d["margin_ci95"][1]


def test_decide_needs_every_comparison_significant():
    """The runner-up is clearly beaten, but a third strategy with a larger mean and a huge spread is not."""
    vals = {"a": [1.0, 1.0, 1.0, 1.0], "b": [1.5, 1.5, 1.6, 1.5], "c": [0.1, 0.2, 9.0, 9.0]}
    d = decide(vals, {k: 0 for k in vals})
    assert d["winner"] == "a" and d["runner_up"] == "b"
    assert d["margin_ci95"][0] > 0 and d["margins"]["c"]["margin_ci95"][0] < 0
    assert not d["significant"]


def test_decide_capped_never_wins():
    vals = {"ckpt": [5.0, 5.0, 5.0], "rep": [3.0, 3.1, 3.2], "spare": [2.0, 2.1, 2.2]}
    d = decide(vals, {"ckpt": 0, "rep": 0, "spare": 1})
    assert d["winner"] == "rep" and d["runner_up"] == "spare"  # the runner-up may be capped: the lesser mean
    assert "lower bound" in d["margin_note"]
    none = decide(vals, {"ckpt": 1, "rep": 2, "spare": 1})
    assert none["winner"] is None and not none["significant"] and "no winner" in none["margin_note"]


def test_decide_views_per_kind_and_across_strategies():
    """The six-way runner-up is the winner's own strategy with the other checkpointing; the strategy margin is
    against the best of another strategy, and each kind has its own winner."""
    n = 6
    base = np.linspace(0.0, 0.5, n)
    vals = {"ckpt": 3.0 + base, "rep": 2.4 + base, "spare": 2.10 + base,
            "ckpt_modern": 2.0 + base, "rep_modern": 2.3 + base, "spare_modern": 1.95 + base}
    capped = {k: 0 for k in vals}
    d = decide(vals, capped)
    assert d["winner"] == "spare_modern" and d["runner_up"] == "ckpt_modern"
    v = ph.decide_views(vals, capped, d["winner"])
    assert v["winner_strategy"] == "spare"
    assert v["strategy_margin"]["versus"] == "ckpt_modern"
    assert v["strategy_margin"]["margin"] == pytest.approx(0.05)
    assert v["by_kind"]["today"]["winner"] == "spare" and v["by_kind"]["today"]["runner_up"] == "rep"
    assert v["by_kind"]["modern"]["winner"] == "spare_modern"
    vals["spare"] = vals["spare_modern"] + 0.01  # now the six-way runner-up is spare (today)
    d = decide(vals, capped)
    assert d["runner_up"] == "spare"
    assert ph.decide_views(vals, capped, d["winner"])["strategy_margin"]["versus"] == "ckpt_modern"
    assert ph.decide_views(vals, capped, None)["winner_strategy"] is None


def test_decide_input_errors():
    with pytest.raises(ValueError, match="same number"):
        decide({"a": [1.0, 2.0], "b": [1.0, 2.0, 3.0]}, {"a": 0, "b": 0})
    with pytest.raises(ValueError, match="at least two strategies"):
        decide({"a": [1.0, 2.0]}, {"a": 0})
    with pytest.raises(ValueError, match="`capped` must give"):
        decide({"a": [1.0, 2.0], "b": [1.0, 2.0]}, {"a": 0})


# ------------------------------------------------------------------------------------------------ the study
def test_tiny_study_rows_schema_and_pairing():
    study = PhaseStudy(**TINY)
    res = run_phase_study(study)
    rows = phase_rows(res)
    assert len(rows) == 1
    row = rows[0]
    assert list(row)[:6] == ["n_gpus", "save_s", "restart_s", "winner", "ttt_over_t0", "ttt_over_t0_ci95"]
    assert set(row["ttt_over_t0"]) == set(row["ttt_over_t0_ci95"]) == set(ph.STRATEGY_KEYS)
    for k, v in row["ttt_over_t0"].items():
        lo, hi = row["ttt_over_t0_ci95"][k]
        assert lo <= v <= hi and v >= 1.0
    eligible = {k: v for k, v in row["ttt_over_t0"].items() if row["strategies"][k]["capped_fraction"] == 0}
    assert row["winner"] == min(eligible, key=eligible.get)
    assert isinstance(row["significant"], bool)
    assert row["winner_strategy"] == row["winner"].split("_")[0]
    assert set(row["by_kind"]) == {"today", "modern"}
    for kind, b in row["by_kind"].items():
        keys = [k for k in row["ttt_over_t0"] if k.endswith("_modern") == (kind == "modern")]
        assert b["winner"] == min(keys, key=row["ttt_over_t0"].get)
    json.dumps(res)  # the result is plain JSON
    # pairing: the six confirmation runs are replications reps .. reps + confirm_reps - 1 of one root ...
    s = row["strategies"]
    assert len({(v["rng_root"], v["first_rep"], v["confirm_reps"]) for v in s.values()}) == 1
    assert s["ckpt"]["first_rep"] == study.reps and s["ckpt"]["confirm_reps"] == study.confirm_reps
    # ... and each is exactly what simulate_ttt gives on those replications of the study's seed
    c = cluster(16_384)
    for k, v in s.items():
        strategy, _, modern = k.partition("_")
        cfg = TimelineConfig(strategy, c["n_groups"], r=v["best_r"], ckpt_period_s=v["ckpt_period_s"], n_steps=300,
                             mtbf_s=c["mtbf_s"], **checkpointing(modern or "today", 1.0, 60.0))
        again = simulate_ttt(cfg, study.confirm_reps, rng=study.seed, first_rep=study.reps)
        assert again.estimate("ttt_over_t0").mean == v["ttt_over_t0"]


def test_resume_reuses_only_matching_cells(tmp_path):
    msgs = []
    study = PhaseStudy(**TINY)
    first = run_phase_study(study, out_dir=tmp_path)
    again = run_phase_study(study, out_dir=tmp_path, progress=msgs.append)
    assert any("1 of 1 cells reused" in m for m in msgs)
    assert again["rows"] == first["rows"]
    msgs.clear()
    other = run_phase_study(PhaseStudy(**{**TINY, "seed": 1}), out_dir=tmp_path, progress=msgs.append)
    assert not any("reused" in m for m in msgs)
    assert other["rows"][0]["pairing"] != first["rows"][0]["pairing"]


def test_two_workers_give_the_same_rows(tmp_path):
    study = PhaseStudy(**{**TINY, "restart_s": (60.0, 3600.0)})
    one = run_phase_study(study)
    two = run_phase_study(study, workers=2)
    strip = [{k: v for k, v in r.items() if k != "elapsed_s"} for r in one["rows"]]
    assert strip == [{k: v for k, v in r.items() if k != "elapsed_s"} for r in two["rows"]]
    with pytest.raises(ValueError, match="`workers` must be >= 1"):
        run_phase_study(study, workers=0)


def test_figure_phase_marks_insignificant_and_empty_cells(tmp_path):
    from spare_mc.plots import figure_phase

    def row(g, s, r, winner, sig):
        return {"n_gpus": g, "save_s": s, "restart_s": r, "winner": winner, "significant": sig,
                "margin": None if winner is None else 0.1, "margin_ci95": None if winner is None else [-0.1, 0.3],
                "n_groups": g // 1000, "mtbf_s": 1.8e8 / g}
    res = {"rows": [row(16_384, 1.0, 60.0, "ckpt", True), row(16_384, 60.0, 60.0, "spare_modern", False),
                    row(600_000, 1.0, 60.0, None, False), row(600_000, 60.0, 60.0, "rep", True)]}
    path = figure_phase(res, tmp_path / "phase.png")
    assert (tmp_path / "phase.png").stat().st_size > 0 and path.endswith("phase.png")
    with pytest.raises(ValueError, match="no rows"):
        figure_phase({"rows": []})


# ------------------------------------------------------------------------------------------- command line
def test_reproduce_table_phase_cli(tmp_path, capsys, monkeypatch):
    from spare_mc.cli import main

    monkeypatch.setattr(PhaseStudy, "quick", classmethod(lambda cls, **kw: cls(**{**TINY, **kw})))
    assert main(["reproduce", "--table", "phase", "--quick", "--reps", "2", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["table"] == "phase" and len(out["rows"]) == 1
    assert {"n_gpus", "save_s", "restart_s", "winner", "ttt_over_t0", "ttt_over_t0_ci95"} <= set(out["rows"][0])
    assert main(["reproduce", "--table", "phase", "--quick", "--out-dir", str(tmp_path)]) == 0
    assert "winner" in capsys.readouterr().out
    assert (tmp_path / "phase.json").exists() and (tmp_path / "figures" / "phase.png").exists()
    assert len(list((tmp_path / "phase_cells").iterdir())) == 1


def test_reproduce_table_phase_reads_a_spec(tmp_path, capsys):
    from spare_mc.cli import main

    spec = tmp_path / "phase_map.toml"
    lines = [f"{k} = {json.dumps(list(v) if isinstance(v, tuple) else v)}" for k, v in TINY.items()]
    spec.write_text("[phase]\n" + "\n".join(lines) + "\n[phase.quick]\nconfirm_reps = 3\n")
    assert main(["reproduce", "--table", "phase", "--studies", str(tmp_path), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["settings"]["confirm_reps"] == 4 and out["rows"][0]["n_gpus"] == 16_384
    assert main(["reproduce", "--table", "phase", "--studies", str(spec), "--quick", "--seed", "3", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["settings"]["confirm_reps"] == 3 and out["settings"]["seed"] == 3
    assert main(["reproduce", "--table", "phase", "--studies", str(tmp_path / "none")]) == 2
    assert "`--studies` must be a phase-map spec" in capsys.readouterr().err


@pytest.mark.parametrize("argv, match", [
    (["--reps", "1"], "`--reps` must be >= 2"),
    (["--confirm-reps", "1"], "`--confirm-reps` must be >= 2"),
    (["--seed", "-1"], "`--seed` must be >= 0"),
    (["--workers", "0"], "`--workers` must be >= 1"),
    (["--preset", "paper-n600"], "`--preset` has no effect with --table phase"),
    (["--n-values", "600"], "`--n-values` has no effect with --table phase"),
    (["--scheduler", "tcp://x:1"], "`--scheduler` has no effect with --table phase"),
    (["--save-s", "30"], "`--save-s` has no effect with --table phase"),
    (["--failures", "per-gpu"], "`--failures` has no effect with --table phase"),
])
def test_reproduce_table_phase_flag_errors(argv, match, capsys):
    from spare_mc.cli import main

    assert main(["reproduce", "--table", "phase", "--quick", *argv]) == 2
    assert match in capsys.readouterr().err
