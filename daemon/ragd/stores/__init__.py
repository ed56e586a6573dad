"""The three stores of a data directory and the durable queue.

`manifest` (with `manifest_reader` and `manifest_schema`) is state.db, the source of truth,
whose values are `records`; `vectors` is the LanceDB table and `keywords` the Tantivy
index (with its `identifiers` terms), both derived from it; `jobs` is the work queue;
`data_dir` lays them out and opens them for the one writer, through `wrapping`'s seam (where
tests inject faults); `agreement` checks and restores that the three list the same chunks.
"""
