"""The exceptions ragd raises, and what each one means to the caller.

Hierarchy (catch by category; the CLI maps each category to one exit code):

- RagdError                 base of everything ragd raises on purpose
  - ConfigError             the configuration is invalid; names the key (exit 2)
  - UsageError              a request is malformed or refused, e.g. a query too long (exit 2)
    - QueryRefused          a query that is refused before it reaches a store
  - ModelLoadError          the embedding model cannot be loaded (exit 1)
  - SourceError             a source root cannot be scanned; nothing was deleted (exit 1)
  - StoreError              a store cannot be opened or written (exit 1)
  - LockedError             another process holds the writer lock on data_dir (exit 2)

Per-document problems (binary file, bad encoding, unreadable) are not exceptions that
escape the indexer: they are recorded on the document as `failed` with a reason.
"""

from __future__ import annotations


class RagdError(Exception):
    """Base class for errors ragd reports to its user with a one-line message."""

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return f"{self.message} ({self.hint})" if self.hint else self.message


class ConfigError(RagdError):
    """The configuration file or an environment override is invalid."""


class UsageError(RagdError):
    """A request is malformed or refused."""


class QueryRefused(UsageError):
    """A query was refused before reaching any store (too long, empty after cleaning)."""


class ModelLoadError(RagdError):
    """The embedding model could not be loaded."""


class SourceError(RagdError):
    """A source could not be scanned; the run must not delete anything from it."""


class StoreError(RagdError):
    """A store (manifest, LanceDB, Tantivy) could not be opened or written."""


class LockedError(RagdError):
    """Another writer holds the lock on the data directory."""


class DocumentError(RagdError):
    """One document cannot be indexed (binary, undecodable, unreadable); recorded, not raised."""


# A reason is stored with a failed document and shown by status: a traceback's last
# line, not a page of it.
REASON_CHARS = 300


def one_line(exc: BaseException) -> str:
    """`exc` as a reason to store and show: `Type: message` on one line, at most
    REASON_CHARS characters, every character storable (an unencodable one escaped)."""
    text = str(exc) if isinstance(exc, RagdError) else f"{type(exc).__name__}: {exc}"
    text = " ".join(text.split())
    text = text.encode("utf-8", "backslashreplace").decode("utf-8")
    return text if len(text) <= REASON_CHARS else text[: REASON_CHARS - 1] + "…"
