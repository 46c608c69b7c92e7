"""The package's shape: each layer imports only the layers below it, no import circle, imports at module top.

The layers, lowest first (docs/architecture.md). A module may import its own layer and every layer below it; the
package's ``__init__`` (the curated public names) and ``_moved`` (the 0.2 module paths) stand above all of them.
"""

import ast
import os
import pathlib
import subprocess
import sys
from collections import defaultdict

import pytest

import spare_mc

ROOT = pathlib.Path(spare_mc.__file__).parent

#: lowest first; a root module's layer is its own name
LAYERS = (
    ("_lib", "options", "stats"),
    ("_kernels",),
    ("model",),
    ("theory",),
    ("mc",),
    ("ttt",),
    ("logs",),
    ("sweep",),
    ("plots",),
    ("analyses",),
    ("cli", "testing"),
)
RANK = {name: i for i, names in enumerate(LAYERS) for name in names}
TOP = ("__init__", "_moved")

#: third-party imports allowed inside functions: heavy and optional, or only needed by one rare path
LAZY_OK = ("matplotlib", "dask", "distributed", "xarray", "pyarrow", "simpy", "networkx", "tomllib", "multiprocessing",
           "subprocess", "logging", "signal", "threading", "scipy")


def _modules():
    for path in sorted(ROOT.rglob("*.py")):
        rel = path.relative_to(ROOT).with_suffix("")
        parts = rel.parts[:-1] if rel.parts[-1] == "__init__" else rel.parts
        yield ".".join(parts), path, rel.parts[-1] == "__init__"


def _from_module(node: ast.ImportFrom, package: list):
    """The spare_mc module (dotted, under the package; ``""`` for the package itself) a ``from ... import`` reads
    from, given the importing module's ``package`` (its dotted parts); None for a module outside spare_mc."""
    if node.level:
        base = package[: len(package) - (node.level - 1)]
        return ".".join([*base, *([node.module] if node.module else [])])
    if node.module == "spare_mc":
        return ""
    if node.module and node.module.startswith("spare_mc."):
        return node.module[len("spare_mc."):]
    return None


def _imports(name: str, path: pathlib.Path, is_package: bool):
    """``(target module, line, at module top?)`` for every import of a spare_mc module, resolved to dotted names
    under the package (a ``from pkg import mod`` counts as importing ``pkg.mod`` when that is a module)."""
    tree = ast.parse(path.read_text())
    top = set(map(id, tree.body))
    here = name.split(".") if name else []
    package = here if is_package else here[:-1]
    for node in ast.walk(tree):
        targets = []
        if isinstance(node, ast.ImportFrom):
            mod = _from_module(node, package)
            if mod is None:
                continue
            for alias in node.names:
                sub = f"{mod}.{alias.name}" if mod else alias.name
                targets.append(sub if _is_module(sub) else mod)
        elif isinstance(node, ast.Import):
            targets = [a.name[len("spare_mc."):] for a in node.names if a.name.startswith("spare_mc.")]
        for t in targets:
            yield t, node.lineno, id(node) in top


def _is_module(dotted: str) -> bool:
    p = ROOT.joinpath(*dotted.split(".")) if dotted else ROOT
    return p.with_suffix(".py").is_file() or (p / "__init__.py").is_file()


def _layer(dotted: str):
    head = dotted.split(".")[0] if dotted else "__init__"
    return None if head in TOP else RANK[head]


def test_every_module_belongs_to_a_layer():
    unknown = sorted({m.split(".")[0] or "__init__" for m, _, _ in _modules()} - set(RANK) - set(TOP))
    assert not unknown, f"modules or folders in no layer of LAYERS: {unknown} (add them, lowest first)"


def test_no_import_runs_up_the_layers():
    up = []
    for name, path, is_pkg in _modules():
        mine = _layer(name)
        if mine is None:
            continue
        for target, line, _ in _imports(name, path, is_pkg):
            theirs = _layer(target)
            if theirs is None or theirs > mine:
                up.append(f"{path.relative_to(ROOT.parent)}:{line} imports spare_mc.{target}")
    assert not up, "imports that run up the layers:\n" + "\n".join(up)


def test_no_import_circle():
    graph = defaultdict(set)
    for name, path, is_pkg in _modules():
        for target, _, _ in _imports(name, path, is_pkg):
            if target != name and _is_module(target):
                graph[name].add(target)
    # a package's __init__ importing its own modules is how a package exports; not a circle through the package
    seen, on_stack, circles = set(), [], []

    def visit(node):
        if node in on_stack:
            circles.append(on_stack[on_stack.index(node):] + [node])
            return
        if node in seen:
            return
        seen.add(node)
        on_stack.append(node)
        for nxt in sorted(graph[node]):
            if not (nxt == "" or node.startswith(nxt + ".")):  # not a module's own package (its __init__)
                visit(nxt)
        on_stack.pop()

    for node in sorted(graph):
        visit(node)
    assert not circles, "import circles:\n" + "\n".join(" -> ".join(c) for c in circles)


def test_imports_sit_at_module_top():
    inner = []
    for name, path, _ in _modules():
        tree = ast.parse(path.read_text())
        top = set(map(id, tree.body))
        for node in ast.walk(tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)) and id(node) not in top:
                mods = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or "."]
                if node.__class__ is ast.ImportFrom and node.level:
                    mods = ["spare_mc"]
                if any(m.split(".")[0] not in LAZY_OK for m in mods):
                    inner.append(f"{path.relative_to(ROOT.parent)}:{node.lineno} {ast.unparse(node)}")
    assert not inner, "imports inside functions (move them to the module's top):\n" + "\n".join(inner)


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def test_no_module_imports_another_modules_private_names():
    """A module's ``_name`` is its own: no module imports one from another spare_mc module (``from .x import
    _helper``), nor reads one through a module it imported (``x._helper``). Where two modules share a helper, it is a
    public name of the module that owns it. Importing a private *module* (``from .._kernels import timeline as
    _tk``, ``from ._lib import loading as _loading``) is fine: that is the package's own private layer."""
    bad = []
    for name, path, is_pkg in _modules():
        tree = ast.parse(path.read_text())
        here = name.split(".") if name else []
        package = here if is_pkg else here[:-1]
        modules = {}  # local name -> the spare_mc module it is bound to
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                mod = _from_module(node, package)
                if mod is None:
                    continue
                for alias in node.names:
                    sub = f"{mod}.{alias.name}" if mod else alias.name
                    if _is_module(sub):
                        modules[alias.asname or alias.name] = sub
                    elif _private(alias.name) and mod != name:
                        bad.append(f"{path.relative_to(ROOT.parent)}:{node.lineno} imports {alias.name} from "
                                   f"spare_mc.{mod}")
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name.startswith("spare_mc.") and alias.asname:
                        modules[alias.asname] = alias.name[len("spare_mc."):]
        for node in ast.walk(tree):
            if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in modules
                    and _private(node.attr) and modules[node.value.id] != name):
                bad.append(f"{path.relative_to(ROOT.parent)}:{node.lineno} reads {node.value.id}.{node.attr} "
                           f"(spare_mc.{modules[node.value.id]})")
    assert not bad, "private names used outside their module (make them public names of their owner):\n" + \
        "\n".join(bad)


@pytest.mark.parametrize("layer", [n for names in LAYERS for n in names if (ROOT / n).is_dir()])
def test_every_layer_folder_is_a_package_with_a_docstring(layer):
    init = ROOT / layer / "__init__.py"
    assert init.is_file() and ast.get_docstring(ast.parse(init.read_text())), f"{layer}/ needs an __init__ docstring"


def test_the_command_line_starts_without_the_heavy_optional_imports():
    """``import spare_mc.cli`` (every command's start) loads no xarray, pandas, dask or matplotlib: xarray and pandas
    alone took 0.4 s of its 1.6 s (2026-12-07); the paths that need them import them. Nor ``scipy.stats`` (0.36 s
    more): the package takes its few distribution functions from ``scipy.special`` (``spare_mc._lib.dist``). Nor
    ``scipy.optimize`` (0.24 s of the 0.77 s left): the log fits import it at their first use."""
    code = ("import sys, spare_mc.cli; print(sorted(m for m in ('xarray', 'pandas', 'dask', 'distributed', "
            "'matplotlib', 'scipy.stats', 'scipy.optimize') if m in sys.modules))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False,
                       env={**os.environ, "PYTHONPATH": str(ROOT.parent)})
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["[]"]
