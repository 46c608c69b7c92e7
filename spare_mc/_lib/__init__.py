"""Plumbing every layer may use (private): argument checkers, the version, provenance, resource budgets,
seeding, and the console script's Ctrl-C guard while the package loads. Imports nothing else of spare_mc.
"""
