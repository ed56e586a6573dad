"""The write path: bringing the stores in step with the sources, doing only what changed.

`indexer` decides per document (`file_outcomes` for files, `entries` for CMS deliveries);
`preparing` reads, hashes, parses (`parsers`) and chunks (`chunking`, `pipeline`) them, on
worker processes for big passes (`workers`), a crash while parsing remembered
(`parse_guard`); `batches` writes in crash-safe order under one `passes` state and
`report`s what a pass did. `entries` and `applied_polls` apply CMS deliveries and polls,
`second_stage` fills the second stage's vectors, `reembed` re-embeds everything after a
model change.
"""
