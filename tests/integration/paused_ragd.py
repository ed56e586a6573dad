"""The real `ragd` command line with a writer a test can hold: `python -m
tests.integration.paused_ragd PAUSE_FILE ARGS...` runs `ragd ARGS...` with a fault plan
(tests/faults.py) whose wrapper of the daemon writer's job queue hands out no job while
PAUSE_FILE exists, so a test sees what the daemon reports of a change it has not applied
yet. Tests start this instead of `python -m ragd`.
"""

from __future__ import annotations

import sys
from pathlib import Path

from ragd.cli import main
from tests.faults import FaultPlan

if __name__ == "__main__":
    sys.exit(main(sys.argv[2:], wrap=FaultPlan(pause_file=Path(sys.argv[1]))))
