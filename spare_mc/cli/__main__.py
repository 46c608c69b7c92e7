"""``python -m spare_mc.cli``: the ``spare-mc`` command."""

import sys

from .commands import main

sys.exit(main())
