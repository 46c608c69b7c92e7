"""The command line's output: one formatter per command, printing its handler's result as text (``--json``:
:func:`print_json`, one JSON object), and :func:`say`, a line on stderr.
"""

from __future__ import annotations

import json
import sys
from typing import NamedTuple

from .._lib.provenance import json_safe
from ..analyses.calibrate import rejection_note
from ..analyses.phase import KINDS, STRATEGY_KEYS
from ..model.strategies import STRATEGIES
from ..sweep.storage import json_default

__all__ = ["Report", "say", "print_json", "key_values", "compare", "reproduce", "main_table", "domains_table",
           "domain_period_table", "phase_table", "llama3_table", "variants", "sensitivity", "calibrate", "study",
           "log_check", "log_fit", "log_replay", "flag_args", "overhead", "MEANINGS"]


class Report(NamedTuple):
    """A study command's output: ``data``, what ``--json`` prints (the result's dict and the paths written), and
    ``result``, the study's result object, whose ``table()`` the text output shows."""

    data: dict
    result: object


def say(message: str) -> None:
    """A line on stderr that never raises (stderr may be a closed pipe)."""
    try:
        print(message, file=sys.stderr, flush=True)
    except (OSError, ValueError):
        pass


def print_json(out) -> None:
    """``--json``: the output as one line of strict JSON (NaN and infinities as null)."""
    data = out.data if isinstance(out, Report) else out
    print(json.dumps(json_safe(data), default=json_default, allow_nan=False))


def key_values(d: dict) -> None:
    """One line per key (``mu``, ``overhead``, ``ttt``, ``sweep``, ``plot``): numbers to 6 significant digits; a
    table of named entries (``ttt --model classical``'s ``optimum``) one line per entry, ``key.name``."""
    def show(v):
        if isinstance(v, float):
            return f"{v:.6g}"
        if isinstance(v, list) and all(isinstance(x, (int, float)) for x in v):
            return "[" + ", ".join(f"{x:.6g}" for x in v) + "]"
        return v

    lines = []
    for k, v in d.items():
        if k in ("software", "schema_version"):
            continue
        if k == "theory" and isinstance(v, dict) and "applies" in v:  # ttt: the numbers, then whether they apply
            numbers = ", ".join(f"{a}={show(b)}" for a, b in v.items() if a not in ("applies", "why", "assumptions"))
            if numbers:  # (a cluster in service, ttt --failures unit, has no closed form: only why)
                lines.append((k, numbers))
            lines.append(("theory.applies", "yes" if v["applies"] else f"no: {v['why']}"))
            if "assumptions" in v:
                lines.append(("theory.assumes", v["assumptions"]))
            continue
        if isinstance(v, dict) and v and all(isinstance(x, dict) for x in v.values()):
            lines += [(f"{k}.{name}", ", ".join(f"{a}={show(b)}" for a, b in x.items())) for name, x in v.items()]
        else:
            lines.append((k, show(v)))
    width = max(len(k) for k, _ in lines)
    for k, v in lines:
        print(f"{k:<{width}}  {v}")


#: What ``compare`` estimates, per row quantity (the figures of a wipe-out sweep show T - 1, the masked failures).
_COMPARED = {"T": "mean T, the failures up to and including the wipe-out (figures and tables show the masked "
                  "failures, T - 1); 95% CI symmetric, as the test uses",
             "ttt_over_t0": "mean TTT/T0 over the finished runs; 95% CI symmetric, as the test uses"}


def compare(d: dict) -> None:
    """``compare``: every grid point against its exact value."""
    for q in sorted({r["quantity"] for r in d["rows"]}):
        print(f"estimate: {_COMPARED.get(q, q)}")
    print(f"{'grid point':<44} {'estimate':>10} {'95% CI':>22} {'exact':>10} {'rel err':>9} {'p (Holm)':>9}  ok")
    for r in d["rows"]:
        pt = ", ".join(f"{k}={v}" for k, v in r["point"].items())
        est = "" if r["estimate"] is None else f"{r['estimate']:.4f}"
        ci = "" if r["ci95"] is None else f"[{r['ci95'][0]:.4f}, {r['ci95'][1]:.4f}]"
        ref = "-" if r["reference"] is None else f"{r['reference']:.4f}"
        rel = f"{r['rel_error']:+.2e}" if "rel_error" in r else ""
        ph = f"{r['p_holm']:.3g}" if "p_holm" in r else ""
        ok = {True: "yes", False: "NO"}.get(r.get("consistent"), "")
        print(f"{pt:<44} {est:>10} {ci:>22} {ref:>10} {rel:>9} {ph:>9}  {ok}")
    reasons = sorted({r["reason"] for r in d["rows"] if "reason" in r})
    for why in reasons:
        print(f"not compared ({sum(r.get('reason') == why for r in d['rows'])} points): {why}")
    print(f"{d['consistent']}/{d['tested']} grid points consistent with the exact value at family-wise "
          f"alpha={d['alpha']}")


def main_table(d: dict) -> None:
    """The main table (``reproduce --table main``; the end of a full ``reproduce``)."""
    print(f"{'N':>6} {'strategy':>9} {'best r':>6} {'T_c (s)':>9} {'TTT/T0':>24} {'availability':>24}")
    for row in d["rows"]:
        for s in STRATEGIES:
            x = row[s]
            lo, hi = x["ttt_over_t0_ci95"]
            alo, ahi = x["availability_ci95"]
            flag = " (capped runs: restricted mean)" if x["capped_fraction"] > 0 else ""
            print(f"{row['n_groups']:>6} {s:>9} {x['best_r']:>6} {x['ckpt_period_s']:>9.0f} "
                  f"{x['ttt_over_t0']:>8.3f} [{lo:.3f}, {hi:.3f}] {x['availability']:>8.4f} [{alo:.4f}, {ahi:.4f}]"
                  f"{flag}")
        lo, hi = row["ttt_reduction_ci95"]
        print(f"{row['n_groups']:>6} SPARe+CKPT vs Rep+CKPT: TTT reduction {row['ttt_reduction']:.3f} "
              f"[{lo:.3f}, {hi:.3f}]")
    pre = d.get("settings", {}).get("preset")
    if pre:
        rejected = pre.get("accepted") is False or bool(pre.get("rejected"))
        kind = ("FITTED" if pre["fitted"] else "stated") + (", REJECTED" if rejected else "")
        print(f"preset {pre['name']} ({kind}): " + ", ".join(f"{k}={v}" for k, v in pre["overrides"].items()))
        if rejected:
            print(f"preset {pre['name']} is a REJECTED fit: {rejection_note(pre.get('rejected') or [])}")
    p = d["paper_N600"]
    if not any(row["n_groups"] == 600 for row in d["rows"]):
        return  # the paper's row is compared with ours at N = 600 only
    print(f"paper, N=600: Rep+CKPT {p['rep']['ttt_over_t0']} / {p['rep']['availability']:.2%} (r={p['rep']['best_r']}),"
          f" SPARe+CKPT {p['spare']['ttt_over_t0']} / {p['spare']['availability']:.2%} (r={p['spare']['best_r']}),"
          f" reduction {p['ttt_reduction']:.1%}")


def domains_table(d: dict) -> None:
    """``reproduce --table domains``."""
    print(f"{'N':>5} {'level':6} {'strategy':8} {'layout':19} {'r':>3} {'masked':>8} {'95% CI':>17} "
          f"{'TTT/T0':>7} {'95% CI':>17} {'vs domain-aware':>16} {'95% CI':>17}")
    for r in d["rows"]:
        head = f"{r['n_groups']:>5} {r['level']:6} {r['strategy']:8} {r['layout']:19} {r['r']:>3}"
        if "error" in r:
            print(f"{head} not built: {r['error']}")
            continue
        line = (f"{head} {r['masked_mean']:8.2f} [{r['masked_ci95'][0]:7.2f}, {r['masked_ci95'][1]:7.2f}] "
                f"{r['ttt_over_t0']:7.3f} [{r['ttt_over_t0_ci95'][0]:6.3f}, {r['ttt_over_t0_ci95'][1]:6.3f}]")
        if "ttt_vs_domain_aware" in r:
            lo, hi = r["ttt_vs_domain_aware_ci95"]
            line += f" {r['ttt_vs_domain_aware']:+16.3f} [{lo:+6.3f}, {hi:+6.3f}]"
        print(line)
    if "result" in d:
        print(f"result: {d['result']}; figure: {d['figure']}")
    print(f"({d['elapsed_s']:.0f} s)")


def domain_period_table(d: dict) -> None:
    """``reproduce --table domain-period``."""
    print(f"{'N':>5} {'level':6} {'strategy':8} {'layout':13} {'theory period':>13} {'best':>5} "
          f"{'TTT/T0 theory':>14} {'best':>7} {'gain':>7} {'95% CI':>17}")
    for r in d["rows"]:
        gain = (f"{r['gain']:+7.3f} [{r['gain_ci95'][0]:+6.3f}, {r['gain_ci95'][1]:+6.3f}]" if "gain" in r
                else r.get("gain_note", ""))
        edge = "*" if r["best_at_grid_edge"] else " "
        theory, best = (f"{'capped':>{w}}" if r[k] is None else f"{r[k]:{w}.3f}"
                        for k, w in (("ttt_theory", 14), ("ttt_best", 7)))
        print(f"{r['n_groups']:>5} {r['level']:6} {r['strategy']:8} {r['layout']:13} {r['theory_period_s']:11.0f} s "
              f"x{r['best_factor']:<4g}{edge} {theory} {best} {gain}")
    print(f"best = the best multiple of the theory period (* at the edge of the grid); gain = TTT/T0 at the theory "
          f"period - at the best one, paired, on fresh jobs; capped: a job of that period reached the wall-clock cap "
          f"(its jobs stop there) ({d['elapsed_s']:.0f} s)")
    if "result" in d:
        print(f"result: {d['result']}")


def phase_table(d: dict) -> None:
    """``reproduce --table phase``."""
    keys = [k for k in STRATEGY_KEYS
            if any(k in r["ttt_over_t0"] for r in d["rows"])]
    kinds = [k for k in KINDS if any(k in r.get("by_kind", {}) for r in d["rows"])]

    def ci(m, c):
        return "" if m is None else f"{m:6.3f} [{c[0]:6.3f}, {c[1]:6.3f}]"

    print(f"{'GPUs':>7} {'T_s':>4} {'T_r':>5} {'winner':13} {'runner-up':13} {'margin, 95% CI':>24} "
          f"{'beats all':9} {'vs other strategy':>31} " + " ".join(f"{'winner ' + k:>13}" for k in kinds) + " "
          + " ".join(f"{k:>12}" for k in keys))
    for r in d["rows"]:
        sm = r.get("strategy_margin") or {}
        other = "" if not sm else (f"{sm['versus']} {ci(sm['margin'], sm['margin_ci95'])}"
                                   + ("" if sm["margin_ci95"][0] > 0 else "*"))
        by = " ".join(f"{str(r['by_kind'][k]['winner']) + ('' if r['by_kind'][k]['significant'] else '*'):>13}"
                      for k in kinds)
        not_beaten = [k for k, v in r.get("margins", {}).items() if not v["margin_ci95"][0] > 0]
        sig = "yes" if r["significant"] else "no: " + ",".join(not_beaten) if not_beaten else "no"
        print(f"{r['n_gpus']:>7} {r['save_s']:>4g} {r['restart_s']:>5g} {str(r['winner']):13} "
              f"{str(r['runner_up']):13} {ci(r['margin'], r['margin_ci95']):>24} {sig:9} {other:>31} {by} "
              + " ".join(f"{r['ttt_over_t0'][k]:12.3f}" if k in r["ttt_over_t0"] else f"{'':>12}" for k in keys))
    print("TTT/T0 of each strategy at its best r and period (confirmation runs); margin = runner-up minus winner, "
          "paired; 'beats all': every paired interval against the winner lies above 0 (else the strategies it does "
          "not beat); 'vs other strategy': against the best of the other redundancy strategies; * not significant"
          + (f"; result: {d['result']}, figure: {d['figure']}" if "result" in d else "") + f" ({d['elapsed_s']:.0f} s)")


def llama3_table(d: dict) -> None:
    """``reproduce --table llama3``."""
    def ci(e):  # percent
        return f"{100 * e['mean']:6.2f} [{100 * e['ci95'][0]:6.2f}, {100 * e['ci95'][1]:6.2f}]"

    p, c = d["preset"], d["central"]
    print(f"Llama 3 405B preset: {p['n_gpus']:,} GPUs, {p['interruptions']} unexpected interruptions in "
          f"{p['snapshot_h'] / 24:g} days (system MTBF {p['system_mtbf_s'] / 3600:.2f} h, per GPU "
          f"{p['gpu_mtbf_h']:,.0f} h), T0 = {p['t0_s'] / 86400:.1f} days, {d['settings']['reps']} jobs per row")
    print(f"central assumptions: {c['save_s']:g} s blocking saves, {c['restart_s']:g} s restarts, Weibull shape "
          f"{c['shape']:g}, checkpoint period {c['ckpt_period_s']:.0f} s (theory optimum); a failure during a "
          f"restart starts it again, one during a save makes it unusable (docs/llama3.md)")
    print("effective training time = (useful compute + all-reduce) / wall clock of the CKPT-only job")
    print(f"effective training time (%): {ci(c['effective'])}  -- the report: more than "
          f"{100 * d['reported']['effective']:g}% ({c['verdict']})")
    print("  shares of the wall clock (%): " + ", ".join(f"{k} {ci(v)}" for k, v in c["shares"].items())
          + f"; running (re-done work counted as training) {ci(c['running'])}")
    if "modern" in d:
        m = d["modern"]
        k = m["checkpointing"]
        n = m.get("counts_mean", {})
        print(f"with modern checkpointing ({k['memory_copies']} in-memory copies at {k['memory_save_s']:g} s, every "
              f"{k['remote_every']}th checkpoint saved remotely in the background at {k['async_slowdown']:g}x "
              f"slower compute, restart {k['restart_s']:g} s + load; period {m['ckpt_period_s']:.0f} s): "
              f"{ci(m['effective'])} ({m['verdict']})")
        print("  shares (%): " + ", ".join(f"{k} {ci(v)}" for k, v in m["shares"].items())
              + (f"; per job: {n['wipeouts']:.1f} wipe-outs, {n['memory_restarts']:.1f} reloaded from memory, "
                 f"{n['remote_fallbacks']:.2f} from remote storage" if n else ""))
    print(f"{'save (s)':>9} {'restart (s)':>11} {'shape':>5} {'effective % [95% CI]':>26} {'first order':>11}  verdict")
    for r in (*d["grid"], *d["shapes"]):
        central = all(r[k] == c[k] for k in ("save_s", "restart_s", "shape"))
        print(f"{r['save_s']:>9g} {r['restart_s']:>11g} {r['shape']:>5g} {ci(r['effective']):>26} "
              f"{100 * r['first_order']:>11.2f}  {r['verdict']}{'  (central)' if central else ''}")
    for r in d["t0"]:
        print(f"T0 = {r['t0_s'] / 86400:5.1f} days: {ci(r['effective'])}")
    k = d["classical"]
    print(f"classical rules: {ci(k)} vs Daly's exact {100 * k['exact']:.2f} "
          f"({'consistent' if k['consistent'] else 'NOT consistent'} at alpha {k['alpha']:g})")
    if "result" in d:
        print(f"result: {d['result']}")
    print(f"({d['elapsed_s']:.0f} s)")


def reproduce(d: dict) -> None:
    """``reproduce`` (``--table main``: the main table alone): what it wrote, then the main table."""
    if "datasets" in d:
        print("datasets: " + ", ".join(d["datasets"].values()))
        print("figures:  " + ", ".join(d["figures"]))
        if "phase_map" in d:
            print(f"phase map: {d['phase_map']} (spare-mc reproduce --table phase --quick recomputes and prints it "
                  f"in ~10 s)")
        print(f"main table: {d['main_table']} ({d['elapsed_s']:.0f} s in all)")
    main_table(d)


def variants(d: dict) -> None:
    """``sensitivity --list-variants``."""
    for v in d["variants"]:
        print(f"{v['name']:<28} {v['kind']:<12} {v['why']}")


def sensitivity(out: Report) -> None:
    """``sensitivity``: the study's table, where it wrote, and how precise it is."""
    d = out.data
    print(out.result.table())
    print(f"datasets: {', '.join(d['datasets'].values())}")
    print(f"result: {d['result']}" + (f"; figure: {d['figure']}" if "figure" in d else ""))
    s = d["settings"]
    print(f"{s['confirm_reps']} confirmation replications per point; largest 95% half-width "
          f"{s['max_half_width_pp']:.2f} pp (target {s['target_pp']:g} pp"
          f"{'' if s['target_met'] else ', NOT met: raise --max-confirm-reps'}); {d['elapsed_s']:.0f} s")


def calibrate(out: Report) -> None:
    """``calibrate``: the rounds' table, the preset written, the time."""
    print(out.result.table())
    if "preset" in out.data:
        print(f"preset: {out.data['preset']}" + ("" if out.data.get("accepted", True) else
                                                  " (labelled REJECTED: the closest combination, not a fit)"))
    print(f"{out.data['elapsed_s']:.0f} s")


def study(out: Report) -> None:
    """``dynamic`` and ``repair``: the study's table and where it wrote."""
    print(out.result.table())
    print(f"result: {out.data['result']}" + (f"; figure: {out.data['figure']}" if "figure" in out.data else ""))


def log_check(d: dict) -> None:
    """``log check``: the log's summary."""
    print(f"{d['source']}: valid, {d['rows']} events in {d['duration_s']:.6g} s (first {d['first_event_s']:.6g} "
          f"s, last {d['last_event_s']:.6g} s){', with repair_s' if d['has_repair_s'] else ''}")
    for name, x in d["levels"].items():
        print(f"  {name:<8} {x['events']:>8} events, {x['units_failed']:>7} of {x['units']} units failed")
    print(f"on a fresh system (no restart): {d['fresh_system_job_events']} job events kill "
          f"{d['fresh_system_groups_killed']} of {d['topology']['n_groups']} groups")


def _check_block(p: dict) -> None:
    """The predictive check of a fitted model, as text."""
    print(f"predictive check ({p['sims']} simulated windows of the log's own, same topology and start state):")
    print(f"  failures        {p['observed_failures']:>8} (simulated 95%: {p['simulated_failures_ci95'][0]:.0f}-"
          f"{p['simulated_failures_ci95'][1]:.0f}), p = {p['failures_p']:.3g}")
    print(f"  inter-arrivals  KS distance to the model's, p = {p['interarrival_p']:.3g}")
    print(f"  event times     KS distance to the model's (a burst at the start shows here), p = "
          f"{p['event_times_p']:.3g}")
    lay = p["wipeout_layout"]
    print(f"  wipe-outs       {p['observed_wipeouts']:>8} replaying the log ({lay['layout']}, r={lay['r']}, repairs "
          f"ignored; simulated 95%: {p['simulated_wipeouts_ci95'][0]:.0f}-{p['simulated_wipeouts_ci95'][1]:.0f}), p = "
          f"{p['wipeouts_p']:.3g}")
    print(f"  {'consistent with its log' if p['consistent'] else 'NOT consistent with its log'}: {p['rule']}")
    if p.get("low_power"):
        print(f"  note: {p['power_note']}")


def _fit_model(d: dict) -> None:
    """``log fit --model system|unit``: the fit, its predictive check and the flags that run it."""
    if d["model"] == "system":
        what = f"system-level renewal of all {d['n_events']} events"
        mean = f"system MTBF {d['mtbf_s']:.6g} s [{d['mtbf_s_ci95'][0]:.6g}, {d['mtbf_s_ci95'][1]:.6g}]"
    else:
        what = (f"per-unit renewals: {d['units']} {d['level']} units, {d['n_events']} failures, ages at the log "
                f"start {d['ages']}")
        if d.get("other_level_events"):  # the model runs without them, and the check compares only its level
            what += (f" ({d['other_level_events']} events at other levels are not in this model, nor in its "
                     f"predictive check)")
        mean = (f"mean lifetime {d['mean_lifetime_s']:.6g} s [{d['mean_lifetime_s_ci95'][0]:.6g}, "
                f"{d['mean_lifetime_s_ci95'][1]:.6g}] (cluster MTBF {d['system_mtbf_s']:.6g} s)")
    res = f"resolution {d['resolution_s']:g} s" if d["resolution_s"] else "exact times"
    print(f"{d['source']}: {what}; window {d['window_s']:.6g} s, {res}")
    ci = d.get("shape_ci95", d.get("shape_ci"))
    print(f"  shape k {d['shape']:.4f} [{ci[0]:.4f}, {ci[1]:.4f}]; {mean} ({d['ci_method']}, "
          f"{d['ci_level']:.0%}); AIC {d['aic']:.6g}")
    _check_block(d["predictive"])
    if "label" in d:
        print(d["label"])
    print("spare-mc ttt flags: " + " ".join(d["ttt_flags"]))


def flag_args(flags: dict, digits: int | None = None) -> list:
    """A ``spare_mc_flags`` set of ``log fit`` as command-line words: ``{"mtbf_s": 1.5, ...}`` is ``["--mtbf-s",
    "1.5", ...]`` (floats in full, ``repr``, or to ``digits`` significant digits for the text output)."""
    out = []
    for key, value in flags.items():
        text = (f"{value:.{digits}g}" if digits else repr(value)) if isinstance(value, float) else str(value)
        out += ["--" + key.replace("_", "-"), text]
    return out


def log_fit(d: dict) -> None:
    """``log fit``: the fits, the levels not fitted, and the ``spare-mc ttt`` flags of the fitted models."""
    if "model" in d:
        _fit_model(d)
        return
    print(f"{'level':<8} {'failures':>8} {'units':>8} {'shape k [95% CI]':>28} {'mean lifetime s [95% CI]':>40}")
    for name, x in d["fits"].items():
        print(f"{name:<8} {x['failures']:>8} {x['units']:>8} {x['shape']:>8.4f} [{x['shape_ci'][0]:.4f}, "
              f"{x['shape_ci'][1]:.4f}] {x['mean_s']:>12.6g} [{x['mean_ci'][0]:.6g}, {x['mean_ci'][1]:.6g}]")
    for name, why in d["skipped"].items():
        print(f"{name:<8} not fitted: {why}")
    for name, flags in d["spare_mc_flags"].items():
        print(f"spare-mc ttt flags ({name}): {' '.join(flag_args(flags, digits=6))}")
    if "gpu" in d["fits"] and not d["shared_shape"] and len(d["fits"]) > 1:
        print("(domain models need one shape for domains and GPUs: add --shared-shape)")
    if "gpu" not in d["fits"]:
        why = d["skipped"].get("gpu", "not among --levels")
        print(f"(no spare-mc ttt flags: these failure models need the GPU fit as their per-GPU background, "
              f"and the gpu level was not fitted: {why}; for a node-only log use --model unit --unit-level node "
              f"or --model system)")
    if d["spare_mc_flags"]:
        print(f"(run one with spare-mc ttt --strategy STRATEGY --n-groups N, e.g. this log's "
              f"{d['topology']['n_groups']}, and the job's own flags)")
    if "predictive" in d:
        print("the fitted levels as one cluster, every unit new at the log start:")
        _check_block(d["predictive"])
        if "label" in d:
            print(d["label"])


#: What each ReCtlr and wipe-out estimate of ``overhead`` and ``log replay`` means, for their text output (the JSON
#: keys stay the estimators' names; :data:`spare_mc.mc.reorder.ESTIMATORS` has the definitions).
MEANINGS = {
    "T": "the 1-based failure (job event) that wipes a shard type out",
    "masked": "failures masked before the wipe-out (groups dead just before it)",
    "time_s": "time from the epoch's start to its wipe-out (s)",
    "c_mean": "lower bound c(k) of the stack number (compute layers per step), mean over the states before the "
              "wipe-out",
    "s_star_mean": "stack number S_k ReCtlr reached, mean over the same states",
    "rho_mean": "reordering excess S_k - c(k), mean over the same states",
    "hk_fixed_rate": "share of ReCtlr calls resolved by Phase 0 (HK-Fixed: the stacks kept, S unchanged)",
    "no_move_rate": "share of ReCtlr calls needing no move (Phase 0, or a larger S alone)",
    "moves_mean": "shards moved into a stack's top S layers, per ReCtlr call",
    "patch_mean": "patch compute: largest number of extra shards one survivor recomputes (types only the dead "
                  "groups computed), per ReCtlr call",
    "patch_types_mean": "shard types survivors recompute, per ReCtlr call",
}


def _legend(names) -> None:
    """``where:`` and one line per name of :data:`MEANINGS` among ``names``."""
    shown = [n for n in MEANINGS if n in names]
    if shown:
        width = max(len(n) for n in shown)
        print("where:")
        for n in shown:
            print(f"  {n:<{width}}  {MEANINGS[n]}")


def overhead(d: dict) -> None:
    """``overhead``: :func:`key_values`, then what each estimate means."""
    key_values(d)
    _legend(d)


def log_replay(d: dict) -> None:
    """``log replay``: the epochs and the estimates with their 95% intervals, and what each means."""
    print(f"{d['source']}: {d['epochs']} complete epochs (wipe-outs) of the {d['layout']} layout, "
          f"N={d['n_groups']}, r={d['r']}; {d['tail_events']} job events after the last wipe-out ({d['tail_s']:.6g} s, not used); "
          f"{d['ignored_rows']} rows killed no live group")
    print("repairs: " + {"log": f"the log's repair times (a dead group is back after its repair); "
                                f"{d['repaired_groups']} groups repaired",
                         "none": "none (the log has no repair times: a dead group stays dead until the next wipe-out)",
                         "ignored": "ignored (--ignore-repairs: a dead group stays dead until the next wipe-out)"
                         }[d["repairs"]])
    if d["epochs"] < 2:
        print("fewer than 2 complete epochs: no estimates")
    else:
        names = [k for k in d if f"{k}_ci95" in d]
        for name in names:
            lo, hi = d[f"{name}_ci95"]
            print(f"  {name:<14} {d[name]:>12.6g}  95% CI [{lo:.6g}, {hi:.6g}]")
        _legend(names)
    if "layout_note" in d:
        print(f"note: {d['layout_note']}")


def recommend(d: dict) -> None:
    """``recommend``: the fit and its check, the best candidate, the runner-up and margin, the replay."""
    if d["predictive"] is None:  # a failure model given, not a log
        model = ", ".join(f"{k}={v}" for k, v in d["fit"].items())
        print(f"failure model: {model}")
        print(d["label"])
    else:
        _fit_model({**d["fit"], "predictive": d["predictive"], **({"label": d["label"]} if "label" in d else {})})

    def row(x):
        ci = x["ttt_over_t0_ci95"]
        capped = (f"  ({x['capped_fraction']:.0%} capped: a lower bound)" if x.get("capped_fraction") else "")
        return (f"{x['strategy']:<5} r={x['r']:<3} period {x['ckpt_period_s']:>10.6g} s  TTT/T0 "
                f"{x['ttt_over_t0']:.4f} [{ci[0]:.4f}, {ci[1]:.4f}]{capped}")

    print(f"candidates under the failure model ({d['reps']} jobs each, same failures):")
    for x in sorted(d["candidates"], key=lambda x: x["ttt_over_t0"]):
        print("  " + row(x))
    print("best:      " + row(d["best"]))
    print("runner-up: " + row(d["runner_up"]))
    m = d["margin_ci95"]
    print(f"margin (runner-up minus best, paired): {d['margin']:.4f} [{m[0]:.4f}, {m[1]:.4f}]")
    for strategy, names in d.get("options_not_applied", {}).items():
        print(f"({strategy}: {', '.join(names)} not applied: no effect on this strategy)")
    rp = d["replay"]
    if rp.get("consistent") is None:
        print(f"replay on the log's own events: {rp.get('note', 'none')}")
    else:
        ci = rp["ttt_over_t0_ci95"]
        print(f"replay on the log's own events ({rp['starts']} non-overlapping starts): TTT/T0 "
              f"{rp['ttt_over_t0']:.4f} [{ci[0]:.4f}, {ci[1]:.4f}]: "
              + ("agrees with the model" if rp["consistent"] else "DISAGREES with the model"))
        if rp.get("within_window", rp["starts"]) < rp["starts"]:
            print(f"  ({rp['starts'] - rp['within_window']} of the {rp['starts']} replayed jobs ran past the log's "
                  f"end and met no failures after it: the replay's TTT/T0 is optimistic)")


def log_import(d: dict) -> None:
    """``log import``: what was written, from what, and every dropped or changed row counted by reason."""
    where = {"start": "--start", "end": "--end", "duration_s": "--duration-s",
             "first_event": "the first event less one resolution step", "last_event": "the last event"}

    def came(x):
        return f"the raw file's comment, line {x['line']}" if x["from"] == "metadata" else where[x["from"]]

    m = d["mapping"]
    print(f"{d['output']} ({d['format']}): {d['rows_written']} events from {d['rows_read']} data rows of "
          f"{d['source']}")
    tm = m["time"]
    time = (f"time column {tm['column']!r}" if "column" in tm
            else f"start/end columns {tm['start_column']!r}/{tm['end_column']!r}")
    level = f"level {m['level']['constant']}" if "constant" in m["level"] else f"level column {m['level']['column']!r}"
    rep = m["repair"]
    repair = ("no repair times" if rep is None else f"repair column {rep['column']!r} in {rep['unit']}"
              if "column" in rep else "repair = end - start")
    print(f"  mapping: {time} as {tm['format']!r}; unit column {m['unit']['column']!r} by {m['unit']['names']}; "
          f"{level}; {repair}" + (f"; ignored columns: {', '.join(m['ignored_columns'])}"
                                  if m["ignored_columns"] else ""))
    print(f"  time origin: {d['origin']['value']} (from {came(d['origin'])}); window end {d['window']['duration_s']:.6g}"
          f" s after it (from {came(d['window'])})")
    res = d["resolution_s"]
    print(f"  resolution: {'finer than 1 us' if res is None else f'{res:g} s'}; tied timestamps "
          f"{d['ties']['timestamps']} ({d['ties']['rows']} rows, kept)")
    lines = d["lines"]
    for k, v in d["counts"].items():
        at = f" (lines {', '.join(map(str, lines[k]))}{', ...' if v > len(lines[k]) else ''})" if lines.get(k) else ""
        print(f"  {k:<30} {v:>8}{at}")
    for k, v in d["bad_rows"].items():
        at = f" (lines {', '.join(map(str, lines[k]))}{', ...' if v > len(lines[k]) else ''})" if lines.get(k) else ""
        print(f"    bad row: {k:<24} {v:>6}{at}")
    for name, x in d["units"].items():
        print(f"  {name}s: {x['seen']} of the topology's {x['topology']} failed at least once "
              f"({x['never_failed']} never)")
