"""The layout of state.db: its tables, the SQL the manifest's queries share, and opening it.

`manifest_reader` owns every read and `manifest` every write; this module owns what the
file looks like and how a connection to it is set up (WAL, synchronous=FULL for the writer,
read-only URIs for readers), so the schema can be read in one place.
"""

from __future__ import annotations

import sqlite3
from operator import attrgetter
from pathlib import Path

from ragd.errors import StoreError
from ragd.stores.records import RACY_SECONDS, SETTLED

# 2: chunks.second_key; 3: documents.chunk_count, what /metrics counts; 4: chunks.page and
# the includes table; 5: chunks.second_pending and the document_states counts
SCHEMA_VERSION = 5

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS documents (
    doc_id TEXT PRIMARY KEY,
    source TEXT NOT NULL,
    key TEXT NOT NULL,
    uri TEXT NOT NULL,
    title TEXT NOT NULL DEFAULT '',
    size INTEGER,
    mtime_ns INTEGER,
    content_hash TEXT,
    fingerprint TEXT,
    status TEXT NOT NULL CHECK (status IN ('indexed', 'pending', 'failed', 'deleted')),
    error TEXT,
    first_seen_at TEXT NOT NULL,
    indexed_at TEXT,
    checked_at TEXT,
    chunk_count INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS documents_by_source ON documents (source, key);
CREATE TABLE IF NOT EXISTS chunks (
    chunk_id TEXT PRIMARY KEY,
    doc_id TEXT NOT NULL,
    ordinal INTEGER NOT NULL,
    heading_path TEXT NOT NULL,
    text TEXT NOT NULL,
    embed_key TEXT NOT NULL,
    second_key TEXT,
    page INTEGER,
    second_pending INTEGER
);
CREATE INDEX IF NOT EXISTS chunks_by_doc ON chunks (doc_id, ordinal);
CREATE INDEX IF NOT EXISTS chunks_by_embed_key ON chunks (embed_key);
CREATE TABLE IF NOT EXISTS vectors (embed_key TEXT PRIMARY KEY, vector BLOB NOT NULL);
CREATE TABLE IF NOT EXISTS entry_versions (doc_id TEXT PRIMARY KEY, version TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS listing_digests (
    source TEXT PRIMARY KEY,
    fingerprint TEXT NOT NULL,
    digest TEXT NOT NULL
);
CREATE TRIGGER IF NOT EXISTS insert_forgets_listing AFTER INSERT ON documents
BEGIN DELETE FROM listing_digests WHERE source = NEW.source; END;
CREATE TRIGGER IF NOT EXISTS update_forgets_listing AFTER UPDATE ON documents
BEGIN DELETE FROM listing_digests WHERE source IN (OLD.source, NEW.source); END;
CREATE TRIGGER IF NOT EXISTS delete_forgets_listing AFTER DELETE ON documents
BEGIN DELETE FROM listing_digests WHERE source = OLD.source; END;
"""

# listing_digests: per source, the digest (ragd.stores.records.listing_digest) of the one listing
# in which every document's stat vouches for it, so a pass that lists exactly that can pass
# over the whole source at once. It summarises the documents table, so any change to a
# row of the source forgets it; triggers, not the manifest's methods, so that no writer
# (an older ragd, a repair by hand) can leave a stale one. They fire on two row writes per
# document written, under a microsecond each.

# A document's checked_at is the later of its own and its source's last complete scan
# (meta key "checked:<source>"), if that scan came after the document was first seen:
# a no-op pass over 38k files then writes one row instead of 38k.
SELECT_DOCUMENTS = (
    "SELECT d.doc_id, d.source, d.key, d.uri, d.title, d.size, d.mtime_ns, d.content_hash, "
    "d.fingerprint, d.status, d.error, d.first_seen_at, d.indexed_at, "
    "COALESCE(MAX(d.checked_at, s.value), s.value, d.checked_at), "
    "(SELECT COUNT(*) FROM chunks c WHERE c.doc_id = d.doc_id) "
    "FROM documents d LEFT JOIN meta s "
    "ON s.key = 'checked:' || d.source AND s.value >= d.first_seen_at"
)

# One row per document write; first_seen_at is set once, by whichever write creates the row.
UPSERT_DOCUMENT_SQL = (
    "INSERT INTO documents (doc_id, source, key, uri, title, size, mtime_ns, "
    "content_hash, fingerprint, status, error, first_seen_at, indexed_at, "
    "checked_at, chunk_count) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, "
    "CASE WHEN ?10 = 'indexed' THEN ?12 END, ?13, ?14) "
    "ON CONFLICT (doc_id) DO UPDATE SET uri = excluded.uri, title = excluded.title, "
    "size = excluded.size, mtime_ns = excluded.mtime_ns, "
    "content_hash = excluded.content_hash, fingerprint = excluded.fingerprint, "
    "status = excluded.status, error = excluded.error, "
    "indexed_at = COALESCE(excluded.indexed_at, indexed_at), "
    "checked_at = excluded.checked_at, chunk_count = excluded.chunk_count"
)
# ?1 to ?11 of UPSERT_DOCUMENT_SQL, from a DocumentWrite; ?12 is now, ?13 the pass's start,
# ?14 the number of its chunks (the commit replaces them all).
UPSERT_DOCUMENT_FIELDS = attrgetter(
    "doc_id", "source", "key", "uri", "title", "size", "mtime_ns", "content_hash", "fingerprint",
    "status", "error",
)  # fmt: skip

SETTLED_SQL = f"status IN ({', '.join(repr(status) for status in SETTLED)})"


def vouch_before_sql(checked_at: str) -> str:
    """SQL for the newest mtime (ns) a stat can vouch for, given when the row was checked:
    ragd.stores.records.stat_vouches, for 38k rows at once."""
    return f"((julianday({checked_at}) - 2440587.5) * 86400.0 - {RACY_SECONDS}) * 1e9"


# ?3 is the bound for the source's oldest check: files older than that (most, on a no-op)
# skip the per-row date arithmetic, a third of file_states' time.
STAT_VOUCHES_SQL = (
    f"{SETTLED_SQL} AND fingerprint = ?1 "
    f"AND (mtime_ns < ?3 OR mtime_ns < {vouch_before_sql('checked_at')})"
)


_SECOND_KEY_INDEX = "CREATE INDEX IF NOT EXISTS chunks_by_second_key ON chunks (second_key)"

# Schema 5: the chunks still without a stored second-stage vector carry second_pending = 1,
# kept by triggers on every path that writes chunks or vectors (a pass, a fill, a
# re-embed, a repair by hand), so the filler's work, its backlog and the report's
# coverage are read from two partial indexes, in proportion to what is missing, not by
# joining every chunk to the vectors. A vector inserted for a first-stage key costs one
# probe of chunks_by_second_key that finds nothing.
_NO_SECOND_VECTOR = "NOT EXISTS (SELECT 1 FROM vectors v WHERE v.embed_key = {key})"
_SECOND_PENDING = f"""
CREATE INDEX IF NOT EXISTS chunks_second_pending ON chunks (doc_id, ordinal)
    WHERE second_pending = 1;
CREATE INDEX IF NOT EXISTS chunks_without_second ON chunks (doc_id) WHERE second_key IS NULL;
CREATE TRIGGER IF NOT EXISTS chunk_awaits_second AFTER INSERT ON chunks
WHEN NEW.second_key IS NOT NULL AND {_NO_SECOND_VECTOR.format(key="NEW.second_key")}
BEGIN UPDATE chunks SET second_pending = 1 WHERE rowid = NEW.rowid; END;
CREATE TRIGGER IF NOT EXISTS chunk_rekeyed AFTER UPDATE OF second_key ON chunks
BEGIN UPDATE chunks SET second_pending = CASE WHEN NEW.second_key IS NOT NULL
    AND {_NO_SECOND_VECTOR.format(key="NEW.second_key")} THEN 1 END WHERE rowid = NEW.rowid; END;
CREATE TRIGGER IF NOT EXISTS vector_stored AFTER INSERT ON vectors
BEGIN UPDATE chunks SET second_pending = NULL
    WHERE second_key = NEW.embed_key AND second_pending = 1; END;
CREATE TRIGGER IF NOT EXISTS vector_dropped AFTER DELETE ON vectors
BEGIN UPDATE chunks SET second_pending = 1 WHERE second_key = OLD.embed_key; END;
"""

# When a document was last confirmed as what its source holds, as the staleness rule reads
# it (`checked_at or indexed_at`), never NULL so that it sorts and compares as text. Queries
# must spell it exactly so for SQLite to use documents_by_confirmation.
CONFIRMED_AT_SQL = "COALESCE(checked_at, indexed_at, '')"

# Schema 3: what every /metrics scrape counts (ragd.stores.manifest_counts) is read from
# these rather than from the rows: documents and their chunks by state (chunk_count, so
# that counting chunks per source is not a pass over every chunk), and documents in order
# of confirmation with when they were first seen (the oldest confirmation, and those a
# max_age flags).
_COUNTING_INDEXES = f"""
CREATE INDEX IF NOT EXISTS documents_by_state
    ON documents (source, status, fingerprint, chunk_count);
CREATE INDEX IF NOT EXISTS documents_by_confirmation
    ON documents (source, {CONFIRMED_AT_SQL}, first_seen_at, status);
"""

# Documents and their chunks per (source, status, fingerprint), kept by triggers on every
# write of a document (schema 5): /metrics and `ragd status` read a few rows where a
# count over documents_by_state visits every document (0.1-0.2 s at a million). The
# fingerprint is '' for none, so that the key has no NULL. Rows whose count fell to 0
# stay; readers skip them.
_STATE_KEY = "{row}.source, {row}.status, COALESCE({row}.fingerprint, '')"
_STATE_ADD = (
    "INSERT INTO document_states VALUES ({key}, 1, {row}.chunk_count) ON CONFLICT "
    "DO UPDATE SET documents = documents + 1, chunks = chunks + excluded.chunks;"
)
_STATE_REMOVE = (
    "UPDATE document_states SET documents = documents - 1, chunks = chunks - {row}.chunk_count "
    "WHERE (source, status, fingerprint) = ({key});"
)
_STATE_COUNTS = f"""
CREATE TABLE IF NOT EXISTS document_states (
    source TEXT NOT NULL,
    status TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    documents INTEGER NOT NULL,
    chunks INTEGER NOT NULL,
    PRIMARY KEY (source, status, fingerprint)
) WITHOUT ROWID;
CREATE TRIGGER IF NOT EXISTS insert_counts_state AFTER INSERT ON documents
BEGIN {_STATE_ADD.format(key=_STATE_KEY.format(row="NEW"), row="NEW")} END;
CREATE TRIGGER IF NOT EXISTS delete_counts_state AFTER DELETE ON documents
BEGIN {_STATE_REMOVE.format(key=_STATE_KEY.format(row="OLD"), row="OLD")} END;
CREATE TRIGGER IF NOT EXISTS update_counts_state
AFTER UPDATE OF source, status, fingerprint, chunk_count ON documents
BEGIN {_STATE_REMOVE.format(key=_STATE_KEY.format(row="OLD"), row="OLD")}
{_STATE_ADD.format(key=_STATE_KEY.format(row="NEW"), row="NEW")} END;
"""


def has_state_counts(conn: sqlite3.Connection) -> bool:
    """Whether state.db has the document_states table (schema 5)."""
    row = conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'document_states'"
    ).fetchone()
    return row is not None


def _add_state_counts(conn: sqlite3.Connection) -> None:
    """Schema 5's counts on a file an older ragd wrote: the table, its triggers and every
    count, in one transaction (a write between would be missed for good)."""
    populate = (
        "INSERT INTO document_states SELECT source, status, COALESCE(fingerprint, ''), "
        "COUNT(*), TOTAL(chunk_count) FROM documents GROUP BY 1, 2, 3"
    )
    try:
        conn.executescript(f"BEGIN IMMEDIATE; {_STATE_COUNTS} {populate}; COMMIT;")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise


# What `ragd status` reads (ragd.stores.manifest_report) without a pass over every
# document: the spread of indexing times, and the few documents it names besides stale
# ones (failed, indexed with a warning, indexed with no chunk). Built on the first
# writer's open after an upgrade; a reader before that reads the rows instead.
_REPORT_INDEXES = """
CREATE INDEX IF NOT EXISTS documents_by_indexed_at
    ON documents (source, indexed_at, status);
CREATE INDEX IF NOT EXISTS documents_noted ON documents (source, key)
    WHERE status = 'failed' OR error IS NOT NULL OR chunk_count = 0;
"""

# The files each indexed document included, and the digest of what each gave
# (ragd.sources.includes): a pass reads only these again to find the documents whose
# includes changed, and a watcher hint on one finds its includers by `includes_by_file`.
# Created on every open, so a file an older ragd wrote gains it empty: its documents are
# known as includers once parsed again (a new PARSER_VERSION parses them all).
_INCLUDES = """
CREATE TABLE IF NOT EXISTS includes (
    doc_id TEXT NOT NULL,
    included TEXT NOT NULL,
    digest TEXT NOT NULL,
    PRIMARY KEY (doc_id, included)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS includes_by_file ON includes (included);
"""


def has_chunk_counts(conn: sqlite3.Connection) -> bool:
    """Whether the documents table has the chunk_count column (schema 3; a reader may meet
    a file no writer has opened since an upgrade)."""
    return any(row[1] == "chunk_count" for row in conn.execute("PRAGMA table_info(documents)"))


def _add_chunk_counts(conn: sqlite3.Connection) -> None:
    """Schema 3 on a file an older ragd wrote: the column and every document's count, in
    one transaction (a column left with its default would undercount for good)."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        conn.execute("ALTER TABLE documents ADD COLUMN chunk_count INTEGER NOT NULL DEFAULT 0")
        conn.execute(
            "UPDATE documents SET chunk_count = "
            "(SELECT COUNT(*) FROM chunks c WHERE c.doc_id = documents.doc_id)"
        )
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


def has_second_pending(conn: sqlite3.Connection) -> bool:
    """Whether the chunks table has the second_pending column (schema 5; a reader may meet
    a file no writer has opened since an upgrade)."""
    return any(row[1] == "second_pending" for row in conn.execute("PRAGMA table_info(chunks)"))


def _add_second_pending(conn: sqlite3.Connection) -> None:
    """Schema 5 on a file an older ragd wrote: the column, set on every chunk whose
    second-stage vector is not stored, in one transaction."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        conn.execute("ALTER TABLE chunks ADD COLUMN second_pending INTEGER")
        conn.execute(
            "UPDATE chunks SET second_pending = 1 WHERE second_key IS NOT NULL AND "
            + _NO_SECOND_VECTOR.format(key="chunks.second_key")
        )
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


def has_second_keys(conn: sqlite3.Connection) -> bool:
    """Whether the chunks table has the second_key column (schema 2; a reader may meet a
    file no writer has opened since an upgrade)."""
    return any(row[1] == "second_key" for row in conn.execute("PRAGMA table_info(chunks)"))


def has_pages(conn: sqlite3.Connection) -> bool:
    """Whether the chunks table has the page column (schema 4; a reader may meet a file
    no writer has opened since an upgrade)."""
    return any(row[1] == "page" for row in conn.execute("PRAGMA table_info(chunks)"))


def connect_writer(path: Path) -> sqlite3.Connection:
    """A connection for the one writer, creating the file and its tables if needed."""
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        conn.execute("PRAGMA journal_mode=WAL")
        # NORMAL may lose a committed transaction on power loss; the manifest is truth.
        conn.execute("PRAGMA synchronous=FULL")
        conn.execute("PRAGMA busy_timeout=10000")
        conn.executescript(_SCHEMA)
        if not has_second_keys(conn):  # written by a ragd before schema 2
            conn.execute("ALTER TABLE chunks ADD COLUMN second_key TEXT")
        conn.execute(_SECOND_KEY_INDEX)
        if not has_pages(conn):  # written by a ragd before schema 4: no PDFs were indexed
            conn.execute("ALTER TABLE chunks ADD COLUMN page INTEGER")
        if not has_chunk_counts(conn):  # written by a ragd before schema 3
            _add_chunk_counts(conn)
        if not has_second_pending(conn):  # written by a ragd before schema 5
            _add_second_pending(conn)
        if not has_state_counts(conn):  # written by a ragd before schema 5
            _add_state_counts(conn)
        conn.executescript(_SECOND_PENDING)
        conn.executescript(_COUNTING_INDEXES)  # built once, on the first open after an upgrade
        conn.executescript(_REPORT_INDEXES)
        conn.executescript(_INCLUDES)
        conn.execute(
            "INSERT INTO meta (key, value) VALUES ('schema_version', ?) "
            "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            (str(SCHEMA_VERSION),),
        )
    except sqlite3.Error as exc:
        raise StoreError(f"cannot open the manifest {path}: {exc}") from exc
    return conn


def connect_reader(path: Path) -> sqlite3.Connection:
    """A read-only connection; StoreError when no index exists yet."""
    if not path.exists():
        raise StoreError(
            f"no index at {path.parent}",
            hint="run 'ragd index' first, or check daemon.data_dir",
        )
    try:
        conn = sqlite3.connect(
            f"{path.as_uri()}?mode=ro", uri=True, isolation_level=None, check_same_thread=False
        )
        conn.execute("PRAGMA busy_timeout=10000")
        conn.execute("SELECT 1 FROM documents LIMIT 1")
    except sqlite3.Error as exc:
        raise StoreError(f"cannot read the manifest {path}: {exc}") from exc
    return conn
