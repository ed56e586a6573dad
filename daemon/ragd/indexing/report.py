"""What one indexing pass did: the counts and messages of `ragd index --json`.

Imports nothing from ragd.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any


@dataclass
class IndexReport:
    """What one pass did; `to_json` is the `ragd index --json` contract."""

    added: int = 0
    changed: int = 0
    unchanged: int = 0
    deleted: int = 0
    failed: int = 0
    ignored: int = 0
    embedded: int = 0
    reused: int = 0
    chunks_deleted: int = 0
    second_embedded: int = 0  # chunk texts the second-stage model embedded
    second_reused: int = 0  # chunks whose stored second-stage vector was written again
    second_pending: int = 0  # chunks still without one (the daemon fills them later)
    seconds: float = 0.0
    reconciled: bool = False
    interrupted: bool = False
    errors: list[str] = field(default_factory=list)  # the pass could not complete for a source
    skipped: list[str] = field(default_factory=list)  # files that cannot be documents at all

    def merged(self, second: IndexReport) -> IndexReport:
        """This pass's report with what a second-stage fill after it did."""
        return replace(
            self,
            second_embedded=self.second_embedded + second.second_embedded,
            second_pending=second.second_pending,
            seconds=self.seconds + second.seconds,
            interrupted=self.interrupted or second.interrupted,
        )

    def combined(self, other: IndexReport) -> IndexReport:
        """Two passes' reports as one (a folder pass and the entries of a poll)."""
        return replace(
            self,
            added=self.added + other.added,
            changed=self.changed + other.changed,
            unchanged=self.unchanged + other.unchanged,
            deleted=self.deleted + other.deleted,
            failed=self.failed + other.failed,
            ignored=self.ignored + other.ignored,
            embedded=self.embedded + other.embedded,
            reused=self.reused + other.reused,
            chunks_deleted=self.chunks_deleted + other.chunks_deleted,
            seconds=self.seconds + other.seconds,
            reconciled=self.reconciled or other.reconciled,
            interrupted=self.interrupted or other.interrupted,
            errors=[*self.errors, *other.errors],
            skipped=[*self.skipped, *other.skipped],
        )

    def to_json(self) -> dict[str, object]:
        """The JSON object printed by `ragd index --json`."""
        return {
            "documents": {
                "added": self.added,
                "changed": self.changed,
                "unchanged": self.unchanged,
                "deleted": self.deleted,
                "failed": self.failed,
            },
            "chunks": {
                "embedded": self.embedded,
                "reused": self.reused,
                "deleted": self.chunks_deleted,
            },
            "second_stage": {
                "embedded": self.second_embedded,
                "reused": self.second_reused,
                "pending": self.second_pending,
            },
            "seconds": round(self.seconds, 3),
            "reconciled": self.reconciled,
            "interrupted": self.interrupted,
            "errors": list(self.errors),
            "skipped": list(self.skipped),
        }

    @classmethod
    def from_json(cls, body: Mapping[str, Any]) -> IndexReport:
        """The report `to_json` gave (a daemon's answer to `ragd index`); KeyError or
        TypeError for a body that is not one."""
        documents, chunks, second = body["documents"], body["chunks"], body["second_stage"]
        return cls(
            **{kind: int(documents[kind]) for kind in DOCUMENT_COUNTS},
            embedded=int(chunks["embedded"]),
            reused=int(chunks["reused"]),
            chunks_deleted=int(chunks["deleted"]),
            second_embedded=int(second["embedded"]),
            second_reused=int(second["reused"]),
            second_pending=int(second["pending"]),
            seconds=float(body["seconds"]),
            reconciled=bool(body["reconciled"]),
            interrupted=bool(body["interrupted"]),
            errors=[str(e) for e in body["errors"]],
            skipped=[str(s) for s in body["skipped"]],
        )


DOCUMENT_COUNTS = ("added", "changed", "unchanged", "deleted", "failed")
