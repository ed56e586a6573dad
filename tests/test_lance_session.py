"""The process's LanceDB: what importing it does to the rest of the process."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest


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


def test_lancedb_imports_without_the_rest_clients_api_classes_and_works() -> None:
    # A fresh interpreter: this one may have imported lancedb already.
    script = """
import sys, tempfile
from ragd.lance_session import import_lancedb
lancedb = import_lancedb()
api = sorted(m for m in sys.modules if m.startswith("lance_namespace_urllib3_client.api"))
table = lancedb.connect(tempfile.mkdtemp()).create_table("t", [{"vector": [1.0, 0.0], "n": 1}])
print(len(api), table.search([1.0, 0.0]).limit(1).to_list()[0]["n"])
"""
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=False
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["0", "1"]


@pytest.mark.parametrize(
    ("module", "printed"), [("light", "model skipped"), ("heavy", "model whole")]
)
def test_a_package_init_is_skipped_unless_a_module_needs_the_package_itself(
    tmp_path: Path, module: str, printed: str
) -> None:
    (tmp_path / "client" / "models").mkdir(parents=True)
    (tmp_path / "client" / "__init__.py").write_text("NAME = 'whole'\n")
    (tmp_path / "client" / "models" / "__init__.py").write_text("MODEL = 'model'\n")
    (tmp_path / "light.py").write_text("import client.models\n")
    # Its first import binds client.models under the skipped package; the retry must not.
    (tmp_path / "heavy.py").write_text("import client.models\nfrom client import NAME\n")
    script = f"""
from ragd.lance_session import import_skipping_init
imported = import_skipping_init("{module}", "client")
print(imported.client.models.MODEL, getattr(imported.client, "NAME", "skipped"))
"""
    result = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == printed
