"""Asking a running `ragd serve` for its status report, so `ragd status` can show the
daemon section (uptime, queue, watcher health, next jobs, LanceDB versions).

Owns the one HTTP call the CLI makes and the rule for trusting its answer: the daemon
must say it serves the same data directory, else the answer is someone else's.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# A local daemon answers in well under a second; a hung one should not stall a monitor.
DEFAULT_TIMEOUT = 5.0


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
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:  # noqa: S310 - our own URL
            body = json.loads(response.read())
    except ConnectionRefusedError:
        return DaemonAnswer(None)
    except urllib.error.HTTPError as exc:
        return DaemonAnswer(None, f"the daemon at {url} answered HTTP {exc.code}")
    except urllib.error.URLError as exc:
        if isinstance(exc.reason, ConnectionRefusedError):
            return DaemonAnswer(None)
        return DaemonAnswer(None, f"no answer from {url}: {exc.reason}")
    except (TimeoutError, OSError, ValueError) as exc:
        return DaemonAnswer(None, f"no usable answer from {url}: {exc}")
    daemon = body.get("daemon") if isinstance(body, dict) else None
    if not isinstance(daemon, dict) or "data_dir" not in daemon:
        return DaemonAnswer(None, f"{url} is not a ragd daemon")
    if Path(str(daemon["data_dir"])) != data_dir.resolve():
        return DaemonAnswer(None)  # a daemon for another data dir: not ours to report
    return DaemonAnswer(body)
