"""IndexReport: what one pass did, as `ragd index --json` prints it and a daemon answers it."""

from __future__ import annotations

import json

from ragd.indexing.report import IndexReport


def test_a_report_read_back_from_its_json_is_the_same_report() -> None:
    report = IndexReport(
        added=2, changed=1, unchanged=40, deleted=3, failed=1, embedded=9, reused=30,
        chunks_deleted=4, second_embedded=5, second_reused=6, second_pending=7, seconds=1.25,
        reconciled=True, errors=["source 'x': gone"], skipped=["docs:caf\\xe9.md: name"],
    )  # fmt: skip

    again = IndexReport.from_json(json.loads(json.dumps(report.to_json())))

    assert again.to_json() == report.to_json()
