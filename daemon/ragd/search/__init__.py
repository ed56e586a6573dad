"""The read path: answering queries from the stores, and saying what can be trusted.

`searcher` retrieves (BM25, vectors, or both), fuses (`fusion`), joins hits with the
manifest, flags stale ones (`staleness`) and abstains on weak evidence (`abstention`);
`sections` expands a hit to its section; `status` is the freshness report of
`ragd status`; `evaluation` measures retrieval on a gold set.
"""
