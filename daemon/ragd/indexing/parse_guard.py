"""A crash while parsing, remembered: the document is recorded failed, not parsed again.

A bug in native parser code (markdown-it.rs, the HTML parser, the tokenizer) that
segfaults or aborts kills the process, and no handler runs. So before the writer's
process parses a document it writes what it is about to parse to `data_dir/parsing`, and
empties the file after. A writer that starts and finds it non-empty knows the last one
died parsing that document, and records it failed with the hash of that content. A
settled record's hash is a known hash (`file_outcomes`, `entries`), so the same bytes are
never parsed again, only changed ones. A poison file then costs one crash, not
a crash loop under systemd's restarts.

No fsync: what must survive is the death of a process, and the page cache outlives it.
Documents parsed by worker processes are not written here: a worker's death is seen by
the process that started it, which then parses the rest itself, guarded. PDFium runs
in a child process of its own (`ragd.adapters.pdfium_process`): its crash, hang or
memory flood fails that PDF with the reason and leaves this process running.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path

from ragd.indexing.pipeline import PreparedWrite
from ragd.sources.folders import FileContent
from ragd.stores.records import DocumentWrite, doc_id_of

CRASHED = (
    "ragd's process died while parsing this content (a crash in native parser code);"
    " it is not parsed again until it changes"
)

FileGuard = Callable[[str, FileContent, str], AbstractContextManager[None]]
"""Guards the parse of a file: called with its key, its content as read and its hash."""


@dataclass(frozen=True, slots=True)
class Parsing:
    """The document being parsed: what recording it failed needs."""

    doc_id: str
    source: str
    key: str
    uri: str
    size: int
    mtime_ns: int
    content_hash: str
    fingerprint: str


class ParseGuard:
    """The `parsing` file of one data directory; None guards nothing (tests, readers)."""

    def __init__(self, path: Path | None) -> None:
        self._path = path

    @contextmanager
    def parsing(self, document: Parsing) -> Iterator[None]:
        """Name `document` in the file while the body runs; a Python exception clears it."""
        if self._path is None:
            yield
            return
        self._path.write_text(json.dumps(asdict(document)), encoding="utf-8")
        try:
            yield
        finally:
            self.clear()

    def for_files(
        self, source: str, uri_for: Callable[[str], str], fingerprint: str
    ) -> FileGuard | None:
        """A guard for the files of one source, as `ragd.indexing.preparing.prepare` takes it."""
        if self._path is None:
            return None

        def guard(key: str, content: FileContent, digest: str) -> AbstractContextManager[None]:
            return self.parsing(
                Parsing(
                    doc_id_of(source, key),
                    source,
                    key,
                    uri_for(key),
                    content.size,
                    content.mtime_ns,
                    digest,
                    fingerprint,
                )
            )

        return guard

    def leftover(self) -> PreparedWrite | None:
        """The failed write for a document whose parse killed the last writer, if any."""
        if self._path is None:
            return None
        try:
            text = self._path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return None
        if not text:
            return None
        try:
            document = Parsing(**json.loads(text))
        except (ValueError, TypeError):
            return None  # cut short by an OS crash mid-write: nothing to go on
        crashed: PreparedWrite = DocumentWrite(
            doc_id=doc_id_of(document.source, document.key),
            source=document.source,
            key=document.key,
            uri=document.uri,
            status="failed",
            size=document.size,
            mtime_ns=document.mtime_ns,
            content_hash=document.content_hash,
            fingerprint=document.fingerprint,
            error=CRASHED,
        )
        return crashed

    def clear(self) -> None:
        """Forget the document named in the file (its parse ended, or it is recorded)."""
        if self._path is not None:
            with open(self._path, "w", encoding="utf-8"):  # noqa: PTH123
                pass
