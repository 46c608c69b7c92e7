"""Closed forms: the paper's approximations, a sharper expansion, and checkpoint-period theory.

Masked failures (docs/model.md, section 3)
------------------------------------
:func:`mu_paper`
    ``mu(N, r) = Gamma(1/r) / r * N^(1 - 1/r)`` (Lee et al. 2026), the leading term of
    ``E[T] = sum_m (1 - C(m, r)/C(N, r))^N ~ int_0^inf exp(-N (m/N)^r) dm`` for independent random holders.
:func:`mu_expansion`
    Three terms of the same expansion, keeping the finite-population factor
    ``C(m, r)/C(N, r) = (m/N)^r (1 - r(r-1)/(2m) + r(r-1)/(2N) + ...)`` and the Euler-Maclaurin end term:
    ``E[T] = Gamma(1 + 1/r) N^(1-1/r) + r/2 - (r - 1)/2 Gamma(1 + 1/r) N^(-1/r) + o(1)``
    (derived here; each correction integrates ``u e^(-u)`` against ``dm = N^(1-1/r)/r u^(1/r - 1) du``).
:func:`mu_rep_paper`
    ``mu_Rep ~ r^(1/r) mu(N, r)`` (the exact block mean is :func:`spare_mc.theory.exact.block_mean_closed_form`).

Stack number (docs/model.md, section 4)
---------------------------------
:func:`stack_lower_bound` ``c(k) = ceil(N / (N - k))``; :func:`overhead_lower_bound` the paper's
``(1/floor(mu)) sum_{k < floor(mu)} c(k)`` (its ``rho_k = 0`` part).

Checkpointing (docs/model.md, section 5)
----------------------------------
Young (1974) ``sqrt(2 T_s M)``; Daly (2006) ``sqrt(2 d M) [1 + sqrt(d/(2M))/3 + d/(18 M)] - d`` for ``d < 2M``
(else ``M``); the availability model ``A(T_c) = T_f (1 - T_s/T_c) / (T_f + T_r + T_c/2)``, maximised at
``T_c* = T_s + sqrt(T_s^2 + 2 T_s (T_f + T_r))`` with ``A* = 2 T_s T_f / T_c*^2``; the normalised time to train
``J(r) = S(N, r) / A*(T_f = mu(N, r) m)`` and the paper's ``r* = floor(log2 N + 0.833)``;
:func:`daly_expected_wall_time`, the exact expected wall time of the classical model (Daly 2006).
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import lambertw

from .._lib.validation import UsageTypeError, UsageValueError, as_float, as_int, check_r

__all__ = ["mu_paper", "mu_expansion", "daly_optimal_interval", "mu_rep_paper", "stack_lower_bound", "overhead_lower_bound",
           "ckpt_period_young", "ckpt_period_daly", "availability", "ckpt_period_optimal", "optimal_availability",
           "normalized_ttt", "r_star", "daly_expected_wall_time"]

#: Euler's constant over ln 2, the paper's 0.833.
R_STAR_OFFSET = np.euler_gamma / math.log(2)


#: The least duration the closed forms take (seconds; 0 where allowed): below it their ratios underflow (5e-324
#: divided by zero). There is no upper bound: the formulas are written so that no intermediate square or sum
#: overflows (``T_s^2`` and ``T_f + T_r`` at 1e308 gave inf, and an availability of 1 from NaN).
_MIN_DURATION_S = 1e-150


def _duration(value, name: str, *, zero: bool = False) -> float:
    """``value`` as a finite duration of at least :data:`_MIN_DURATION_S` (or 0 with ``zero``), or a usage error
    naming it."""
    v = as_float(value, name, nonnegative=zero, positive=not zero)
    if 0 < v < _MIN_DURATION_S:
        raise UsageValueError(f"`{name}` must be {'0 or ' if zero else ''}at least {_MIN_DURATION_S:g} s "
                              f"(below it the formulas underflow), got {name}={v:g}")
    return v


def _nr(n_groups, r):
    n_groups = as_int(n_groups, "n_groups", min_value=1)
    r = as_int(r, "r")
    check_r(r, n_groups)
    return n_groups, r


def mu_paper(n_groups: int, r: int) -> float:
    """The paper's mean number of failures to wipe-out, ``Gamma(1/r)/r * N^(1 - 1/r)``.

    Examples
    --------
    >>> round(mu_paper(600, 20), 2)
    424.21
    """
    n_groups, r = _nr(n_groups, r)
    return math.gamma(1.0 / r) / r * n_groups ** (1.0 - 1.0 / r)


def mu_expansion(n_groups: int, r: int) -> float:
    """``E[T]`` for independent random holders to ``o(1)``:
    ``Gamma(1+1/r) N^(1-1/r) + r/2 - (r-1)/2 Gamma(1+1/r) N^(-1/r)``.

    At N = 600, r = 20 it gives 427.50 where the exact value is 427.50 and the paper's form 424.21. It is an
    expansion in large ``N`` for ``r >= 2``: at ``r = 1`` it says 1.5 for every ``N``, while the exact value rises
    from 1 (N = 1) to ``e / (e - 1) = 1.582`` (a group may hold no type, and its failure wipes nothing out).
    """
    n_groups, r = _nr(n_groups, r)
    g = math.gamma(1.0 + 1.0 / r)
    return g * n_groups ** (1.0 - 1.0 / r) + r / 2.0 - (r - 1) / 2.0 * g * n_groups ** (-1.0 / r)


def mu_rep_paper(n_groups: int, r: int) -> float:
    """The paper's replication asymptotics ``r^(1/r) mu(N, r)``."""
    return _nr(n_groups, r)[1] ** (1.0 / r) * mu_paper(n_groups, r)


def stack_lower_bound(n_groups: int, k):
    """``c(k) = ceil(N / (N - k))``: the least stack number with ``k`` dead groups (``0 <= k < N``)."""
    n_groups = as_int(n_groups, "n_groups", min_value=1, max_value=1 << 62)  # the arithmetic is in int64
    k_arr = np.asarray(k)
    if k_arr.size == 0 and k_arr.dtype.kind in "biuf":  # [] is float64 to numpy: no k, no bound
        return np.empty(k_arr.shape, np.int64)
    if not np.issubdtype(k_arr.dtype, np.integer):
        raise UsageTypeError(f"`k` must be integer, got dtype {k_arr.dtype}")
    if np.any(k_arr < 0) or np.any(k_arr >= n_groups):
        raise UsageValueError(f"`k` must satisfy 0 <= k < N={n_groups}")
    k_arr = k_arr.astype(np.int64)  # uint64 or int8 k: numpy 2 refuses -N (or N) in their own dtype
    out = -(-n_groups // (n_groups - k_arr))
    return int(out) if out.ndim == 0 else out


def overhead_lower_bound(n_groups: int, r: int, mu: float | None = None) -> float:
    """The paper's ``(1/floor(mu)) sum_{k < floor(mu)} c(k)``, with ``mu = mu_paper(N, r)`` by default."""
    n_groups, r = _nr(n_groups, r)
    if mu is None:
        mu = mu_paper(n_groups, r)
    else:
        mu = as_float(mu, "mu", positive=True)
        if mu > n_groups:
            raise UsageValueError(f"`mu` (the mean failures to a wipe-out) must be <= N = {n_groups}: no more than N "
                                  f"groups can fail, got mu={mu:g}")
    m = min(int(math.floor(mu)), n_groups)
    if m < 1:
        return 1.0
    return _stack_bound_total(n_groups, m) / m


#: The most distinct values of ``c(k)`` :func:`_stack_bound_total` sums (one Python step each).
_MAX_BLOCKS = 10_000_000


def _stack_bound_total(n: int, m: int) -> int:
    """``sum_{k < m} c(k)`` exactly, ``c(k) = ceil(n / (n - k))``, in one step per distinct value of ``c``: with
    ``d = n - k``, ``c = q`` for ``d`` in ``[ceil(n / q), ceil(n / (q - 1)) - 1]``. So the cost does not grow with
    ``m`` (N = 10^18 is as quick as 600) but with ``c(m - 1)``, and at most about ``2 sqrt(n)``."""
    blocks = min(-(-n // (n - m + 1)), 2 * math.isqrt(n) + 2)
    if blocks > _MAX_BLOCKS:
        raise UsageValueError(f"the sum of c(k) for k < {m:,} at N={n:,} has about {blocks:,} distinct terms (more "
                              f"than {_MAX_BLOCKS:,}); give a smaller `mu` (the mean failures to a wipe-out)")
    total, d = 0, n - m + 1
    while d <= n:
        q = -(-n // d)
        end = n if q == 1 else min(n, -(-n // (q - 1)) - 1)
        total += q * (end - d + 1)
        d = end + 1
    return total


def ckpt_period_young(save_s: float, mtbf_s: float) -> float:
    """Young's first-order optimum ``sqrt(2 T_s M)`` (Young, CACM 1974)."""
    save_s = _duration(save_s, "save_s")
    mtbf_s = _duration(mtbf_s, "mtbf_s")
    return math.sqrt(2.0) * math.sqrt(save_s) * math.sqrt(mtbf_s)  # not sqrt(2 T_s M): it overflows at 1e308


def ckpt_period_daly(save_s: float, mtbf_s: float) -> float:
    """Daly's higher-order optimum (Daly, FGCS 22(3), 2006).

    ``sqrt(2 d M) [1 + (1/3) sqrt(d / (2M)) + (1/9) (d / (2M))] - d`` for ``d < 2M``, else ``M``.
    """
    d = _duration(save_s, "save_s")
    m = _duration(mtbf_s, "mtbf_s")
    if d / 2 >= m:
        return m
    x = d / 2 / m
    return math.sqrt(2.0) * math.sqrt(d) * math.sqrt(m) * (1 + math.sqrt(x) / 3 + x / 9) - d


def daly_expected_wall_time(solve_s: float, interval_s: float, save_s: float, restart_s: float,
                            mtbf_s: float) -> float:
    """Exact expected wall time of the classical checkpoint/restart model (Daly, FGCS 22(3), 2006, eq. 9).

    The model: a solve time ``T_s`` is cut into segments of ``tau`` compute, each followed by a checkpoint of
    ``delta`` (the last one included); failures are exponential with mean ``M`` at all times (compute, checkpoint
    and restart) and detected at once; a failure during a segment or its checkpoint loses the segment; each failure
    is followed by a restart of ``R``, and a failure during a restart starts the restart again; no restart at the
    start. One segment of length ``L = tau + delta`` then takes ``M e^(R/M) (e^(L/M) - 1)`` in expectation
    (first-step analysis: ``e^(L/M) - 1`` failures on average, each costing the expected time lost before it plus
    the restart, ``M (e^(R/M) - 1)`` with restarts of restarts), so for ``T_s / tau`` an integer ``n``

        ``E[T_w] = M e^(R/M) (e^((tau + delta)/M) - 1) T_s / tau``;

    otherwise the ``floor(T_s / tau)`` full segments contribute as above and the last one, of ``tau_last = T_s -
    n tau`` compute, ``M e^(R/M) (e^((tau_last + delta)/M) - 1)``. Returns ``inf`` when the value exceeds the
    largest float (e.g. ``tau + delta`` hundreds of times ``M``).

    Parameters
    ----------
    solve_s : float
        ``T_s``, the failure-free compute time (> 0), s.
    interval_s : float
        ``tau``, compute per segment (> 0), s.
    save_s : float
        ``delta``, the checkpoint time (>= 0), s.
    restart_s : float
        ``R`` (>= 0), s.
    mtbf_s : float
        ``M`` (> 0), s.

    Examples
    --------
    >>> round(daly_expected_wall_time(3600.0, 600.0, 0.0, 0.0, 1e12), 3)  # (almost) no failures: the solve time
    3600.0
    """
    ts = _duration(solve_s, "solve_s")
    tau = _duration(interval_s, "interval_s")
    d = _duration(save_s, "save_s", zero=True)
    r = _duration(restart_s, "restart_s", zero=True)
    m = _duration(mtbf_s, "mtbf_s")
    ratio = ts / tau
    n = round(ratio)
    if abs(ratio - n) > 1e-9 * max(1.0, ratio):
        n = math.floor(ratio)
    last = ts - n * tau
    segments = [(tau, n)] + ([(last, 1)] if last > 1e-12 * ts else [])

    def seg(length):  # M e^(R/M) (e^(L/M) - 1) in log space: log M + R/M + log(expm1(L/M))
        x = length / m
        log_em1 = math.log(math.expm1(x)) if x < 700 else x + math.log1p(-math.exp(-x))
        return math.log(m) + r / m + log_em1

    total = 0.0
    for length, count in segments:
        if count == 0:
            continue
        lv = seg(length + d) + math.log(count)
        if lv > 709.0:
            return math.inf
        total += math.exp(lv)
    return total


def daly_optimal_interval(solve_s: float, save_s: float, restart_s: float, mtbf_s: float) -> tuple[float, float]:
    """The exact optimum of :func:`daly_expected_wall_time` over the compute interval: ``(tau_opt, E[T_w] there)``.

    Per unit of solve time the objective is ``M e^(R/M) (e^((tau + delta)/M) - 1) / tau``, whose minimiser solves
    ``e^((tau + delta)/M) (1 - tau/M) = 1``:

        ``tau* = M (1 + W_0(-e^(-delta/M - 1)))``

    with ``W_0`` the principal branch of Lambert's W (the exact first-order condition, as in Bougeret et al.,
    "Checkpointing strategies for parallel jobs", SC 2011, for exponential failures). For a finite solve time
    ``T_s`` the segments should be equal (``e^x`` is convex, so a shorter last segment costs more than spreading it),
    so the exact optimum is ``n`` equal segments of ``T_s / n`` with ``n`` the best of the integers around
    ``T_s / tau*`` (the objective in ``n`` is convex; the search widens until both neighbours are worse).
    ``R`` only scales the objective: the optimum does not depend on it. With ``delta = 0`` (free checkpoints) every
    extra segment lowers the cost: the result is the limit ``tau -> 0``, ``(0, T_s e^(R/M))``.

    Examples
    --------
    >>> tau, e = daly_optimal_interval(100 * 3600.0, 60.0, 600.0, 3600.0)
    >>> round(tau, 1), round(e / (100 * 3600.0), 4)   # Young: 657.3 s, Daly's higher order: 617.9 s
    (617.5, 1.4261)
    """

    ts = _duration(solve_s, "solve_s")
    d = _duration(save_s, "save_s", zero=True)
    r = _duration(restart_s, "restart_s", zero=True)
    m = _duration(mtbf_s, "mtbf_s")
    if d == 0.0:  # free checkpoints: the cost falls with every extra segment (the walk below would not end); the
        return 0.0, ts * math.exp(r / m)  # infimum is the limit tau -> 0, T_s e^(R/M), approached but not attained
    tau_inf = m * (1.0 + float(np.real(lambertw(-math.exp(-d / m - 1.0), 0))))

    def cost(n):
        return daly_expected_wall_time(ts, ts / n, d, r, m)

    n = max(1, round(ts / tau_inf)) if tau_inf > 0 else 1
    best_n, best = n, cost(n)
    for step in (-1, 1):  # walk each way while it improves (convex in n)
        k = n + step
        while k >= 1:
            c = cost(k)
            if not c < best:
                break
            best_n, best = k, c
            k += step
    return ts / best_n, best


def _avail_iv(save_s, mean_uptime_s, restart_s):
    return (_duration(save_s, "save_s"), _duration(mean_uptime_s, "mean_uptime_s"),
            _duration(restart_s, "restart_s", zero=True))


def availability(ckpt_period_s: float, save_s: float, mean_uptime_s: float, restart_s: float) -> float:
    """The availability model ``A(T_c) = T_f (1 - T_s/T_c) / (T_f + T_r + T_c/2)``.

    ``T_f`` (``mean_uptime_s``) is the mean time between global restarts, ``T_r`` the restart cost; on average
    half a checkpoint period of work is lost per restart.
    """
    ts, tf, tr = _avail_iv(save_s, mean_uptime_s, restart_s)
    tc = _duration(ckpt_period_s, "ckpt_period_s")
    if tc <= ts:
        raise UsageValueError(f"`ckpt_period_s` must exceed `save_s`, got {tc} <= {ts}")
    return (1 - ts / tc) / (1 + tr / tf + tc / 2 / tf)  # divided through by T_f: no sum overflows


def ckpt_period_optimal(save_s: float, mean_uptime_s: float, restart_s: float) -> float:
    """``T_c* = T_s + sqrt(T_s^2 + 2 T_s (T_f + T_r))``, the maximiser of :func:`availability`."""
    ts, tf, tr = _avail_iv(save_s, mean_uptime_s, restart_s)
    return ts + 2 * math.sqrt(ts) * math.sqrt(ts / 4 + tf / 2 + tr / 2)  # the same, with no square or sum overflowing


def optimal_availability(save_s: float, mean_uptime_s: float, restart_s: float) -> float:
    """``A* = 2 T_s T_f / T_c*^2``."""
    ts, tf, tr = _avail_iv(save_s, mean_uptime_s, restart_s)
    tc = ckpt_period_optimal(ts, tf, tr)
    return min(1.0, (2 * ts / tc) * (tf / tc))  # < 1 exactly; rounding gives 1 + 2e-16 at T_f = 1e300


def normalized_ttt(n_groups: int, r: int, mtbf_s: float, save_s: float, restart_s: float) -> float:
    """The paper's ``J(r) = S(N, r) / A*(mu(N, r) m)`` with ``S`` the :func:`overhead_lower_bound`."""
    n_groups, r = _nr(n_groups, r)
    mtbf_s = _duration(mtbf_s, "mtbf_s")
    mu = mu_paper(n_groups, r)
    return overhead_lower_bound(n_groups, r, mu) / optimal_availability(save_s, mu * mtbf_s, restart_s)


def r_star(n_groups: int) -> int:
    """The paper's optimal redundancy ``floor(log2 N + 0.833)`` (0.833 = Euler's gamma / ln 2)."""
    n_groups = as_int(n_groups, "n_groups", min_value=2)
    return int(math.floor(math.log2(n_groups) + R_STAR_OFFSET))
