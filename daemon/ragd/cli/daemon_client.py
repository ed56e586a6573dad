"""Asking a running `ragd serve` for its status report, so `ragd status` can show the
daemon section (uptime, queue, watcher health, next jobs, LanceDB versions).

Owns the one HTTP call the CLI makes and the rule for trusting its answer: the daemon
must say it serves the same data directory, else the answer is someone else's.
"""

from __future__ import annotations

import json
import socket
import urllib.parse
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ragd.adapters.httpx import ConnectionRefused, HttpFailure, HttpSession, Timeouts

# The daemon is on this machine: a connect either succeeds at once or is refused, and a
# hung daemon should not stall a monitor for longer than it takes to answer one request.
CONNECT_TIMEOUT = 0.5
DEFAULT_TIMEOUT = 5.0
# A status report is a few kilobytes per source; this bounds what a stranger on the port costs.
MAX_REPORT_BYTES = 16 * 1024 * 1024


@dataclass(frozen=True)
class DaemonAnswer:
    """The outcome of asking: the report (when a daemon for this data dir answered) or why not."""

    report: dict[str, Any] | None
    note: str | None = None


def status_url(host: str, port: int) -> str:
    """The /v1/status URL of a daemon listening on host:port (wildcards mean this machine)."""
    wildcards = {"0.0.0.0": "127.0.0.1", "::": "::1", "": "127.0.0.1"}  # noqa: S104
    host = wildcards.get(host, host)
    return f"http://{f'[{host}]' if ':' in host else host}:{port}/v1/status"


def ask_daemon(url: str, data_dir: Path, timeout: float = DEFAULT_TIMEOUT) -> DaemonAnswer:
    """GET the daemon's status report; no daemon, or one for another data dir, gives None."""
    if _nothing_listens(url, min(CONNECT_TIMEOUT, timeout)):
        return DaemonAnswer(None)
    limits = Timeouts(connect=min(CONNECT_TIMEOUT, timeout), read=timeout, total=timeout)
    session = HttpSession(limits, {"Accept": "application/json"}, local=True)
    try:
        with session.request("GET", url) as answer:
            if answer.status != 200:
                return DaemonAnswer(None, f"the daemon at {url} answered HTTP {answer.status}")
            body = json.loads(answer.read(MAX_REPORT_BYTES))
    except ConnectionRefused:
        return DaemonAnswer(None)
    except HttpFailure as exc:
        return DaemonAnswer(None, f"no answer from {url}: {exc}")
    except ValueError as exc:
        return DaemonAnswer(None, f"no usable answer from {url}: {exc}")
    finally:
        session.close()
    daemon = body.get("daemon") if isinstance(body, dict) else None
    if not isinstance(daemon, dict) or "data_dir" not in daemon:
        return DaemonAnswer(None, f"{url} is not a ragd daemon")
    if Path(str(daemon["data_dir"])) != data_dir.resolve():
        return DaemonAnswer(None)  # a daemon for another data dir: not ours to report
    return DaemonAnswer(body)


def _nothing_listens(url: str, timeout: float) -> bool:
    """Whether the daemon's port refuses a connection. Asked with a bare socket first: the
    HTTP client's first use imports httpx (0.1-0.2 s), which only a daemon is worth, and a
    command run without one would pay it just to be refused."""
    try:
        parts = urllib.parse.urlsplit(url)
        with socket.create_connection((parts.hostname, parts.port or 80), timeout=timeout):
            return False
    except ConnectionRefusedError:
        return True
    except (OSError, ValueError):  # anything else is the request's to report
        return False
