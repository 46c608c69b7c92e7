"""The Llama 3 405B cluster preset: its numbers from the report's facts, its effective training time against Daly's
exact expected wall time, its calibration (interruptions per 54 days), edge effects of the job length, and the
rules of its entry points."""

import json
import math
import re

import numpy as np
import pytest
from conftest import ALPHA
from scipy import stats

from spare_mc import UsageTypeError, UsageValueError, set_options
from spare_mc.analyses.clusters import (LLAMA3_ROOT_CAUSES, REPORTED_EFFECTIVE, ClusterPreset, effective_training_time,
                                        llama3_405b, llama3_study, report_verdict)
from spare_mc.cli import main
from spare_mc.stats import MCEstimate, compare
from spare_mc.ttt.theory import classical_expected_ttt_s, is_classical

# the report's facts, typed in again here (not read from the module)
GPUS, DAYS, UNEXPECTED, PLANNED = 16_384, 54, 419, 47
TP, CP, PP, DP = 8, 1, 16, 128


# ------------------------------------------------------------------------------------------- the derived numbers
def test_rates_follow_from_the_facts():
    p = llama3_405b()
    hours = DAYS * 24
    assert (p.n_gpus, p.interruptions, p.planned_interruptions) == (GPUS, UNEXPECTED, PLANNED)
    assert p.snapshot_h == hours
    assert p.system_mtbf_s == pytest.approx(hours * 3600 / UNEXPECTED, rel=1e-12)
    assert p.gpu_mtbf_h == pytest.approx(GPUS * hours / UNEXPECTED, rel=1e-12)
    assert 3.0 < p.system_mtbf_s / 3600 < 3.2  # the report's "one every 3 hours"
    assert p.gpu_mtbf_h == pytest.approx(p.system_mtbf_s / 3600 * GPUS, rel=1e-12)  # exponential: rates add up
    assert p.n_groups == GPUS // (TP * CP * PP) == DP and p.gpus_per_group == TP * CP * PP
    # 6 N D / (GPUs x 400 TFLOP/s) with 16 sequences of 8,192 tokens per data-parallel group
    assert p.step_s == pytest.approx(6 * 405e9 * 16 * DP * 8192 / (GPUS * 400e12), rel=1e-12)
    assert abs(p.t0_s - 0.9 * DAYS * 86400) <= p.step_s / 2  # T0 = 0.9 x 54 days, to a step
    assert p.loss_budget_s(0.9) == pytest.approx(0.1 * DAYS * 86400 / UNEXPECTED, rel=1e-12)


def test_root_causes_add_up_to_the_unexpected_interruptions():
    """Table 5's counts sum to 419 and its shares are count / 419, except "Faulty GPU" (printed 30.1%, 148 / 419 =
    35.3%); the report's GPU total of 58.7% (domain_rates' per-GPU events) adds the printed GPU shares."""
    from spare_mc.model.domain_rates import DOMAIN_RATES

    assert sum(c.count for c in LLAMA3_ROOT_CAUSES) == UNEXPECTED
    off = [c.cause for c in LLAMA3_ROOT_CAUSES if abs(100 * c.count / UNEXPECTED - c.percent) > 0.051]
    assert off == ["Faulty GPU"]
    gpu = sum(c.percent for c in LLAMA3_ROOT_CAUSES if c.cause.startswith("GPU") or c.cause in
              ("Faulty GPU", "Silent data corruption"))
    assert gpu == pytest.approx(58.7, abs=1e-9)
    assert DOMAIN_RATES["gpu"].events == round(gpu / 100 * UNEXPECTED)


def test_timeline_config_is_the_preset():
    p = llama3_405b()
    cfg = p.timeline_config()
    assert (cfg.strategy, cfg.n_groups, cfg.n_steps) == ("ckpt", p.n_groups, p.n_steps)
    assert (cfg.mtbf_s, cfg.shape, cfg.restart_s, cfg.save_s) == (p.system_mtbf_s, 1.0, 600.0, 60.0)
    assert cfg.t0_s == pytest.approx(p.t0_s, rel=1e-12) and cfg.jitter_sd == 0.0 and cfg.allreduce == 0.0
    assert p.timeline_config(save_s=10.0).save_s == 10.0
    assert p.timeline_config("spare", r=4).r == 4 and p.timeline_config("rep", r=2).strategy == "rep"
    assert p.replace(shape=0.78).timeline_config().shape == 0.78
    d = p.to_dict()
    assert d["assumptions"]["restart_s"].startswith("600 s") and d["gpu_mtbf_h"] == p.gpu_mtbf_h
    json.dumps(d)


# -------------------------------------------------------------------------------------------- the estimates
def test_effective_time_matches_dalys_exact_value():
    """Under the classical rules (failures detected at once, a checkpoint after the last segment) the preset's
    job has Daly's exact expected wall time E[T_w] (exponential failures): the simulated effective time
    sum(useful) / sum(TTT) estimates T0 / E[T_w]; they must agree at alpha = 1e-4 by the estimate's own error."""
    p = llama3_405b()
    res = effective_training_time(p, reps=150, rng=11, detection="immediate", final_checkpoint=True,
                                  ckpt_failure="completes")
    assert is_classical(res.config)
    exact = res.config.n_steps * res.config.compute_s / classical_expected_ttt_s(res.config)
    c = compare(res.effective, exact, alpha=ALPHA)
    assert c.consistent, c
    assert res.effective.se < 0.002  # the test has power: a 1 pp error would fail it


def test_shares_add_up_and_calibration_holds():
    """Effective time + restart + lost + checkpoint shares = 1 (CKPT-only: nothing else is booked); the simulated
    interruption rate per 54 days of wall clock is the report's 419 (Poisson: the ratio estimate's own error);
    the first-order availability model is within a percentage point."""
    res = effective_training_time(reps=120, rng=3)
    total = res.effective.mean + sum(s.mean for s in res.shares.values())
    assert total == pytest.approx(1.0, abs=1e-12)
    assert res.running.mean == pytest.approx(res.effective.mean + res.shares["lost"].mean, abs=1e-12)
    assert compare(res.interruptions_per_snapshot, UNEXPECTED, alpha=ALPHA).consistent
    assert abs(res.first_order - res.effective.mean) < 0.01
    assert res.n_capped == 0 and res.reps == 120
    d = res.to_dict()
    assert d["verdict"] == report_verdict(res.effective) and len(d["effective"]["ci95"]) == 2


def test_job_length_matters_only_through_edge_effects():
    """Half and twice the job length give the same effective time within the two estimates' errors."""
    p = llama3_405b()
    base = effective_training_time(p, reps=100, rng=5).effective
    for factor in (0.5, 2.0):
        other = effective_training_time(p.replace(n_steps=round(factor * p.n_steps)), reps=100, rng=105).effective
        z = (other.mean - base.mean) / math.hypot(other.se, base.se)
        assert 2 * stats.norm.sf(abs(z)) >= ALPHA, (factor, other, base)


def test_assumptions_move_the_estimate_the_right_way():
    """Longer saves and longer restarts cost effective time (common random numbers: the same traces)."""
    p = llama3_405b()
    values = {(s, r): effective_training_time(p.replace(save_s=s, restart_s=r), reps=20, rng=7).effective.mean
              for s in (10.0, 300.0) for r in (300.0, 1800.0)}
    assert values[10.0, 300.0] > values[10.0, 1800.0] > values[300.0, 1800.0]
    assert values[10.0, 300.0] > values[300.0, 300.0] > values[300.0, 1800.0]


def test_report_verdict():
    def est(mean, se):
        return MCEstimate("e", mean, se, se * 10, 100, support="unit")

    assert report_verdict(est(0.95, 0.001)) == "agrees"
    assert report_verdict(est(0.85, 0.001)) == "disagrees"
    assert report_verdict(est(REPORTED_EFFECTIVE, 0.001)) == "inconclusive"
    with pytest.raises(UsageTypeError, match="`effective` must be an MCEstimate"):
        report_verdict(0.9)


# ------------------------------------------------------------------------------------------------- the rules
@pytest.mark.parametrize("kw, exc, match", [
    ({"n_groups": 100}, UsageValueError, "`n_groups` must divide `n_gpus`"),
    ({"restart_s": 0.0}, UsageValueError, "`restart_s` must be > 0"),
    ({"save_s": -1.0}, UsageValueError, "`save_s` must be > 0"),
    ({"interruptions": 0}, UsageValueError, "`interruptions` must be >= 1"),
    ({"n_steps": 1.5}, UsageTypeError, "`n_steps` must be an integer"),
    ({"shape": float("nan")}, UsageValueError, "`shape` must be finite"),
    ({"assumptions": ("restart",)}, UsageTypeError, "`assumptions` must be a tuple"),
    ({"source": ""}, UsageTypeError, "`source` must be a non-empty string"),
])
def test_bad_preset_values_name_the_field(kw, exc, match):
    with pytest.raises(exc, match=match):
        llama3_405b().replace(**kw)


def test_bad_effective_time_arguments():
    with pytest.raises(UsageValueError, match="`reps` must be >= 2"):
        effective_training_time(reps=1)
    with pytest.raises(UsageTypeError, match="`preset` must be a ClusterPreset"):
        effective_training_time("llama3", reps=2)
    with pytest.raises(UsageValueError, match="`strategy` cannot be overridden"):
        effective_training_time(reps=2, strategy="spare")
    with pytest.raises(UsageValueError, match="`save_s` must be > 0"):
        effective_training_time(reps=2, save_s=0.0)
    with pytest.raises(UsageValueError, match="`save_values` must be > 0"):
        llama3_study(reps=2, save_values=(0.0,))
    with pytest.raises(UsageTypeError, match="`shapes` must be a sequence of numbers"):
        llama3_study(reps=2, shapes=0.78)
    with pytest.raises(UsageValueError, match="`reps` must be >= 2"):
        llama3_study(reps=1)
    assert isinstance(llama3_405b(), ClusterPreset)
    # a misspelt field was Python's plain TypeError from TimelineConfig or dataclasses.replace
    with pytest.raises(UsageValueError, match=r"unknown fields \['foo'\] in the TimelineConfig overrides"):
        effective_training_time(reps=2, foo=1)
    with pytest.raises(UsageValueError, match=r"unknown fields \['shap'\] in ClusterPreset.replace \(did you mean "
                                              r"'shape'\?\)"):
        llama3_405b().replace(shap=1.0)
    with pytest.raises(UsageValueError, match=r"`n_groups` is not an override"):
        llama3_405b().timeline_config("ckpt", n_groups=3)


# ------------------------------------------------------------------------------------------------ the command
def test_cli_table_llama3(tmp_path, capsys):
    assert main(["reproduce", "--table", "llama3", "--reps", "8", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["table"] == "llama3" and out["settings"]["reps"] == 8
    c = out["central"]
    assert c["effective"]["ci95"][0] <= c["effective"]["mean"] <= c["effective"]["ci95"][1]
    assert len(out["grid"]) == 9 and {r["shape"] for r in out["shapes"]} == {0.78}
    assert out["reported"]["effective"] == REPORTED_EFFECTIVE and "classical" in out
    assert main(["reproduce", "--table", "llama3", "--reps", "4", "--out-dir", str(tmp_path)]) == 0
    printed = capsys.readouterr().out
    assert "effective training time" in printed and (tmp_path / "llama3.json").exists()
    assert json.loads((tmp_path / "llama3.json").read_text())["central"]["reps"] == 4


@pytest.mark.parametrize("argv, match", [
    (["--reps", "1"], "`--reps` must be >= 2"),
    (["--seed", "-1"], "`--seed` must be >= 0"),
    (["--n-values", "200"], "`--n-values` has no effect with --table llama3"),
    (["--preset", "paper-n600"], "`--preset` has no effect with --table llama3"),
    (["--restart-s", "300"], "--restart-s.* no effect with --table llama3"),
    (["--failures", "rack"], "no effect with --table llama3"),
])
def test_cli_table_llama3_refuses_flags_it_ignores(argv, match, capsys):
    assert main(["reproduce", "--table", "llama3", *argv]) == 2
    err = capsys.readouterr().err
    assert err.startswith("spare-mc: error: ") and err.count("\n") == 1 and re.search(match, err), err


def test_modern_checkpointing_row_beats_the_blocking_saves_on_the_same_traces():
    """The study's "modern" row (in-memory copies, background remote saves, the restart split) runs the central
    preset on the same failure traces: its effective training time is higher, far beyond the sampling error, and it
    states the settings it used."""
    from spare_mc.analyses.clusters import _modern_row, effective_training_time, llama3_405b

    preset = llama3_405b()
    base = effective_training_time(preset, reps=12, rng=3)
    row = _modern_row(preset, 12, 3, lambda msg: None)
    gap = row["effective"]["mean"] - base.effective.mean
    assert gap > 5 * (row["effective"]["se"] ** 2 + base.effective.se ** 2) ** 0.5
    assert row["checkpointing"]["memory_copies"] == 2 and row["checkpointing"]["ckpt_async"] is True
    assert "first_order" not in row


def test_the_study_runs_its_rows_in_rounds_with_the_runs_of_one_call_per_row(monkeypatch):
    """llama3_study runs replications in rounds, every row in turn (so that a round's failure traces stay cached
    for all rows): each row's jobs are exactly those of one effective_training_time call, and its estimate too."""
    from spare_mc.analyses import clusters

    monkeypatch.setattr(clusters, "_ROUND_REPS", 3)  # 7 replications: rounds of 3, 3 and 1
    preset = llama3_405b().replace(n_steps=llama3_405b().n_steps // 20)  # a short job: fewer events
    rows = [(preset, {}), (preset.replace(save_s=10.0), {}), (preset.replace(shape=0.78), {}),
            (preset, {"detection": "immediate", "final_checkpoint": True, "ckpt_failure": "completes"})]
    lines = []
    done = clusters._rows_in_rounds(rows, 7, np.random.SeedSequence(5), lines.append)
    assert lines == [f"replications {a}-{b} of 4 rows" for a, b in ((0, 2), (3, 5), (6, 6))]
    for (p, kw), got in zip(rows, done):
        one = effective_training_time(p, reps=7, rng=5, **kw)
        assert got.to_dict().keys() == one.to_dict().keys()
        a, b = got.to_dict(), one.to_dict()
        a.pop("elapsed_s"), b.pop("elapsed_s")
        assert a == b


def test_the_study_shares_one_root_seed_across_its_rows_whatever_rng_is():
    """Every row runs on the same replication seeds (common random numbers), also for a Generator, which used to
    be advanced by each row, and its results are those of the root drawn from it; too many replications for the
    rows' results kept in memory are refused before any work."""
    d = llama3_study(reps=2, rng=np.random.default_rng(7), save_values=(60.0,), restart_values=(600.0,),
                     shapes=(0.78,), t0_factors=(2.0,))
    roots = {d["central"]["rng_root"], d["modern"]["rng_root"], d["grid"][0]["rng_root"],
             d["shapes"][0]["rng_root"], d["t0"][0]["rng_root"], d["settings"]["rng_root"]}
    assert len(roots) == 1
    # the central row and the identical grid row (save 60 s, restart 600 s) ran the same jobs
    assert d["grid"][0]["effective"] == d["central"]["effective"]
    # 6 rows of 300 jobs kept (3.7 MB) do not fit a 1-MB budget, though one round's 256 jobs (0.5 MB) would
    with set_options(max_memory=2**20), pytest.raises(UsageValueError, match=r"the results of 6 rows of 300 "
                                                                               r"time-to-train jobs"):
        llama3_study(reps=300, save_values=(60.0,), restart_values=(600.0,), shapes=(0.78,), t0_factors=(2.0,))
