"""The checkpoint period per failure-domain level (spare_mc.analyses.domain_period): the screen, the choice of the best
period, the paired confirmation and its errors, on a small setting."""

from dataclasses import replace

import numpy as np
import pytest

from spare_mc.analyses.domain_period import run_domain_period_study
from spare_mc.analyses.domains import DomainStudy
from spare_mc.ttt.run import simulate_ttt

SMALL = DomainStudy(n_values=(200,), levels=("none", "pod"), spare_r={200: 8}, n_steps=600, seed=3,
                    mixed_n_values=(200,))


@pytest.fixture(scope="module")
def result():
    return run_domain_period_study(SMALL, period_factors=(0.5, 1.0, 2.0), screen_reps=4, confirm_reps=6)


def test_rows_layouts_and_the_best_screen_point(result):
    rows = result["rows"]
    assert [(r["level"], r["strategy"]) for r in rows] == [(lv, s) for lv in ("none", "pod", "all")
                                                          for s in ("ckpt", "rep", "spare")]
    layouts = {(r["level"], r["strategy"]): r["layout"] for r in rows}
    assert layouts[("none", "spare")] == "sidon" and layouts[("none", "rep")] == "block"
    assert layouts[("pod", "spare")] == "domain-aware" and layouts[("pod", "rep")] == "domain-aware"
    assert layouts[("all", "spare")] == "domain-aware" and layouts[("all", "rep")] == "domain-aware"
    for r in rows:
        screen = {float(k): v for k, v in r["screen"].items() if r["screen_capped"][k] == 0}
        if screen:
            assert r["best_factor"] == min(screen, key=screen.get)
        else:  # CKPT-only with every level at once: every point at the cap
            assert r["strategy"] == "ckpt" and r["best_factor"] == 1.0 and "gain_note" in r
            continue
        assert r["best_period_s"] == pytest.approx(r["best_factor"] * r["theory_period_s"])
        assert r["gain"] == pytest.approx(r["ttt_theory"] - r["ttt_best"])
        assert r["gain_ci95"][0] <= r["gain"] <= r["gain_ci95"][1]
        if r["best_factor"] == 1.0:
            assert r["gain"] == 0.0 and r["gain_ci95"] == [0.0, 0.0]


def test_screen_and_confirmation_are_the_jobs_of_simulate_ttt(result):
    """The screen at factor 1 is replications 0-3 of the row's config; the confirmation replications 4-9."""
    from spare_mc.analyses.domain_period import _layouts
    failures, topo = SMALL.failure_model("pod", 200)
    (_, _, _, cfg), = [x for x in _layouts(SMALL, 200, failures, topo, "pod") if x[0] == "spare"]
    row = next(r for r in result["rows"] if r["level"] == "pod" and r["strategy"] == "spare")
    assert row["screen"]["1"] == simulate_ttt(cfg, 4, rng=3).estimate("ttt_over_t0").mean
    confirm = simulate_ttt(cfg, 6, rng=3, first_rep=4).values("ttt_over_t0")
    assert row["ttt_theory"] == pytest.approx(float(np.mean(confirm)))


def _jobs_run(full, reps):
    """The jobs a point or arm runs when its chunks are 1, 2, 4, ... jobs and it stops after the chunk holding its
    first capped job: all ``reps`` if ``full`` (every job run) has none capped."""
    capped = [i for i, run in enumerate(full.runs) if run.status == "capped"]
    if not capped:
        return reps
    end, size = 0, 1
    while end <= capped[0]:
        end, size = end + size, size * 2
    return min(end, reps)


@pytest.mark.parametrize("reps, first_rep, capped_at, calls", [
    (6, 0, None, [(0, 1), (1, 2), (3, 3)]),
    (6, 0, 1, [(0, 1), (1, 2)]),
    (6, 0, 0, [(0, 1)]),
    (2, 0, None, [(0, 1), (1, 1)]),
    (100, 20, None, [(20, 1), (21, 2), (23, 4), (27, 8), (35, 16), (51, 32), (83, 37)]),
    (100, 20, 24, [(20, 1), (21, 2), (23, 4)]),  # replication 24 is in the chunk 23-26
    (100, 20, 44, [(20, 1), (21, 2), (23, 4), (27, 8), (35, 16)]),  # 44 in 35-50
])
def test_chunks_double_and_stop_after_the_one_holding_the_first_capped_job(monkeypatch, reps, first_rep, capped_at,
                                                                          calls):
    """`_jobs_until_capped`'s calls of simulate_ttt, with every job from replication `capped_at` on capped."""
    import types

    import spare_mc.analyses.domain_period as dp
    seen = []

    def fake(cfg, n, *, rng, first_rep):
        seen.append((first_rep, n))
        runs = tuple(types.SimpleNamespace(status="capped" if capped_at is not None and i >= capped_at else "ok")
                     for i in range(first_rep, first_rep + n))
        return types.SimpleNamespace(runs=runs, n_capped=sum(x.status == "capped" for x in runs), root_entropy="e")

    monkeypatch.setattr(dp, "simulate_ttt", fake)
    got = dp._jobs_until_capped(object(), reps, 3, first_rep)
    assert seen == calls
    assert got.reps == sum(n for _, n in calls) and got.first_rep == first_rep


def test_points_and_arms_stop_at_their_first_capped_job_and_nothing_else_changes(result):
    """Every row against every job run in full: the same screen points and arms hold a capped job, the uncapped
    ones give the same means, intervals and gains, and one with a capped job ran exactly up to the end of the chunk
    (1, 2, 4, ... jobs) that holds its first capped job, and reports no mean."""
    from spare_mc.analyses.domain_period import _layouts
    stopped = 0
    for level in ("none", "pod", "all"):
        failures, topo = SMALL.failure_model(level, 200)
        for strategy, _, _, cfg in _layouts(SMALL, 200, failures, topo, level):
            row = next(r for r in result["rows"] if r["level"] == level and r["strategy"] == strategy)
            for f in (0.5, 1.0, 2.0):
                full = simulate_ttt(replace(cfg, ckpt_period_factor=f), 4, rng=3)
                k, jobs = f"{f:g}", _jobs_run(full, 4)
                assert row["screen_jobs"][k] == jobs
                assert row["screen_capped"][k] == sum(run.status == "capped" for run in full.runs[:jobs]) / jobs
                if full.n_capped:
                    assert row["screen"][k] is None
                    stopped += jobs < 4
                else:
                    assert row["screen"][k] == full.estimate("ttt_over_t0").mean
            arms = {}
            for f, name in ((1.0, "theory"), (row["best_factor"], "best")):
                full = simulate_ttt(replace(cfg, ckpt_period_factor=f), 6, rng=3, first_rep=4)
                arms[name] = full
                assert row[f"{name}_jobs"] == _jobs_run(full, 6)
                if full.n_capped:
                    assert row[f"ttt_{name}"] is None and row[f"ttt_{name}_ci95"] is None
                    stopped += row[f"{name}_jobs"] < 6
                else:
                    est = full.estimate("ttt_over_t0")
                    assert row[f"ttt_{name}"] == est.mean and row[f"ttt_{name}_ci95"] == list(est.ci)
            if arms["theory"].n_capped or arms["best"].n_capped:
                assert row["gain_note"] == "not compared: capped jobs" and "gain" not in row
            else:
                d = arms["theory"].values("ttt_over_t0") - arms["best"].values("ttt_over_t0")
                assert row["gain"] == pytest.approx(float(d.mean()), rel=1e-12, abs=1e-12)
    assert stopped  # the setting has points and arms that stopped early
    assert result["settings"]["jobs_stop_at_first_capped"] is True  # capped fractions are of the jobs run


def test_the_table_shows_an_arm_with_a_capped_job_as_capped(result, capsys):
    from spare_mc.cli.format import domain_period_table
    domain_period_table(result)
    out = capsys.readouterr().out
    row = next(r for r in result["rows"] if r["level"] == "all" and r["strategy"] == "ckpt")
    assert row["ttt_theory"] is None  # CKPT-only with every level at once: its first job reaches the cap
    line = next(x for x in out.splitlines() if x.split()[1:3] == ["all", "ckpt"])
    assert line.split()[7:9] == ["capped", "capped"] and "not compared: capped jobs" in line


@pytest.mark.parametrize("kw, match", [
    (dict(period_factors=(0.5, 2.0)), "must be positive, distinct and contain 1"),
    (dict(period_factors=(0.0, 1.0)), "must be positive, distinct and contain 1"),
    (dict(period_factors=(1.0, 1.0)), "must be positive, distinct and contain 1"),
    (dict(period_factors="12"), "must be a sequence of numbers"),
    (dict(screen_reps=1), "`screen_reps` must be >= 2"),
])
def test_bad_settings(kw, match):
    with pytest.raises((ValueError, TypeError), match=match):
        run_domain_period_study(SMALL, **kw)


def test_one_n_only_and_a_domain_study():
    with pytest.raises(ValueError, match="must hold one N"):
        run_domain_period_study(DomainStudy(n_values=(200, 600)))
    with pytest.raises(TypeError, match="`study` must be a DomainStudy"):
        run_domain_period_study({"n_values": (600,)})


def test_docs_table_is_the_shipped_result():
    """docs/domains.md's period table quotes docs/results/domain_period.json (rounded to 3 decimals)."""
    import json
    from pathlib import Path
    root = Path(__file__).resolve().parent.parent
    rows = json.loads((root / "docs/results/domain_period.json").read_text())["rows"]
    text = (root / "docs/domains.md").read_text()
    for r in rows:
        if r["strategy"] == "ckpt":
            continue
        assert f"{r['ttt_theory']:.3f} → {r['ttt_best']:.3f}" in text, r
        if r["best_factor"] != 1.0:
            lo, hi = (f"{x:+.3f}".replace("-", "−") for x in r["gain_ci95"])
            assert f"{r['gain']:+.3f}".replace("-", "−") + f" [{lo}, {hi}]" in text.replace("**", ""), r


def test_reproduce_table_domain_period_cli(tmp_path, capsys):
    import json

    from spare_mc.cli import main
    assert main(["reproduce", "--table", "domain-period", "--quick", "--reps", "3", "--confirm-reps", "4",
                 "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["table"] == "domain-period" and out["settings"]["screen_reps"] == 3
    assert [(r["level"], r["strategy"]) for r in out["rows"]] == [(lv, s) for lv in ("none", "rack")
                                                                 for s in ("ckpt", "rep", "spare")]
    assert main(["reproduce", "--table", "domain-period", "--quick", "--reps", "3", "--confirm-reps", "4",
                 "--out-dir", str(tmp_path)]) == 0
    assert "gain = TTT/T0 at the theory period" in capsys.readouterr().out
    assert json.loads((tmp_path / "domain_period.json").read_text())["rows"]
    for argv, match in ((["--n-values", "200,600"], "must be one N among"), (["--n-values", "300"], "must be one N"),
                        (["--workers", "2"], "`--workers` has no effect"), (["--reps", "1"], "`--reps` must be >= 2"),
                        (["--failures", "rack"], "have no effect with --table domain-period")):
        assert main(["reproduce", "--table", "domain-period", "--quick", *argv]) == 2
        assert match in capsys.readouterr().err
