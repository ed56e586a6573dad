"""The process's LanceDB: its import leaves the rest of the process as it was."""

from __future__ import annotations

import subprocess
import sys


def test_importing_lancedb_leaves_pydantic_validation_in_place() -> None:
    # A fresh interpreter: this one may have imported lancedb already.
    script = """
import pydantic
before = pydantic.validate_call
from ragd.lance_session import import_lancedb
lancedb = import_lancedb()
assert pydantic.validate_call is before, "validate_call was not restored"

@pydantic.validate_call
def double(x: int) -> int:
    return 2 * x

try:
    double("not a number")
except pydantic.ValidationError:
    print("validated", lancedb.__name__)
"""
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=False
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "validated lancedb"
