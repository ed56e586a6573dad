"""nbformat behind one adapter: a Jupyter notebook's JSON read, upgraded to v4 and validated.

Owns turning a notebook's text into the v4 notebook it describes, through nbformat's
public `reader.reads`, `convert` and `validate`: version 3 notebooks (IPython 2) are
upgraded, so the caller sees one shape; anything that is not a notebook, or fails the
format's JSON schema, is a ValueError with a one-line reason. Not `nbformat.reads`: it
logs an invalid notebook as an error and returns it anyway. The size of the text is
bounded by the caller (the folder reader's `max_file_bytes`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import nbformat
import nbformat.reader

# v1 and v2 are IPython 0.x notebooks (2011); a JSON object without an `nbformat` key is
# read by nbformat as v1, so accepting v1 would index any JSON file as an empty notebook.
_READ_VERSIONS = frozenset({3, 4})
_MAX_REASON_CHARS = 200


def read_notebook(text: str) -> Mapping[str, Any]:
    """The notebook as v4 JSON values (cells' sources joined); ValueError saying why not."""
    try:
        node = nbformat.reader.reads(text)  # type: ignore[no-untyped-call]  # untyped in 5.11
    except nbformat.reader.NotJSONError as exc:
        raise ValueError(f"not valid JSON ({_one_line(exc.__cause__ or exc)})") from None
    except (nbformat.NBFormatError, nbformat.ValidationError) as exc:
        raise ValueError(f"not a Jupyter notebook ({_one_line(exc)})") from None
    except RecursionError:
        raise ValueError("not a Jupyter notebook (its JSON nests too deep)") from None
    except (AttributeError, KeyError, TypeError) as exc:  # JSON, but not an object of cells
        raise ValueError(
            f"not a Jupyter notebook ({type(exc).__name__}: {_one_line(exc)})"
        ) from None
    major = node.get("nbformat")
    if major not in _READ_VERSIONS:
        raise ValueError(
            "not a Jupyter notebook (no nbformat version 3 or 4)"
            if major is None
            else f"unsupported notebook format version {major!r} (ragd reads 3 and 4)"
        )
    try:
        notebook = nbformat.convert(node, 4)  # type: ignore[no-untyped-call]
        _give_cells_ids(notebook)
        nbformat.validate(notebook)
    except RecursionError:
        raise ValueError("invalid notebook (its JSON nests too deep)") from None
    except (nbformat.ValidationError, ValueError, AttributeError, KeyError, TypeError) as exc:
        raise ValueError(f"invalid notebook ({_one_line(exc)})") from None
    result: Mapping[str, Any] = notebook
    return result


def _give_cells_ids(notebook: Any) -> None:
    # `validate` repairs a v4.5 notebook's missing or repeated cell ids with a warning
    # (an error under pytest); ragd never writes notebooks back, so any unique id will do.
    # Not `validator.normalize`: it deep-copies the notebook, outputs and all.
    if notebook.get("nbformat_minor", 0) < 5:
        return
    seen: set[object] = set()
    for number, cell in enumerate(notebook.get("cells", ())):
        if cell.get("id") in seen or "id" not in cell:
            cell["id"] = f"ragd-cell-{number}"
        seen.add(cell["id"])


def _one_line(exc: BaseException) -> str:
    # jsonschema's messages run to many lines and quote the offending instance.
    lines = str(exc).strip().splitlines()
    line = lines[0].strip() if lines else type(exc).__name__
    if len(line) > _MAX_REASON_CHARS:
        line = line[: _MAX_REASON_CHARS - 1].rstrip() + "…"
    return line
