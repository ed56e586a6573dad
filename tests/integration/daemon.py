"""A real `ragd serve` process for tests: start, wait until ready, query, stop."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.conftest import FASTAPI_DOCS, REPO, write_config

TUTORIAL = FASTAPI_DOCS / "docs" / "en" / "docs" / "tutorial"


def free_port() -> int:
    """A TCP port on loopback nobody listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def small_root(target: Path, files: int = 50) -> Path:
    """A root with `files` real markdown pages from fastapi-docs' tutorial."""
    target.mkdir(parents=True)
    for source in sorted(TUTORIAL.glob("*.md"))[:files]:
        shutil.copyfile(source, target / source.name)
    return target


def scan_finished(port: int) -> bool:
    """True once a daemon on `port` answers and its start-up scan is done and idle."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/status", timeout=30) as reply:
            daemon = json.loads(reply.read())["daemon"]
    except OSError:
        return False
    writer = daemon["writer"]
    return bool(writer["last_scan_at"]) and daemon["queue_depth"] == 0 and not writer["busy"]


def stop_daemon(process: subprocess.Popen[bytes], timeout: float = 60) -> None:
    """SIGTERM a `ragd serve` and wait for it; if it has not exited within `timeout`,
    SIGKILL it (so no daemon outlives the run) and raise."""
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
        raise RuntimeError(f"ragd serve did not stop within {timeout:.0f} s of SIGTERM") from None


def wait_until(predicate: Callable[[], Any], timeout: float, interval: float = 0.05) -> Any:
    """Poll until predicate() is truthy; return its value or fail after timeout seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"condition not met within {timeout}s")
        time.sleep(interval)


class NotifySocket:
    """An abstract unix datagram socket standing in for systemd's: pass `env` to a
    `ragd serve`, then wait for what it says (READY=1, WATCHDOG=1, STOPPING=1)."""

    def __init__(self) -> None:
        name = f"ragd-test-{uuid.uuid4().hex}"
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self._sock.bind("\0" + name)
        self._sock.settimeout(1.0)
        # The watchdog asks for a ping at least every second.
        self.env = {"NOTIFY_SOCKET": "@" + name, "WATCHDOG_USEC": "2000000"}
        self.seen: list[str] = []

    def receive_until(self, message: str, timeout: float) -> None:
        """Wait until `message` has been sent; AssertionError with what was, if not."""
        deadline = time.monotonic() + timeout
        while message not in self.seen and time.monotonic() < deadline:
            try:
                self.seen.extend(self._sock.recv(4096).decode().split("\n"))
            except TimeoutError:
                continue
        assert message in self.seen, self.seen

    def close(self) -> None:
        self._sock.close()


class Served:
    """One `ragd serve` subprocess on a temp data_dir and a free port."""

    def __init__(
        self,
        workdir: Path,
        root: Path,
        *,
        schedule: str = "",
        env: dict[str, str] | None = None,
        extra_sources: str = "",
        rerank: Path | None = None,
        sections: str = "",
        reader: bool = False,
        include: tuple[str, ...] = ("**/*.md",),
    ) -> None:
        self.port = free_port()
        self.workdir = workdir
        self.reader = reader  # `ragd serve --reader`: a read replica
        workdir.mkdir(parents=True, exist_ok=True)
        self.config = write_config(
            workdir,
            root,
            rerank=rerank,
            include=include,
            sections=f'[http]\nlisten = "127.0.0.1:{self.port}"\n\n{schedule}\n{sections}',
            extra=extra_sources,
        )
        self.log_path = workdir / f"serve-{self.port}.log"
        self.env = dict(os.environ, HF_HUB_OFFLINE="1", RAGD_LOG_FORMAT="json", **(env or {}))
        self.fault: str | None = None  # a crash plan (tests/integration/crashing_ragd.py)
        # While this file exists the writer takes no job (tests/integration/paused_ragd.py).
        self.pause_file: Path | None = None
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> Served:
        """Start the process (does not wait)."""
        self.log = self.log_path.open("ab")
        entry = ["ragd"]
        if self.fault is not None:
            entry = ["tests.integration.crashing_ragd", self.fault]
        elif self.pause_file is not None:
            entry = ["tests.integration.paused_ragd", str(self.pause_file)]
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                *entry,
                "--config",
                str(self.config),
                "serve",
                *(["--reader"] if self.reader else []),
            ],
            stdout=self.log,
            stderr=self.log,
            env=self.env,
            cwd=REPO,
        )
        return self

    def wait_ready(self, timeout: float = 60) -> Served:
        """Wait for /healthz to answer ok."""

        def healthy() -> bool:
            assert self.process is not None
            if self.process.poll() is not None:
                raise AssertionError(f"ragd serve exited early:\n{self.log_text()[-3000:]}")
            try:
                return bool(self.get("/healthz")["status"] == "ok")
            except (OSError, urllib.error.URLError):
                return False

        wait_until(healthy, timeout, interval=0.1)
        return self

    def wait_scanned(self, timeout: float = 120) -> dict[str, Any]:
        """Wait until the start-up scan finished and the queue is empty; return the status."""

        def scanned() -> dict[str, Any] | None:
            status = self.status()
            daemon = status["daemon"]
            done = daemon["writer"]["last_scan_at"] and daemon["queue_depth"] == 0
            return status if done and not daemon["writer"]["busy"] else None

        result: dict[str, Any] = wait_until(scanned, timeout, interval=0.2)
        return result

    def wait_idle(self, timeout: float = 60) -> dict[str, Any]:
        """Wait until the queue is empty and the writer is not busy; return the status."""

        def idle() -> dict[str, Any] | None:
            status = self.status()
            daemon = status["daemon"]
            return status if daemon["queue_depth"] == 0 and not daemon["writer"]["busy"] else None

        result: dict[str, Any] = wait_until(idle, timeout, interval=0.2)
        return result

    def hold_writer(self, timeout: float = 30) -> None:
        """Hold the writer (a daemon started with `pause_file`): returns once it has
        finished what it was doing and takes no more jobs, until `release_writer`."""
        assert self.pause_file is not None, "start the daemon with a pause_file"
        held = len(self.events("writer_held"))
        self.pause_file.touch()
        wait_until(lambda: len(self.events("writer_held")) > held, timeout)

    def release_writer(self) -> None:
        """Let a held writer take jobs again."""
        assert self.pause_file is not None
        self.pause_file.unlink()

    def get_text(self, path: str) -> str:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}{path}", timeout=30) as reply:
            return str(reply.read().decode())

    def get(self, path: str) -> Any:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}{path}", timeout=30) as reply:
            return json.loads(reply.read())

    def status(self) -> dict[str, Any]:
        result: dict[str, Any] = self.get("/v1/status")
        return result

    def query(self, text: str, *, mode: str = "bm25", k: int = 10, **extra: Any) -> dict[str, Any]:
        body = json.dumps({"query": text, "mode": mode, "k": k, **extra}).encode()
        request = urllib.request.Request(
            f"http://127.0.0.1:{self.port}/v1/query", data=body, method="POST"
        )
        with urllib.request.urlopen(request, timeout=30) as reply:
            result: dict[str, Any] = json.loads(reply.read())
            return result

    def post(self, path: str, body: bytes, headers: dict[str, str]) -> tuple[int, Any]:
        """POST raw bytes; (status, parsed JSON body) whatever the status."""
        request = urllib.request.Request(
            f"http://127.0.0.1:{self.port}{path}", data=body, headers=headers, method="POST"
        )
        try:
            with urllib.request.urlopen(request, timeout=30) as reply:
                return reply.status, json.loads(reply.read())
        except urllib.error.HTTPError as error:
            return error.code, json.loads(error.read() or b"null")

    def post_json(self, path: str, body: dict[str, Any]) -> Any:
        """POST a JSON body; the parsed answer (the request must succeed)."""
        status, answer = self.post(
            path, json.dumps(body).encode(), {"Content-Type": "application/json"}
        )
        assert status == 200, (status, answer)
        return answer

    def paths_for(self, text: str) -> list[str]:
        return [hit["path"] for hit in self.query(text)["results"]]

    def signal(self, signum: int) -> None:
        assert self.process is not None
        self.process.send_signal(signum)

    def wait_exit(self, timeout: float) -> int:
        assert self.process is not None
        return self.process.wait(timeout)

    def stop(self) -> None:
        """SIGTERM and wait; close the log. A daemon still running 15 s after SIGTERM (its
        shutdown gives up on the writer after 8) is killed, and that fails the test."""
        if self.process is None:
            return
        try:
            if self.process.poll() is None:
                stop_daemon(self.process, 15)
        finally:
            self.log.close()

    def log_text(self) -> str:
        return self.log_path.read_text(errors="replace")

    def events(self, name: str, **match: object) -> list[dict[str, Any]]:
        """Parsed JSON log events called `name` whose fields match."""
        found = []
        for line in self.log_text().splitlines():
            try:
                event = json.loads(line)
            except json.JSONDecodeError:
                continue
            if event.get("event") == name and all(event.get(k) == v for k, v in match.items()):
                found.append(event)
        return found
