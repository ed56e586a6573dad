"""`ragd status` asks a running daemon only when it serves the same data directory."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path

import pytest

from ragd.cli.daemon_client import ask_daemon, status_url
from tests.integration.daemon import free_port


@pytest.mark.parametrize(
    ("host", "url"),
    [
        ("127.0.0.1", "http://127.0.0.1:8750/v1/status"),
        ("0.0.0.0", "http://127.0.0.1:8750/v1/status"),
        ("::", "http://[::1]:8750/v1/status"),
        ("::1", "http://[::1]:8750/v1/status"),
        ("docs.internal", "http://docs.internal:8750/v1/status"),
    ],
)
def test_status_url_points_wildcard_listens_at_this_machine(host: str, url: str) -> None:
    assert status_url(host, 8750) == url


class _Fake:
    """A loopback HTTP server answering GET with a fixed status code and body (as JSON)."""

    def __init__(self, code: int, body: object) -> None:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                payload = fake.raw if fake.raw is not None else json.dumps(fake.body).encode()
                self.send_response(fake.code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, *args: object) -> None:
                pass

        self.code, self.body = code, body
        self.raw: bytes | None = None  # sent instead of the body as JSON
        self.server = HTTPServer(("127.0.0.1", 0), Handler)
        self.url = status_url("127.0.0.1", self.server.server_address[1])
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


@pytest.fixture
def fake() -> Iterator[_Fake]:
    server = _Fake(200, {})
    yield server
    server.server.shutdown()
    server.server.server_close()


def test_nothing_listening_means_no_daemon_and_nothing_to_say(tmp_path: Path) -> None:
    answer = ask_daemon(status_url("127.0.0.1", free_port()), tmp_path)

    assert answer.report is None
    assert answer.note is None


def test_nothing_listening_is_found_without_loading_the_http_client(tmp_path: Path) -> None:
    # httpx's import is the dearest part of asking: a command run without a daemon skips it.
    url = status_url("127.0.0.1", free_port())
    script = (
        "import sys; from pathlib import Path; from ragd.cli.daemon_client import ask_daemon; "
        f"answer = ask_daemon({url!r}, Path({str(tmp_path)!r})); "
        "print(answer.report, answer.note, 'httpx2' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)

    assert done.stdout.split() == ["None", "None", "False"], done.stderr


def test_a_daemon_for_the_same_data_dir_is_believed(fake: _Fake, tmp_path: Path) -> None:
    fake.body = {"stores_agree": True, "daemon": {"data_dir": str(tmp_path.resolve())}}

    assert ask_daemon(fake.url, tmp_path).report == fake.body


def test_a_daemon_for_another_data_dir_is_ignored_quietly(fake: _Fake, tmp_path: Path) -> None:
    fake.body = {"stores_agree": True, "daemon": {"data_dir": "/srv/other"}}

    answer = ask_daemon(fake.url, tmp_path)

    assert answer.report is None
    assert answer.note is None


def test_another_program_on_the_port_is_named_in_a_note(fake: _Fake, tmp_path: Path) -> None:
    fake.body = {"hello": "world"}

    answer = ask_daemon(fake.url, tmp_path)

    assert answer.report is None
    assert answer.note == f"{fake.url} is not a ragd daemon"


def test_an_http_error_is_named_in_a_note(fake: _Fake, tmp_path: Path) -> None:
    fake.code, fake.body = 503, {"error": "starting"}

    answer = ask_daemon(fake.url, tmp_path)

    assert answer.report is None
    assert answer.note == f"the daemon at {fake.url} answered HTTP 503"


def test_a_proxy_in_the_environment_is_not_asked_for_the_local_daemon(
    fake: _Fake, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The proxy's port has nothing listening: a request sent there would be refused.
    monkeypatch.setenv("HTTP_PROXY", f"http://127.0.0.1:{free_port()}")
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    fake.body = {"daemon": {"data_dir": str(tmp_path.resolve())}}

    assert ask_daemon(fake.url, tmp_path).report == fake.body


def test_an_answer_that_is_not_json_is_named_in_a_note(fake: _Fake, tmp_path: Path) -> None:
    fake.raw = b"<html>hello</html>"

    answer = ask_daemon(fake.url, tmp_path)

    assert answer.report is None
    assert answer.note is not None
    assert answer.note.startswith(f"no usable answer from {fake.url}: ")
