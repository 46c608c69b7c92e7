"""Monte Carlo of the masking: the wipe-out Monte Carlo and ReCtlr (adaptive reordering) with its compute overhead.
Imports ``theory`` and below.
"""
