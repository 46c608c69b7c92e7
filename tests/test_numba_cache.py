"""The guard against stale numba caches of kernels that inline another module's kernels."""

import ast
import pathlib

import pytest

import spare_mc
from spare_mc._kernels.cache import drop_if_dependencies_changed


def test_cache_dropped_when_a_dependency_changes(tmp_path, monkeypatch):
    monkeypatch.delenv("NUMBA_CACHE_DIR", raising=False)
    (tmp_path / "k.py").write_text("# a kernel module\n")
    (tmp_path / "d.py").write_text("# its dependency\n")
    cache = tmp_path / "__pycache__"
    cache.mkdir()

    def fake_cache():
        for name in ("k.f-10.py311.nbi", "k.f-10.py311.1.nbc", "other.g-3.py311.nbi"):
            (cache / name).write_text("x")

    fake_cache()
    assert drop_if_dependencies_changed(str(tmp_path / "k.py"), ("d.py",)) == 2  # no digest yet: dropped
    assert sorted(p.name for p in cache.iterdir()) == ["k.deps", "other.g-3.py311.nbi"]
    fake_cache()
    assert drop_if_dependencies_changed(str(tmp_path / "k.py"), ("d.py",)) == 0  # unchanged: kept
    assert (cache / "k.f-10.py311.nbi").exists()
    (tmp_path / "d.py").write_text("# its dependency, edited\n")
    assert drop_if_dependencies_changed(str(tmp_path / "k.py"), ("d.py",)) == 2  # changed: dropped
    assert not (cache / "k.f-10.py311.nbi").exists() and (cache / "other.g-3.py311.nbi").exists()


def test_a_missing_dependency_is_an_error_and_numba_cache_dir_is_left_alone(tmp_path, monkeypatch):
    monkeypatch.delenv("NUMBA_CACHE_DIR", raising=False)
    with pytest.raises(FileNotFoundError, match=r"k.py names \['missing.py'\] as kernel dependencies"):
        drop_if_dependencies_changed(str(tmp_path / "k.py"), ("missing.py",))
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path))
    (tmp_path / "d.py").write_text("")
    assert drop_if_dependencies_changed(str(tmp_path / "k.py"), ("d.py",)) == 0
    assert not (tmp_path / "__pycache__").exists()


def test_every_kernel_dependency_named_is_a_file_beside_its_module():
    """Each kernel module's ``drop_if_dependencies_changed(__file__, (...))`` names files that exist next to it (a
    name left behind by a rename would keep a stale cache), and every kernel module that imports another kernel
    module names it."""
    kernels = pathlib.Path(spare_mc.__file__).parent / "_kernels"
    seen = 0
    for path in sorted(kernels.glob("*.py")):
        tree = ast.parse(path.read_text())
        named = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "drop_if_dependencies_changed":
                named |= {elt.value for elt in node.args[1].elts}
        for name in named:
            assert (kernels / name).is_file(), f"{path.name} names {name}, which is not in _kernels/"
        imported = {f"{n.module}.py" if n.module else f"{a.name}.py" for n in ast.walk(tree)
                    if isinstance(n, ast.ImportFrom) and n.level == 1 for a in n.names}
        imported = {m for m in imported if m != "cache.py" and (kernels / m).is_file()}
        assert imported <= named, f"{path.name} imports kernels of {sorted(imported - named)} without naming them"
        seen += bool(named)
    assert seen >= 3  # rectlr, timeline, wipeout


# ------------------------------------------------------------------------------ the notice of a first compilation
_PROBE = """
import sys
sys.path.insert(0, sys.argv[1])
from numba import njit
from spare_mc._kernels.cache import compiled_or_cached, tell_if_compiling

@njit(cache=True)
def twice(x):
    return 2 * x

print("cached before:", compiled_or_cached(twice))
told = [tell_if_compiling("twice", 1.0, twice) for _ in range(2)]
twice(3)
print("told:", told, "cached after:", compiled_or_cached(twice))
"""


def _probe(tmp_path, cache_dir):
    import os
    import subprocess
    import sys
    (tmp_path / "probe.py").write_text(_PROBE)
    env = {**os.environ, "NUMBA_CACHE_DIR": str(cache_dir), "SPARE_MC_COMPILE_NOTICE": "1",
           "PYTHONPATH": str(pathlib.Path(spare_mc.__file__).parents[1])}
    r = subprocess.run([sys.executable, str(tmp_path / "probe.py"), str(tmp_path)], capture_output=True, text=True,
                       env=env, timeout=120, check=False)
    assert r.returncode == 0, r.stderr
    return r.stdout, r.stderr


def test_notice_once_when_a_kernel_compiles_and_never_once_cached(tmp_path):
    """A first call that compiles is announced once per process, on standard error; a process that finds the
    kernel in numba's on-disk cache says nothing."""
    out, err = _probe(tmp_path, tmp_path / "cache")
    assert "cached before: False" in out and "told: [True, False] cached after: True" in out
    assert err.count("spare-mc: compiling twice for a first run") == 1
    out, err = _probe(tmp_path, tmp_path / "cache")  # a second process: the cache has it
    assert "cached before: True" in out and "told: [False, False]" in out and "compiling" not in err


def test_timeline_tells_once_per_variant(monkeypatch, capsys):
    """The timeline says it compiles before its first job of each variant (here made to believe its cache is cold),
    once, and the environment variable silences it."""
    from spare_mc import TimelineConfig, simulate_ttt
    from spare_mc._kernels import cache, timeline
    monkeypatch.setenv("SPARE_MC_COMPILE_NOTICE", "1")
    monkeypatch.setattr(cache, "compiled_or_cached", lambda d, which=None: False)
    monkeypatch.setattr(cache, "_told", set())
    monkeypatch.setattr(timeline, "_noticed", set())
    simulate_ttt(TimelineConfig("spare", 24, r=3, n_steps=40), 3, rng=1)
    err = capsys.readouterr().err
    assert err.count("spare-mc: compiling the timeline kernel for a first run") == 1, err
    simulate_ttt(TimelineConfig("rep", 24, r=3, n_steps=40, repair="fixed", repair_s=600.0), 2, rng=1)
    assert capsys.readouterr().err.count("compiling the timeline kernel (its extended variant)") == 1
    monkeypatch.setenv("SPARE_MC_COMPILE_NOTICE", "0")
    monkeypatch.setattr(cache, "_told", set())
    monkeypatch.setattr(timeline, "_noticed", set())
    simulate_ttt(TimelineConfig("spare", 24, r=3, n_steps=40), 1, rng=1)
    assert capsys.readouterr().err == ""
