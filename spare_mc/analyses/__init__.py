"""The studies: the shared study engine, sensitivity, calibration, dynamic checkpointing, repair, the phase map,
failure domains, real clusters, and ``reproduce`` (with its single tables, :mod:`spare_mc.analyses.tables`).
Imports ``plots`` and below.
"""
