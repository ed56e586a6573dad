"""`python -m ragd` runs the command line."""

from ragd.cli import run

if __name__ == "__main__":  # not when a worker process imports the parent's main module
    run()
