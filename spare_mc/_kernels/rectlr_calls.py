"""ReCtlr's two entry points into the timeline, passed to it as first-class functions (issue 38: the cold start).

The timeline calls ReCtlr at a detection (:func:`~spare_mc._kernels.rectlr.rectlr_step`) and at a restart or a
rejoin (:func:`~spare_mc._kernels.rectlr.reset_state`). Called directly, numba compiles those kernels, and
everything they call, while it types the timeline, and links their code into the timeline's: a first SPARe job
compiled ReCtlr and then the timeline, one after the other (about 27 s on 2 cores). Passed as arguments of
numba's ``FunctionType``, the two are opaque to the timeline: it compiles without them (in any process: a
CKPT-only or Rep+CKPT job never compiles ReCtlr at all), and a first SPARe job can compile the two halves in two
processes at once (:mod:`spare_mc.ttt.cold_start`).

- :data:`step` and :data:`reset` are ReCtlr's kernels as such functions: numba dispatchers that numba types as
  ``FunctionType`` of one signature (:data:`STEP_SIG`, :data:`RESET_SIG`) and whose compiled code is the kernels'
  own (``rectlr.rectlr_step`` and ``rectlr.reset_state`` compile it, with their flags, into their cache).
- :data:`no_step` and :data:`no_reset` stand in for them in CKPT-only and Rep+CKPT jobs, which never call them
  (the timeline calls ReCtlr only for SPARe). They compile in well under a second. ``no_step`` returns -1, which
  the timeline reports as "ReCtlr found no assignment", so a SPARe job given it by mistake fails loudly.

The price, measured (2026-12-07, 2 cores, alternated with the direct calls): a paper SPARe job 1.63 against 1.61
ms (fastest of 5 batches of 100 jobs; ~3,000 calls a job through a pointer, which LLVM can no longer inline), every
kind of job of ``benchmarks/bench_options_revision.py`` 0.95-1.01x, median 0.97x (Rep+CKPT 0.96x: about 20 us a
job converting and typing the two arguments). The conversion is cheap only
because :class:`_FirstClass` keeps what numba asks of it at every call (the compile result and the two addresses:
70 us a job through numba's own lookups, which hash the whole signature).

If numba stops honouring ``_numba_type_`` here, the arguments are typed as plain dispatchers and the timeline
calls them directly again (compiling their Python functions with numba's default flags): the same results,
compiled the old way.
"""

from __future__ import annotations

import contextlib
import warnings

from numba import njit, types
from numba.core.errors import NumbaExperimentalFeatureWarning
from numba.core.registry import CPUDispatcher

from . import rectlr
from .cache import drop_if_dependencies_changed
from .rectlr_layout import Saved, State

# the stand-ins below are this module's only kernels; their signatures hold ReCtlr's records
drop_if_dependencies_changed(__file__, ("rectlr.py", "rectlr_layout.py"))


_A1 = types.Array(types.int64, 1, "C")
_A2 = types.Array(types.int64, 2, "C")
#: ReCtlr's state inside the timeline (:class:`~spare_mc._kernels.rectlr_layout.State`: writable copies)
STATE_T = types.NamedTuple([_A2] * 4 + [_A1] * 4, State)
#: The fully live state a restart returns to (:class:`~spare_mc._kernels.rectlr_layout.Saved`)
SAVED_T = types.NamedTuple([_A1] * 4 + [types.int64], Saved)
#: ``rectlr_step(newly, n_new, from_scratch, n, r, st) -> int64``
STEP_SIG = types.int64(_A1, types.int64, types.boolean, types.int64, types.int64, STATE_T)
#: ``reset_state(st, saved, r) -> None``
RESET_SIG = types.none(STATE_T, SAVED_T, types.int64)


class _Library:
    """What numba's conversion of a first-class function asks of a compiled library: an address by name."""

    __slots__ = ("_addr",)

    def __init__(self, addr: dict):
        self._addr = addr

    def get_pointer_to_function(self, name):
        return self._addr[name]


class _Compiled:
    """What numba's conversion asks of a compile result: its function descriptor (the symbols' names) and library,
    and the address of its C wrapper (the wrapper-address protocol)."""

    __slots__ = ("c_addr", "fndesc", "library")

    def __init__(self, cres):
        names = (cres.fndesc.llvm_func_name, cres.fndesc.llvm_cfunc_wrapper_name)
        self.fndesc = cres.fndesc
        self.library = _Library({n: cres.library.get_pointer_to_function(n) for n in names})
        self.c_addr = self.library.get_pointer_to_function(names[1])


class _FirstClass(CPUDispatcher):
    """A numba dispatcher that numba types as a first-class function of one signature (``FunctionType``) when it
    is passed to a kernel, so that the kernel compiles without it; it compiles (or loads from the cache) that
    signature when the kernel is first called with it.

    At every such call numba converts it to a function pointer: it asks for ``get_compile_result(sig)`` and the
    addresses of the compiled code (:func:`numba.experimental.function_type._get_jit_address`) and for
    ``__wrapper_address__()``. Both are kept after the first call; numba's own path looks them up each time."""

    @property
    def _numba_type_(self):
        return self._fc_type

    def __wrapper_address__(self):
        return self._compiled().c_addr

    def get_compile_result(self, sig):
        known = self._fc_known  # the signature objects already compared (numba passes the same one every call)
        if id(sig) in known or (sig == self._fc_sig and known.setdefault(id(sig), sig) is sig):
            return self._compiled()
        return super().get_compile_result(sig)

    def _compiled(self):
        if self._fc_compiled is None:  # compiled by the kernel's own dispatcher, which may hold it already (ReCtlr's
            # initial assignment calls rectlr_step): one compiled copy, not two. By its argument types first: numba's
            # cache keys a callee's compilation by them, and get_compile_result compiles by the whole signature, a
            # key of its own (a second copy, compiled again in every process)
            kernel = self._fc_kernel
            kernel.compile(tuple(self._fc_sig.args))
            self._fc_compiled = _Compiled(kernel.get_compile_result(self._fc_sig))
        return self._fc_compiled


def _first_class(kernel, sig) -> _FirstClass:
    """The numba kernel ``kernel`` typed as a first-class function of signature ``sig``: a :class:`_FirstClass`
    dispatcher of its Python function whose compiled code is ``kernel``'s own for ``sig``."""
    d = njit(kernel.py_func)  # never compiles: get_compile_result hands numba the kernel's code
    d.__class__ = _FirstClass  # the same object layout: only the type numba sees and the conversion change
    d._fc_kernel, d._fc_sig, d._fc_type, d._fc_known, d._fc_compiled = kernel, sig, types.FunctionType(sig), {}, None
    return d


def _no_step(newly, n_new, from_scratch, n, r, st):
    """CKPT-only's and Rep+CKPT's ReCtlr step, never called: -1 ("no assignment") if it is."""
    return -1


def _no_reset(st, saved, r):
    """CKPT-only's and Rep+CKPT's ReCtlr reset, never called: nothing to reset."""


#: :func:`~spare_mc._kernels.rectlr.rectlr_step` as a first-class function
step = _first_class(rectlr.rectlr_step, STEP_SIG)
#: :func:`~spare_mc._kernels.rectlr.reset_state` as a first-class function
reset = _first_class(rectlr.reset_state, RESET_SIG)
no_step = _first_class(njit(cache=True, _nrt=False)(_no_step), STEP_SIG)
no_reset = _first_class(njit(cache=True, _nrt=False)(_no_reset), RESET_SIG)
_PAIRS = ((no_step, no_reset), (step, reset))


@contextlib.contextmanager
def quiet():
    """Silence numba's warning that first-class functions are experimental, which it gives at every compilation of a
    kernel that takes them (the timeline): they are used here on purpose, with a test of every path they take
    (tests/test_rectlr_calls.py). Only inside the block, so that a user's own first-class functions still warn."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="First-class function type feature is experimental",
                                category=NumbaExperimentalFeatureWarning)
        yield


def calls(spare: bool) -> tuple:
    """The timeline's ``(step, reset)`` arguments: ReCtlr's for a SPARe job, the stand-ins otherwise, compiled
    (or loaded from numba's cache) at the first call, before the kernel's: a first SPARe job compiles them while a
    second process compiles the kernel (:mod:`spare_mc.ttt.cold_start`)."""
    pair = _PAIRS[spare]
    if pair[0]._fc_compiled is None or pair[1]._fc_compiled is None:
        pair[0]._compiled()
        pair[1]._compiled()
    return pair
