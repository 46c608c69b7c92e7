"""Time to train: the timeline's configuration (``config``), running jobs (``run``), their results (``results``), the
theory that reads a configuration (``period``: the theory checkpoint period; ``theory``: classical/Daly and the
closed-form ``J = S / A*``; ``exact_ttt``: the exact step model), the optimiser (``optimize``) and a run next to its
theory as ``spare-mc ttt`` reports it (``report``). Imports ``mc`` and below.
"""
