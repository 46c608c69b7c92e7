"""The studies: the shared study engine, sensitivity, calibration, dynamic checkpointing, repair, the phase map,
failure domains, real clusters, and ``reproduce``. Imports ``plots`` and below.
"""
