"""Slow clients on a real `ragd serve`: connections whose headers or body never finish
arriving are closed once `[http] header_timeout` or `body_timeout` has passed (short
here; the defaults, 10 s and 30 s, are in tests/test_config.py), counted and logged,
while queries go on being answered."""

from __future__ import annotations

import re
import select
import socket
import time
from collections.abc import Iterator

import pytest

from tests.integration.daemon import Served, small_root

HEADER_TIMEOUT = 2.0
BODY_TIMEOUT = 3.0
SLOW = 100
# How long past its timeout a connection may stay open before the test gives up on it:
# ragd's clock closes it within a second, a loaded machine takes longer.
MARGIN = 30.0


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    base = tmp_path_factory.mktemp("slow")
    daemon = Served(
        base,
        small_root(base / "docs", 5),
        sections=f'header_timeout = "{HEADER_TIMEOUT}s"\nbody_timeout = "{BODY_TIMEOUT}s"\n',
        env={"RAGD_TEST_WEBHOOK_SECRET": "a-secret-for-the-cms-source"},
        extra_sources=(
            '\n[[sources]]\nname = "cms"\ntype = "webhook"\n'
            'secret_env = "RAGD_TEST_WEBHOOK_SECRET"\n'
        ),
    )
    daemon.start().wait_ready()
    daemon.wait_scanned()
    yield daemon
    daemon.stop()


def _half_sent(port: int, starts: list[bytes]) -> list[socket.socket]:
    """A connection per request start, each sent that far and no further."""
    connections = []
    for start in starts:
        connection = socket.create_connection(("127.0.0.1", port))
        connection.sendall(start)
        connections.append(connection)
    return connections


def _closed_while_querying(
    served: Served, connections: list[socket.socket], since: float, within: float
) -> tuple[list[float], int]:
    """Seconds from `since` until the server closed each connection (waiting at most
    `within`), and how many queries were answered meanwhile, one per round."""
    waiting = {connection.fileno(): connection for connection in connections}
    closed: list[float] = []
    answered = 0
    try:
        while waiting and time.monotonic() - since < within:
            readable, _, _ = select.select(list(waiting.values()), [], [], 0.2)
            for connection in readable:
                try:
                    gone = connection.recv(4096) == b""
                except ConnectionResetError:
                    gone = True
                if gone:
                    closed.append(time.monotonic() - since)
                    del waiting[connection.fileno()]
            answered += bool(served.query("request body")["results"])
    finally:
        for connection in connections:
            connection.close()
    return closed, answered


def _closed_count(served: Served, reason: str) -> float:
    metrics = served.get_text("/metrics")
    found = re.search(rf'ragd_http_connections_closed_total{{reason="{reason}"}} (\S+)', metrics)
    assert found, metrics
    return float(found.group(1))


def test_connections_whose_headers_never_finish_are_closed_after_the_header_timeout(
    served: Served,
) -> None:
    since = time.monotonic()
    start = b"POST /v1/query HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-"
    connections = _half_sent(served.port, [start] * SLOW)

    closed, answered = _closed_while_querying(served, connections, since, HEADER_TIMEOUT + MARGIN)

    assert len(closed) == SLOW
    assert min(closed) >= HEADER_TIMEOUT  # none before its time
    assert answered >= 1  # at least a round's query while they were open, all answered
    assert _closed_count(served, "header_timeout") == SLOW
    assert len(served.events("http_connection_closed", reason="header_timeout")) == SLOW


def test_requests_whose_bodies_never_finish_are_closed_after_the_body_timeout(
    served: Served,
) -> None:
    host = f"Host: 127.0.0.1:{served.port}\r\n".encode()
    headers = (
        b"Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"
        b"Content-Length: 200\r\n\r\n"
    )
    starts = [
        b"POST /v1/query HTTP/1.1\r\n" + host + headers + b'{"query": "req',
        b"POST /v1/webhooks/cms HTTP/1.1\r\n" + host + headers + b'{"type": "upsert", ',
        b"POST /mcp HTTP/1.1\r\n" + host + headers + b'{"jsonrpc": "2.0", ',
    ]
    since = time.monotonic()
    connections = _half_sent(served.port, [starts[n % 3] for n in range(SLOW)])

    closed, answered = _closed_while_querying(served, connections, since, BODY_TIMEOUT + MARGIN)

    assert len(closed) == SLOW
    assert min(closed) >= BODY_TIMEOUT  # none before its time
    assert answered >= 1
    assert _closed_count(served, "body_timeout") == SLOW
    errors = [line for line in served.log_text().splitlines() if '"level": "error"' in line]
    assert errors == []  # a slow client is no error of the daemon's (no traceback)
    assert served.status()["daemon"]["queue_depth"] == 0
