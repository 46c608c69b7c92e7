"""``python -m spare_mc.cli``: the ``spare-mc`` command."""

import sys

from . import main

sys.exit(main())
