"""Theory that needs no simulation: the paper's closed forms, checkpoint-period formulas and the exact laws of the
wipe-out index. Imports ``model`` and below.
"""
