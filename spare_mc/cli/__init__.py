"""The command line, ``spare-mc <command> ...``: a parser, one handler and one formatter per command.
Imports everything below; nothing imports it.
"""

from .commands import main

__all__ = ["main"]
