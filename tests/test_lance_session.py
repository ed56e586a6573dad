"""The process's LanceDB: what importing it does to the rest of the process."""

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


def test_what_importing_lancedb_leaves_alive_is_frozen_out_of_later_collections() -> None:
    # A fresh interpreter: this one may have imported lancedb already.
    script = """
import gc
from ragd.lance_session import import_lancedb
import_lancedb()
frozen = gc.get_freeze_count()
import_lancedb()
print(frozen, gc.get_freeze_count(), len(gc.get_objects()))
"""
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=False
    )
    assert result.returncode == 0, result.stderr
    frozen, frozen_after_second_call, walked = map(int, result.stdout.split())
    assert frozen > 50_000  # ~100k with lancedb 0.2x and pydantic 2
    assert frozen_after_second_call == frozen
    assert walked < 1_000
