"""The guard against stale numba caches of kernels that inline another module's kernels."""

from spare_mc._numba_cache import drop_if_dependencies_changed


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


def test_missing_files_and_numba_cache_dir_are_left_alone(tmp_path, monkeypatch):
    monkeypatch.delenv("NUMBA_CACHE_DIR", raising=False)
    assert drop_if_dependencies_changed(str(tmp_path / "k.py"), ("missing.py",)) == 0  # an OSError: ignored
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path))
    (tmp_path / "d.py").write_text("")
    assert drop_if_dependencies_changed(str(tmp_path / "k.py"), ("d.py",)) == 0
    assert not (tmp_path / "__pycache__").exists()
