"""The `ragd` console script's module, which every index worker imports first."""

from __future__ import annotations

import subprocess
import sys
from importlib.metadata import entry_points


def test_the_console_scripts_module_imports_no_command_line_until_it_runs() -> None:
    (script,) = entry_points(group="console_scripts", name="ragd")
    # A fresh interpreter, as a worker is: this one has imported the command line.
    probe = f"""
import sys
import {script.module}
print(sorted(m for m in ("ragd.cli", "click", "structlog", "lancedb") if m in sys.modules))
"""
    result = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"
