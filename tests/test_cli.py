"""The command line's shape: flags typed by the config fields' real types, one command table of handlers and
formatters, no default only the command line knows, and the library function behind each ``reproduce --table``."""

from __future__ import annotations  # the fields' annotations below are strings, as TimelineConfig's are

import argparse
import json
from dataclasses import dataclass, field

import pytest

import spare_mc.cli as cli
from spare_mc._lib.provenance import json_safe
from spare_mc.analyses.tables import domain_period_table, llama3_table, phase_table
from spare_mc.cli import main
from spare_mc.cli.parser import add_config_options, build_parser, flag_type
from spare_mc.model.paper import PAPER_R, paper_row


def _cli(help_text):
    return field(default=None, metadata={"cli": True, "help": help_text})


@dataclass(frozen=True)
class _Fields:
    count: int | None = _cli("an optional integer")
    size_s: float | None = _cli("an optional duration (s)")
    switch: bool = field(default=False, metadata={"cli": True, "help": "a switch"})
    steps: int = field(default=3, metadata={"cli": True, "help": "an integer"})
    name: str = field(default="a", metadata={"cli": True, "help": "a string"})
    hidden: list | None = field(default=None, metadata={"cli": False, "help": "not a flag"})


def test_flag_types_come_from_the_field_types():
    """``{"int": int, "str": str}.get(f.type, float)`` on the annotation string gave an ``int | None`` field a
    float flag; the flag's type is now the field's real type (typing.get_type_hints)."""
    p = argparse.ArgumentParser()
    add_config_options(p, failures=False, config=_Fields)
    kinds = {a.dest: a.type for a in p._actions if a.option_strings}
    assert kinds["count"] is int and kinds["size_s"] is float and kinds["steps"] is int and kinds["name"] is str
    switch = next(a for a in p._actions if a.dest == "switch")
    assert isinstance(switch, argparse._StoreConstAction) and switch.const is True and switch.default is None
    assert "hidden" not in kinds
    args = p.parse_args(["--count", "4", "--size-s", "2.5", "--switch"])
    assert (args.count, args.size_s, args.switch, args.steps) == (4, 2.5, True, None)
    assert type(args.count) is int
    with pytest.raises(SystemExit):
        p.parse_args(["--count", "2.5"])


@pytest.mark.parametrize("hint, kind", [(int | None, int), (float | None, float), (bool, bool), (str, str),
                                        (int, int)])
def test_flag_type(hint, kind):
    assert flag_type(hint) is kind


@pytest.mark.parametrize("hint", [list | None, int | str, dict])
def test_a_field_the_command_line_cannot_give_is_a_bug(hint):
    with pytest.raises(TypeError, match="a command-line field must be"):
        flag_type(hint)


def test_every_parsed_command_has_a_handler_and_a_formatter():
    sub = build_parser()._subparsers._group_actions[0].choices
    names = set()
    for name, parser in sub.items():
        if name == "log":
            names |= {f"log {x}" for x in parser._subparsers._group_actions[0].choices}
        else:
            names.add(name)
    names |= {f"reproduce --table {t}" for t in next(a for a in sub["reproduce"]._actions if a.dest == "table").choices}
    names.add("sensitivity --list-variants")
    assert names == set(cli.COMMANDS)
    assert all(callable(c.run) and callable(c.show) for c in cli.COMMANDS.values())


def test_the_default_r_of_ttt_is_the_papers_optimum(capsys):
    """The per-strategy default r lives in the library (spare_mc.model.paper.PAPER_R, read from the paper's
    published row), not in the command line."""
    row = paper_row(600)
    assert PAPER_R == {"ckpt": 1, "rep": row["rep"]["r"], "spare": row["spare"]["r"]} == {"ckpt": 1, "rep": 3,
                                                                                          "spare": 8}
    for strategy, r in PAPER_R.items():
        assert main(["ttt", "--strategy", strategy, "--n-groups", "24", "--reps", "2", "--n-steps", "50",
                     "--json"]) == 0
        assert json.loads(capsys.readouterr().out)["config"]["r"] == r
    ttt = build_parser()._subparsers._group_actions[0].choices["ttt"]
    assert "1 for ckpt, 3 for rep, 8 for spare" in next(a.help for a in ttt._actions if a.dest == "r")


def test_reproduce_table_is_the_library_call(capsys):
    """``spare-mc reproduce --table llama3`` prints what :func:`spare_mc.analyses.tables.llama3_table` returns."""
    assert main(["reproduce", "--table", "llama3", "--reps", "2", "--seed", "3", "--json"]) == 0
    def timeless(x):  # every elapsed_s (the wall clock of the run) left out; NaN as the JSON's null
        if isinstance(x, dict):
            return {k: timeless(v) for k, v in x.items() if k != "elapsed_s"}
        return [timeless(v) for v in x] if isinstance(x, list) else x

    printed = timeless(json.loads(capsys.readouterr().out))
    direct = timeless(json.loads(json.dumps(json_safe(llama3_table(reps=2, seed=3)))))
    assert printed == direct and printed["table"] == "llama3" and printed["settings"]["reps"] == 2


def test_table_rules_are_the_librarys(tmp_path):
    with pytest.raises(ValueError, match=r"`reps` must be >= 2 to estimate a standard error, got 1"):
        llama3_table(reps=1)
    with pytest.raises(ValueError, match=r"`n_values` must be one N among 200,600,1000 .* got '200,600'"):
        domain_period_table(n_values=(200, 600))
    (tmp_path / "main_table.json").write_text("{}")
    with pytest.raises(ValueError, match=r"`out_dir` .* holds a full reproduce"):
        phase_table(out_dir=str(tmp_path))
    with pytest.raises(ValueError, match=r"`workers` must be >= 1"):
        phase_table(workers=0)


def test_a_librarys_error_names_the_flag_not_its_deprecated_alias(tmp_path, capsys):
    """``--trials`` (the deprecated alias of ``--reps``) shares its keyword: the library's "`reps` must be >= 2" of
    ``repair --reps 1`` named ``--trials``."""
    assert main(["repair", "--reps", "1", "--out-dir", str(tmp_path), "--figure", "none"]) == 2
    err = capsys.readouterr().err
    assert "`--reps` must be >= 2" in err and "--trials" not in err
