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
