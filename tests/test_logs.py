"""ragd's logging: one line format for its own events and for library records."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator

import pytest
import structlog

from ragd.service.logs import configure_logging, get_logger


@pytest.fixture(autouse=True)
def restore_logging() -> Iterator[None]:
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    yield
    structlog.reset_defaults()
    root.handlers, root.level = handlers, level


def lines(stream: io.StringIO) -> list[dict[str, object]]:
    return [json.loads(line) for line in stream.getvalue().splitlines()]


def test_events_and_library_records_are_json_lines_with_the_same_fields() -> None:
    out = io.StringIO()
    configure_logging("json", "info", out)
    get_logger("ragd.service.daemon.writer").info("document_indexed", doc_id="docs:a.md", chunks=3)
    logging.getLogger("uvicorn.error").warning("port %s in use", 8000)
    event, record = lines(out)
    assert event["event"] == "document_indexed"
    assert (event["doc_id"], event["chunks"]) == ("docs:a.md", 3)
    assert (event["level"], event["logger"]) == ("info", "ragd.service.daemon.writer")
    assert record["event"] == "port 8000 in use"
    assert (record["level"], record["logger"]) == ("warning", "uvicorn.error")
    assert {"timestamp"} <= event.keys() & record.keys()


def test_events_below_the_configured_level_are_not_written() -> None:
    out = io.StringIO()
    configure_logging("json", "warning", out)
    log = get_logger("ragd.service.daemon.writer")
    log.info("document_indexed", doc_id="docs:a.md")
    log.debug("document_unchanged", doc_id="docs:a.md")
    logging.getLogger("watchdog").info("started")
    log.warning("document_failed", doc_id="docs:b.md")
    assert [line["event"] for line in lines(out)] == ["document_failed"]


def test_a_logger_made_before_configuration_writes_to_the_latest_stream() -> None:
    log = get_logger("ragd.service.serve")  # as modules do, at import
    first, second = io.StringIO(), io.StringIO()
    configure_logging("json", "info", first)
    log.info("serving")
    configure_logging("json", "info", second)
    log.info("stopping")
    assert [line["event"] for line in lines(first)] == ["serving"]
    assert [line["event"] for line in lines(second)] == ["stopping"]


def test_an_exception_event_carries_its_traceback() -> None:
    out = io.StringIO()
    configure_logging("json", "info", out)
    try:
        raise RuntimeError("disk gone")
    except RuntimeError:
        get_logger("ragd.service.daemon.writer").exception("job_failed", jobs=2)
    (event,) = lines(out)
    assert event["level"] == "error"
    assert "RuntimeError: disk gone" in str(event["exception"])


def test_console_lines_when_asked_for_them() -> None:
    out = io.StringIO()
    configure_logging("console", "info", out)
    get_logger("ragd.service.daemon.writer").info("document_indexed", doc_id="docs:a.md")
    (line,) = out.getvalue().splitlines()
    assert "document_indexed" in line
    assert "doc_id=docs:a.md" in line


class _BrokenPipe(io.StringIO):
    def write(self, text: str) -> int:
        raise BrokenPipeError(32, "Broken pipe")


def test_a_stream_that_cannot_be_written_loses_lines_not_the_caller() -> None:
    configure_logging("json", "info", _BrokenPipe())
    get_logger("ragd.service.daemon.writer").info("document_indexed", doc_id="docs:a.md")
    logging.getLogger("watchdog").warning("still here")
    closed = io.StringIO()
    configure_logging("json", "info", closed)
    closed.close()
    get_logger("ragd.service.daemon.writer").error("job_failed", jobs=1)
