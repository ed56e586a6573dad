"""`python -m ragd` runs the command line."""

from ragd.cli import run

run()
