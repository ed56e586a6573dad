"""Naming a model by what it computes, for the pipeline fingerprint and embedding keys.

A local model is named by a hash of the bytes of the files that decide its output, so
replacing them in place (a new distillation, a new quantisation) changes its name; a hub
model by its id. Pure functions of files; imports nothing from ragd but its errors.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from pathlib import Path

from ragd.errors import ModelLoadError


def hub_identity(model: str) -> str:
    """The name of a model fetched from the hub by id."""
    return f"hub:{model}"


def files_identity(directory: Path, files: Iterable[Path], *, hint: str) -> str:
    """`dir:<directory name>:<hash of the files' bytes>`; ModelLoadError (with `hint`)
    naming a file that cannot be read."""
    digest = hashlib.sha256()
    for path in files:
        try:
            with path.open("rb") as handle:
                for block in iter(lambda: handle.read(1 << 20), b""):
                    digest.update(block)
        except OSError as exc:
            raise ModelLoadError(
                f"cannot read model file {path}: {exc.strerror}", hint=hint
            ) from exc
    return f"dir:{directory.name}:{digest.hexdigest()[:16]}"
