"""The model of the system: topology and failure domains, failure processes, layouts and their placement against
failure domains, and the paper's stated numbers. Imports ``_lib`` and ``_kernels``.
"""
