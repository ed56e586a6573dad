"""pyarrow behind one adapter: the Arrow data ragd hands LanceDB and reads back from it.

Owns the Arrow schema of the chunk vector table (chunk_id, doc_id, a fixed-size list of
float32), building a batch of rows from plain ids and a float32 matrix, and
`ChunkIdsByRow`, the chunk ids a long-lived reader keeps by LanceDB row id; and which
allocator Arrow's buffers come from. Besides `ragd serve` choosing that allocator, only
`ragd.adapters.lancedb` imports this module; pyarrow is imported on first use, since
lancedb imports it anyway and commands that never touch vectors need neither.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

if TYPE_CHECKING:
    import pyarrow as pa

RowIdArray = npt.NDArray[np.uint64]


def use_system_allocator() -> None:
    """Allocate Arrow buffers with the C library's malloc from now on.

    pyarrow's default pool (mimalloc or jemalloc, by build) keeps the pages a freed buffer
    used for its own later allocations. In a daemon that converts rows on every commit
    and query they pile up (~100 MiB after four minutes of the soak). From malloc they
    go where the rest of the process's memory goes, which `ragd.adapters.allocator`
    limits and trims. Buffers allocated before the call stay in the old pool.
    """
    import pyarrow as pa

    pa.set_memory_pool(pa.system_memory_pool())


def vector_schema(dim: int) -> pa.Schema:
    """The Arrow schema of the chunk table for vectors of `dim` floats."""
    import pyarrow as pa

    return pa.schema(
        [
            pa.field("chunk_id", pa.string(), nullable=False),
            pa.field("doc_id", pa.string(), nullable=False),
            pa.field("vector", pa.list_(pa.float32(), dim)),
        ]
    )


def vector_dim(schema: pa.Schema) -> int | None:
    """The vector width of a chunk table's schema; None if it is not that schema."""
    import pyarrow as pa

    if not {"chunk_id", "doc_id", "vector"} <= set(schema.names):
        return None
    vector_type = schema.field("vector").type
    if isinstance(vector_type, pa.FixedSizeListType) and vector_type.value_type == pa.float32():
        return int(vector_type.list_size)
    return None


def vector_batch(
    chunk_ids: Sequence[str], doc_ids: Sequence[str], matrix: npt.NDArray[np.float32]
) -> pa.Table:
    """Rows of the chunk table: one per id, its vector the matching row of `matrix`."""
    import pyarrow as pa

    dim = matrix.shape[1]
    return pa.Table.from_arrays(
        [
            pa.array(chunk_ids, type=pa.string()),
            pa.array(doc_ids, type=pa.string()),
            pa.FixedSizeListArray.from_arrays(pa.array(matrix.ravel()), dim),
        ],
        schema=vector_schema(dim),
    )


def column_values(table: pa.Table, name: str) -> Iterator[Any]:
    """A column of a query result as Python values, converted one Arrow chunk at a time
    (a column of 125k ids as one list of str is ~10 MiB; its Arrow form is ~5)."""
    for chunk in table[name].chunks:
        yield from chunk.to_pylist()


class ChunkIdsByRow:
    """Row ids in ascending order beside their chunk ids (~40 bytes a row).

    A vector search yields each hit's row id for free, but reading the hits' chunk_id
    column is a take from the table's data files. A reader of many queries reads every
    row's chunk id once and then only newer rows' (`ragd.adapters.lancedb` says when).
    """

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
