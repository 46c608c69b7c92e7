"""Time to train: the timeline's configuration, running jobs, their results, the step-model theory that reads a
configuration (exact, classical/Daly) and the optimiser. Imports ``mc`` and below.
"""
