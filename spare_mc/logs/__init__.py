"""Real failure logs: reading and checking them, replaying them, fitting failure models to them, synthetic logs.
Imports ``ttt`` and below.
"""
