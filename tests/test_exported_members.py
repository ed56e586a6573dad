"""The public surface of the package is deliberate."""

from __future__ import annotations

import subprocess
import sys
from types import ModuleType

import ragd


def test_every_public_name_is_exported_and_all_is_sorted() -> None:
    public = {
        name
        for name in dir(ragd)
        if not name.startswith("_") and not isinstance(getattr(ragd, name), ModuleType)
    }

    assert public | {"__version__"} == set(ragd.__all__)
    assert list(ragd.__all__) == sorted(ragd.__all__)


def test_importing_ragd_does_not_import_lancedb() -> None:
    code = "import sys, ragd; print('lancedb' in sys.modules)"

    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)

    assert out.stdout.strip() == "False"
