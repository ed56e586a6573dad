"""Asking a running `ragd serve` instead of opening the stores: `ragd status`, `ragd query`
and `ragd index` go to the daemon of their data directory when one runs, so the start-up
cost (LanceDB's import, the models) is paid once, by the daemon.

Owns the CLI's HTTP calls to its daemon and the rule for trusting an answer: the daemon
must serve the same data directory (every request names it in `X-Ragd-Data-Dir`, and a
daemon of another one answers 409; a status report must also say so in its body), else
the answer is someone else's and the command reads the stores itself.
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
# A query runs the models; a pass may read every file. Neither may hang a command forever.
QUERY_TIMEOUT = 60.0
PASS_TIMEOUT = 24 * 3600.0
# A status report is a few kilobytes per source; this bounds what a stranger on the port costs.
MAX_ANSWER_BYTES = 16 * 1024 * 1024
DATA_DIR_HEADER = "X-Ragd-Data-Dir"
# The bearer token the CLI sends its daemon when [access] has tokens.
TOKEN_ENV = "RAGD_TOKEN"  # noqa: S105 - the variable's name, not a token


@dataclass(frozen=True)
class DaemonAnswer:
    """The outcome of asking: the daemon's JSON answer and its HTTP status (when a daemon
    for this data dir answered), or why not (`note`, None when there was simply none)."""

    report: Any | None
    note: str | None = None
    status: int = 200


def daemon_url(host: str, port: int) -> str:
    """The base URL of a daemon listening on host:port (wildcards mean this machine)."""
    wildcards = {"0.0.0.0": "127.0.0.1", "::": "::1", "": "127.0.0.1"}  # noqa: S104
    host = wildcards.get(host, host)
    return f"http://{f'[{host}]' if ':' in host else host}:{port}"


def status_url(host: str, port: int) -> str:
    """The /v1/status URL of a daemon listening on host:port."""
    return daemon_url(host, port) + "/v1/status"


def ask_daemon(
    url: str, data_dir: Path, timeout: float = DEFAULT_TIMEOUT, *, token: str | None = None
) -> DaemonAnswer:
    """GET the daemon's status report; no daemon, or one for another data dir, gives None."""
    answer = request_daemon("GET", url, data_dir, timeout=timeout, token=token)
    if answer.report is None:
        return answer
    if answer.status != 200:
        return DaemonAnswer(None, refusal(url, answer.status))
    body = answer.report
    daemon = body.get("daemon") if isinstance(body, dict) else None
    if not isinstance(daemon, dict) or "data_dir" not in daemon:
        return DaemonAnswer(None, f"{url} is not a ragd daemon")
    if Path(str(daemon["data_dir"])) != data_dir.resolve():
        return DaemonAnswer(None)  # a daemon for another data dir: not ours to report
    return answer


def request_daemon(
    method: str,
    url: str,
    data_dir: Path,
    *,
    body: Any = None,
    timeout: float = DEFAULT_TIMEOUT,
    token: str | None = None,
) -> DaemonAnswer:
    """Send one request to the daemon at `url` for `data_dir`, with the bearer `token`
    when given (RAGD_TOKEN): its JSON answer and status, or no report (nothing listens,
    or a daemon of another data directory: no note; a failure or an answer that is not
    JSON: a note saying so)."""
    if _nothing_listens(url, min(CONNECT_TIMEOUT, timeout)):
        return DaemonAnswer(None)
    limits = Timeouts(connect=min(CONNECT_TIMEOUT, timeout), read=timeout, total=timeout)
    headers = {"Accept": "application/json", DATA_DIR_HEADER: str(data_dir.resolve())}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    content = None
    if body is not None:
        content = json.dumps(body).encode()
        headers["Content-Type"] = "application/json"
    session = HttpSession(limits, headers, local=True)
    try:
        with session.request(method, url, content=content) as answer:
            status = answer.status
            raw = answer.read(MAX_ANSWER_BYTES)
    except ConnectionRefused:
        return DaemonAnswer(None)
    except HttpFailure as exc:
        return DaemonAnswer(None, f"no answer from {url}: {exc}")
    finally:
        session.close()
    if status == 409 and b"another data directory" in raw:
        return DaemonAnswer(None)  # not ours to ask
    try:
        return DaemonAnswer(json.loads(raw), status=status)
    except ValueError as exc:
        return DaemonAnswer(None, f"no usable answer from {url}: {exc}")


def refusal(url: str, status: int) -> str:
    """Why the daemon's answer is not used, for the command's note."""
    if status == 401:
        return f"the daemon at {url} needs an access token (set {TOKEN_ENV})"
    if status == 403:
        return f"the daemon at {url} refused the access token in {TOKEN_ENV}"
    return f"the daemon at {url} answered HTTP {status}"


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
