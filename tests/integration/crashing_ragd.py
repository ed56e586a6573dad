"""The real `ragd` command line with a crash plan: `python -m tests.integration.crashing_ragd
POINT[:N] ARGS...` runs `ragd ARGS...` with the process set to die of SIGKILL at the N-th
arrival at fault point POINT (tests/faults.py), which wraps the writer's parts through the
one seam production offers (ragd.stores.wrapping). Tests start this instead of `python -m ragd`.
"""

from __future__ import annotations

import sys

from ragd.cli import main
from tests.faults import FaultPlan

if __name__ == "__main__":
    sys.exit(main(sys.argv[2:], wrap=FaultPlan.parse(sys.argv[1])))
