"""`python -m ragd` and the `ragd` console script: run the command line.

Imports nothing until it runs. Each index worker begins by importing the script that
started its parent (multiprocessing does that for a script, not for `python -m`); were
this the command line, every worker would import all of ragd, click and structlog
first: ~145 modules and 0.1-0.25 s it never uses.
"""


def run() -> None:
    """Run the command line and exit with its code."""
    from ragd.cli import run as run_command_line

    run_command_line()


if __name__ == "__main__":
    run()
