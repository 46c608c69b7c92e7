"""Each computing command of the CLI is one library call: its result's ``to_dict()`` is what ``--json`` prints,
without the stamp (issue 35: what the command line computes, Python users can call)."""

import json

from spare_mc._lib.provenance import json_safe
from spare_mc.cli import main
from spare_mc.mc.reorder import overhead_check
from spare_mc.mc.survivability import masked_failures
from spare_mc.ttt.config import TimelineConfig
from spare_mc.ttt.report import classical_check, step_ttt


def _cli(argv, capsys):
    assert main([*argv, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    del out["schema_version"], out["software"]
    return out


def _as_json(d):
    return json.loads(json.dumps(json_safe(d)))


def test_masked_failures_is_mu(capsys):
    cli = _cli(["mu", "--n-groups", "30", "--r", "3", "--reps", "2000", "--seed", "5"], capsys)
    d = masked_failures("cyclic", 30, 3, 2000, seed=5).to_dict()
    assert list(d) == list(cli) and _as_json(d) == cli
    assert "mc_vs_exact_z" in d


def test_masked_failures_chunks_and_no_exact(capsys):
    said = []
    d = masked_failures("cyclic", 30, 3, 2500, seed=5, chunk=1000, exact=False, progress=said.append).to_dict()
    assert said == ["1,000 of 2,500 replications", "2,000 of 2,500 replications", "2,500 of 2,500 replications"]
    assert d["exact_mean_T"] is None and "mc_vs_exact_z" not in d
    cli = _cli(["mu", "--n-groups", "30", "--r", "3", "--reps", "2000", "--seed", "5", "--with-replacement"], capsys)
    assert _as_json(masked_failures("cyclic", 30, 3, 2000, seed=5, with_replacement=True).to_dict()) == cli


def test_overhead_check_is_overhead(capsys):
    cli = _cli(["overhead", "--n-groups", "30", "--r", "3", "--reps", "100", "--seed", "2"], capsys)
    d = overhead_check("cyclic", 30, 3, 100, seed=2).to_dict()
    assert list(d) == list(cli) and _as_json(d) == cli
    assert "exact_c_mean" not in overhead_check("cyclic", 30, 3, 100, seed=2, exact=False).to_dict()


def test_step_ttt_is_ttt(capsys):
    cli = _cli(["ttt", "--strategy", "rep", "--n-groups", "60", "--r", "3", "--reps", "3", "--n-steps", "300"],
               capsys)
    d = step_ttt(TimelineConfig("rep", 60, r=3, n_steps=300), 3, seed=0).to_dict()
    assert list(d) == list(cli) and _as_json(d) == cli


def test_classical_check_is_classical_ttt(capsys):
    cli = _cli(["ttt", "--model", "classical", "--reps", "3", "--n-steps", "300"], capsys)
    d = classical_check(3, seed=0, n_steps=300).to_dict()
    assert list(d) == list(cli) and _as_json(d) == cli
    given = classical_check(3, seed=0, n_steps=300, ckpt_period_s=500.0).to_dict()
    assert given["ckpt_period_rule"] == "given"
