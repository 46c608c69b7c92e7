"""The module paths of spare_mc 0.2, kept for one release (0.3.x) as deprecated aliases (private).

spare_mc 0.3.0 moved its flat modules into subpackages by layer (docs/architecture.md). A program that imports an
old path (``import spare_mc.timeline``, ``from spare_mc.failure_logs import read_failure_log``) still works and
gets a :class:`DeprecationWarning` naming the new path; the aliases go in 0.4.0. The public names of
``import spare_mc as sm`` did not move. ``spare_mc.sweep``, ``spare_mc.plots`` and ``spare_mc.cli`` are the new
subpackages themselves and export what the old modules did; ``spare_mc.stats`` and ``spare_mc.options`` stayed.

An old path is a module object whose attributes are looked up, in order, in the new modules that hold what the old
module held. It is an alias, not a copy: patching it (``monkeypatch.setattr``) patches nothing the code reads, so
tests patch the new modules.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys
import warnings

#: old module (under spare_mc) -> the new modules (under spare_mc) that hold its names, searched in order
MOVED = {
    "topology": ("model.topology",),
    "failures": ("model.failures",),
    "domain_rates": ("model.domain_rates",),
    "layouts": ("model.layouts", "model.kinds"),
    "placement": ("model.placement",),
    "paper": ("model.paper",),
    "closed_forms": ("theory.closed_forms",),
    "exact": ("theory.exact",),
    "survivability": ("mc.survivability",),
    "reorder": ("mc.reorder",),
    "timeline": ("ttt.config", "ttt.period", "ttt.theory", "ttt.run", "ttt.results", "logs.replay_ttt"),
    "exact_ttt": ("ttt.exact_ttt",),
    "optimize": ("ttt.optimize", "ttt.theory"),
    "failure_logs": ("logs.failure_log", "logs.replay", "logs.fit", "logs.synthetic", "logs.epochs"),
    "storage": ("sweep.storage",),
    "sensitivity": ("analyses.sensitivity",),
    "calibrate": ("analyses.calibrate",),
    "dynamic": ("analyses.dynamic",),
    "repair": ("analyses.repair",),
    "phase": ("analyses.phase",),
    "domains": ("analyses.domains",),
    "domain_period": ("analyses.domain_period",),
    "clusters": ("analyses.clusters",),
    "reproduce": ("analyses.reproduce",),
    "reference": ("testing.wipeout", "testing.failures", "testing.rectlr", "testing.timeline_clocks",
                  "testing.timeline_twin"),
}

_PREFIX = "spare_mc."


class _MovedModules(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds ``spare_mc.<old>`` for every old path in :data:`MOVED` and loads it as an alias of the new modules."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname.startswith(_PREFIX) and fullname[len(_PREFIX):] in MOVED:
            return importlib.util.spec_from_loader(fullname, self)
        return None

    def create_module(self, spec):
        return None  # the default module object

    def exec_module(self, module):
        old = module.__name__[len(_PREFIX):]
        targets = [_PREFIX + t for t in MOVED[old]]
        warnings.warn(f"{module.__name__} moved to {' and '.join(targets)} in spare_mc 0.3.0; the old path goes in "
                      f"0.4.0 (the names of `import spare_mc as sm` did not move)", DeprecationWarning, stacklevel=2)
        new = [importlib.import_module(t) for t in targets]

        def __getattr__(name):
            for m in new:
                if hasattr(m, name):
                    return getattr(m, name)
            raise AttributeError(f"module {module.__name__!r} (moved to {', '.join(targets)}) has no attribute "
                                 f"{name!r}")

        module.__getattr__ = __getattr__
        module.__all__ = [n for m in new for n in getattr(m, "__all__", ())]
        module.__doc__ = f"Deprecated alias of {', '.join(targets)} (spare_mc 0.3.0 moved it)."


def install() -> None:
    """Put the finder on :data:`sys.meta_path` once (idempotent)."""
    if not any(isinstance(f, _MovedModules) for f in sys.meta_path):
        sys.meta_path.append(_MovedModules())
