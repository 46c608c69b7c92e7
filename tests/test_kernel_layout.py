"""The kernels' data layout: slots laid out from lists of names, records instead of long argument lists."""

import ast
import pathlib

import pytest

import spare_mc
from spare_mc._kernels import rectlr_layout, timeline_layout
from spare_mc._kernels.slots import define

KERNELS = pathlib.Path(spare_mc.__file__).parent / "_kernels"
#: the modules whose kernels take records (the timeline's and ReCtlr's)
RECORD_MODULES = ("ckpt_restart.py", "failure_source.py", "job_steps.py", "live_set.py", "rectlr.py", "timeline.py",
                  "timeline_helpers.py", "unit_clocks.py")


def test_slots_are_counted_from_the_names_and_a_name_is_defined_once():
    ns = {}
    assert define(ns, "N_A", "A_X A_Y", ("A_RUN", 4), "A_Z") == {"A_X": 0, "A_Y": 1, "A_RUN": 2, "A_Z": 6}
    assert ns["N_A"] == 7
    with pytest.raises(ValueError, match="slot A_Y is defined twice"):
        define({}, "N_A", "A_X A_Y A_Y")
    with pytest.raises(ValueError, match="slot A_X is defined twice"):
        define(ns, "N_B", "A_X")  # already in the module: another array's slot
    with pytest.raises(ValueError, match="N_A is defined twice"):
        define(ns, "N_A", "B_X")
    with pytest.raises(TypeError, match="a run of slots"):
        define({}, "N_C", ("C_RUN", -1))


def test_every_array_of_the_layouts_holds_its_slots():
    """Each size is the count of its array's slots and every slot lies inside it (``define`` checks that they tile
    it at import); the work blocks are aligned with the results they are kept into."""
    arrays = [(timeline_layout, size, prefix) for size, prefix in
              (("N_RES", "R_"), ("N_P", "P_"), ("N_PF", "PF_"), ("N_J", "J_"), ("N_Q", "Q_"), ("N_GB", "GB_"),
               ("N_UB", "UB_"), ("N_UF", "UF_"), ("N_W", "W_"))]
    arrays += [(rectlr_layout, size, prefix) for size, prefix in
               (("N_OUT", "O_"), ("N_TRIAL_COLS", "T_"), ("N_LOG_COLS", "L_"))]
    for mod, size, prefix in arrays:
        slots = {k: v for k, v in vars(mod).items() if k.startswith(prefix) and isinstance(v, int)
                 and not (prefix == "P_" and k.startswith("PF_"))}
        blocks = ("W_SINCE", "W_MEM", "W_PERSIST")  # W's blocks, each of N_W slots
        assert slots and all(0 <= v < getattr(mod, size) for k, v in slots.items() if k not in blocks), size
    tl = timeline_layout
    assert list(tl.RES_SLOTS.values()) == list(range(tl.N_RES))
    assert (tl.W_SINCE, tl.W_MEM, tl.W_PERSIST, tl.N_W_BLOCKS) == (0, tl.N_W, 2 * tl.N_W, 3 * tl.N_W)
    assert tl.PF_RATE + tl.N_CLASSES == tl.N_PF and tl.P_CLASS_END + tl.N_CLASSES == tl.N_P
    assert [tl.R_USEFUL + w for w in tl.WORK_SLOTS.values()] == [tl.R_USEFUL, tl.R_REDUNDANT, tl.R_PATCH,
                                                                  tl.R_ALLREDUCE, tl.R_RECTLR]


@pytest.mark.parametrize("name", RECORD_MODULES)
def test_no_kernel_takes_more_than_ten_parameters(name):
    """The timeline's and ReCtlr's kernels take their state in records (at most 10 parameters; most take 8 or
    fewer)."""
    tree = ast.parse((KERNELS / name).read_text())
    long = [(f.name, len(f.args.args)) for f in tree.body
            if isinstance(f, ast.FunctionDef) and f.decorator_list and len(f.args.args) > 10]
    assert not long, f"{name}: {long}"


@pytest.mark.parametrize("name", RECORD_MODULES)
def test_kernel_modules_stay_under_a_thousand_lines(name):
    assert len((KERNELS / name).read_text().splitlines()) < 1000
