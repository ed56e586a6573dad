"""The `ragd` command line: a thin shell over the core.

`commands` parses arguments, runs the core and is the one place where errors become
one-line messages and exit codes; `text` formats what people read; `daemon_client` asks a
running `ragd serve` for its status report.
"""

from ragd.cli.commands import cli, main, run

__all__ = ["cli", "main", "run"]
