"""A sweep's dataset compared with theory: every grid point with an exact reference, Holm-Bonferroni corrected
(:func:`compare_dataset`, :class:`DatasetComparison`, :class:`PointComparison`)."""

from __future__ import annotations

import itertools
from dataclasses import dataclass, replace

import numpy as np

from .._lib.provenance import SCHEMA_VERSION
from .._lib.seeding import warn_old_access
from .._lib.validation import UsageValueError
from ..stats import compare, estimate_mean
from ..theory.exact import EXACT_LAYOUTS, exact_wipeout
from .spec import PARAMETERS, SweepSpec, plain
from .storage import OUTPUTS, QUANTITIES

__all__ = ["DatasetComparison", "PointComparison", "UNIFORM_ORDER_MODELS", "compare_dataset"]


@dataclass(frozen=True)
class PointComparison:
    """One grid point of :func:`compare_dataset`.

    ``reference`` is ``None`` where no valid exact value exists, and ``reason`` says why; otherwise ``z``,
    ``p_value``, ``p_holm`` (Holm-adjusted across the tested points) and ``consistent`` (``p_holm >= alpha``).
    """

    point: dict
    quantity: str
    estimate: object
    reference: float | None
    reason: str = ""
    rel_error: float | None = None
    z: float | None = None
    p_value: float | None = None
    p_holm: float | None = None
    consistent: bool | None = None

    def to_dict(self) -> dict:
        d = {"point": self.point, "quantity": self.quantity,
             "estimate": None if self.estimate is None else self.estimate.mean,
             "ci95": None if self.estimate is None else list(self.estimate.ci), "reference": self.reference}
        if self.p_value is None:
            d["reason"] = self.reason
        else:
            d.update(rel_error=self.rel_error, z=self.z, p_value=self.p_value, p_holm=self.p_holm,
                     consistent=self.consistent)
        return d


@dataclass(frozen=True)
class DatasetComparison:
    """Outcome of :func:`compare_dataset`: a row per grid point, the family-wise level, the counts."""

    quantity: str
    alpha: float
    rows: tuple

    @property
    def tested(self) -> int:
        return sum(r.p_value is not None for r in self.rows)

    @property
    def consistent(self) -> int:
        return sum(bool(r.consistent) for r in self.rows if r.p_value is not None)

    def to_dict(self) -> dict:
        return {"schema_version": SCHEMA_VERSION, "quantity": self.quantity, "alpha": self.alpha,
                "rows": [r.to_dict() for r in self.rows], "tested": self.tested, "consistent": self.consistent}

    def __iter__(self):  # the list of dict rows this used to be (one release)
        warn_old_access("iterating over compare_dataset(...)", "compare_dataset(...).rows or .to_dict()['rows']")
        return iter(self.to_dict()["rows"])

    def __len__(self):
        return len(self.rows)


#: Failure models under which groups die one at a time in a uniformly random order (iid group lifetimes or a
#: uniformly chosen victim), so that the uniform-order exact laws apply; under domain events ``T`` counts events.
UNIFORM_ORDER_MODELS = ("uniform", "system", "per_gpu")


def _reference(quantity, point):
    """(exact value, None) or (None, why there is none)."""

    if quantity == "ttt":
        return None, "time to train has no exact reference in this model"
    model = point.get("failure_model", "uniform")
    if model not in UNIFORM_ORDER_MODELS:
        return None, (f"failure_model={model!r}: a domain event kills several groups at once, so T counts events "
                      f"and the uniform-order exact law does not apply")
    layout = point.get("layout", "cyclic")
    if layout not in EXACT_LAYOUTS:
        return None, f"no exact law for layout {layout!r} (exact: {', '.join(EXACT_LAYOUTS)})"
    return exact_wipeout(layout, point["n_groups"], point["r"]).mean, ""


def compare_dataset(ds, *, alpha: float = 1e-3) -> DatasetComparison:
    """Compare every grid point that has a valid exact value with it, Holm-Bonferroni corrected across the grid.

    ``wipeout`` and ``overhead``: mean ``T`` vs the exact law (cyclic unit stride, random holders, block). (The
    overhead sweep's ``sum c(k) / T`` is a function of ``T`` alone, but its mean is dominated by rare long runs --
    epochs past ``N / 2`` -- so at usual replication counts its intervals under-cover badly (measured: 70% for a
    nominal 95% at N = 200, r = 5, 60 replications, whatever the interval method); ``T`` carries the same
    information with light tails.) A reference is valid only
    where groups fail one at a time in uniformly random order (failure models ``uniform``, ``system``,
    ``per_gpu``): under domain failures an event kills several groups and ``T`` counts events. Points without a
    valid reference (those, Sidon layouts, time to train) carry ``reference=None`` and the reason.
    """

    quantity = ds.attrs.get("quantity")
    if quantity not in QUANTITIES or "spec" not in ds.attrs:
        raise UsageValueError("`ds` is not a spare-mc sweep dataset (no `quantity`/`spec` attributes)")
    first = next(iter(OUTPUTS[quantity]))
    dims = [d for d in ds[first].dims if d != "rep"]
    spec = SweepSpec.from_toml(ds.attrs["spec"])
    fixed = spec.fixed
    base = {k: v for k, v in PARAMETERS[quantity].items() if v is not None}
    rows = []
    for idx in itertools.product(*(range(ds.sizes[d]) for d in dims)):
        sel = {d: plain(ds[d].values[i]) for d, i in zip(dims, idx)}
        variant = spec.variants.get(sel.get("variant"), {})
        grid = {k: v for k, v in sel.items() if k != "variant"}
        point = {**base, **fixed, **variant, **grid}
        shown = {**fixed, **sel, **variant}
        sub = ds.isel({d: i for d, i in zip(dims, idx)})
        if quantity in ("wipeout", "overhead"):
            est = estimate_mean(sub["T"].values, name="T")
        else:
            v = sub["ttt_over_t0"].values
            est = estimate_mean(v[np.isfinite(v)], name="ttt_over_t0") if np.isfinite(v).sum() >= 2 else None
        ref, why = _reference(quantity, point)
        row = PointComparison(shown, est.name if est is not None else "ttt_over_t0", est, ref, why)
        if ref is not None and est.se > 0:
            c = compare(est, ref, alpha=alpha)
            row = replace(row, rel_error=c.rel_error, z=c.z, p_value=c.p_value)
        elif ref is not None:
            row = replace(row, reason=f"not testable: its {est.n} replications have no spread (standard error 0); "
                                      f"run more replications")
        rows.append(row)
    tested = sorted((i for i, r in enumerate(rows) if r.p_value is not None), key=lambda i: rows[i].p_value)
    running = 0.0
    for rank, i in enumerate(tested):  # Holm step-down
        running = max(running, min(1.0, (len(tested) - rank) * rows[i].p_value))
        rows[i] = replace(rows[i], p_holm=running, consistent=bool(running >= alpha))
    return DatasetComparison(quantity, alpha, tuple(rows))
