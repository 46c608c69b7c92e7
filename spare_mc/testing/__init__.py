"""The slow, obviously correct twins of the fast kernels: importable by a user who changes a kernel and wants its
oracle. They need the test extras (simpy, networkx): ``pip install 'spare_mc[test]'``. Imports ``ttt`` and below;
nothing in the package imports it.
"""
