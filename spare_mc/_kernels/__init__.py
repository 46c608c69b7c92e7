"""The numba kernels (private): plain loops over arrays and scalars, writing into outputs, with no validation
and no I/O, and the draw primitives they share. ``cache`` keeps numba's on-disk cache honest across modules;
``slots`` lays out the kernels' packed arrays from lists of names (the layouts: ``timeline_layout``,
``rectlr_layout``, ``records``). Imports only ``_lib``.
"""
