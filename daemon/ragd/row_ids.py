"""Chunk ids by LanceDB row id, held in memory by a long-lived reader of the vector table.

A vector search yields each hit's row id (`_rowid`) for free, but reading the hits' chunk_id
column is a take from the table's data files: 1.5-2 ms of a 5.5 ms search at 125k rows
(docs/performance.md). A reader that answers many queries, the daemon's, reads every row's
chunk id once, then only the new rows at each refresh, and maps row ids itself.

That leans on how LanceDB numbers rows: a row keeps its id, an id is never reused, and a row
written later (added, an upsert's new copy, a compaction's rewrite) gets an id above every
earlier one. Both of Lance's schemes do so: row addresses (fragment id, then offset; fragment
ids only grow) and stable row ids (a counter). tests/test_vectors.py checks it on the pinned
version through appends, upserts, deletes and compaction.

Imports no other ragd module.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

if TYPE_CHECKING:
    import pyarrow as pa

RowIdArray = npt.NDArray[np.uint64]


class ChunkIdsByRow:
    """Row ids in ascending order beside their chunk ids (~40 bytes a row)."""

    def __init__(self, rows: RowIdArray, chunk_ids: pa.Array) -> None:
        if (rows[1:] <= rows[:-1]).any():  # a scan reads in row id order: no copies then
            order = np.argsort(rows)
            rows, chunk_ids = rows[order], chunk_ids.take(order)
        self._rows: RowIdArray = rows
        self._ids = chunk_ids

    @classmethod
    def empty(cls) -> ChunkIdsByRow:
        """Holding no rows."""
        import pyarrow as pa

        return cls(np.empty(0, dtype=np.uint64), pa.array([], type=pa.string()))

    @classmethod
    def from_arrow(cls, table: pa.Table) -> ChunkIdsByRow:
        """From a scan with `_rowid` and `chunk_id` columns, in any order."""
        rows = table["_rowid"].to_numpy().astype(np.uint64, copy=False)
        return cls(rows, table["chunk_id"].combine_chunks())

    def __len__(self) -> int:
        return len(self._rows)

    @property
    def highest(self) -> int | None:
        """The highest row id held; a newer row has a higher one."""
        return int(self._rows[-1]) if len(self._rows) else None

    def extend(self, newer: ChunkIdsByRow) -> None:
        """Add rows written after every row held (their row ids are all higher)."""
        import pyarrow as pa

        if not len(newer):
            return
        highest = self.highest
        if highest is not None and int(newer._rows[0]) <= highest:
            raise ValueError(f"row id {int(newer._rows[0])} is not above {highest}")
        # One copy per refresh that found new rows: ~1 ms at 125k rows.
        self._rows = np.concatenate([self._rows, newer._rows])
        self._ids = pa.concat_arrays([self._ids, newer._ids])

    def chunk_ids(self, rows: RowIdArray) -> list[str | None]:
        """The chunk id of each row id, in order; None for a row id not held."""
        import pyarrow as pa

        if not len(self._rows):
            return [None] * len(rows)
        at = np.minimum(np.searchsorted(self._rows, rows), len(self._rows) - 1)
        held = self._rows[at] == rows
        ids = self._ids.take(pa.array(at)).to_pylist()
        return [str(i) if h else None for i, h in zip(ids, held.tolist(), strict=True)]
