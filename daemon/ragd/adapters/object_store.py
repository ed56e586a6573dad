"""Object storage behind one adapter: S3 through pyarrow's public `pyarrow.fs.S3FileSystem`.

Owns what ragd says to an object store: naming objects under an `s3://bucket/prefix`
location, the client (its endpoint and credentials from the standard AWS environment
variables, never from config text), and the few calls publishing and replicas make: put
a file or bytes, get them back, list and delete names. Every failure becomes a
`StoreError` naming the object. pyarrow is already one of ragd's libraries (LanceDB
speaks Arrow), and its S3 client retries and streams large files, which a hand-made
signer would not.

An S3 PUT replaces an object whole: a reader sees the old bytes or the new, never a mix.
What a set of objects means, and in which order to write them, is `ragd.stores.publishing`.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from ragd.errors import ConfigError, StoreError

# A stalled endpoint fails a call in bounded time; the caller retries on its next round.
CONNECT_TIMEOUT = 5.0
REQUEST_TIMEOUT = 60.0
COPY_BLOCK = 1 << 20
TRUE = ("1", "true", "yes", "on")
OBJECT_STORE_HINT = (
    "check that the object store answers at AWS_ENDPOINT_URL and that AWS_ACCESS_KEY_ID, "
    "AWS_SECRET_ACCESS_KEY and AWS_REGION are right"
)


@dataclass(frozen=True, slots=True)
class ObjectLocation:
    """An `s3://bucket/prefix` URI (no trailing slash) and the names below it."""

    uri: str

    def __post_init__(self) -> None:
        if not self.uri.startswith("s3://") or self.uri.endswith("/"):
            raise ValueError(f"not an s3://bucket/prefix URI: {self.uri!r}")

    def child(self, *parts: str) -> ObjectLocation:
        """The location `parts` below this one."""
        return ObjectLocation("/".join([self.uri, *parts]))

    @property
    def path(self) -> str:
        """bucket/prefix, as pyarrow's filesystems name it."""
        return self.uri.removeprefix("s3://")


def s3_options(environ: Mapping[str, str]) -> dict[str, object]:
    """pyarrow S3FileSystem arguments from the AWS variables; ConfigError for an http://
    endpoint without AWS_ALLOW_HTTP (LanceDB refuses one too, later and less clearly)."""
    options: dict[str, object] = {
        "connect_timeout": CONNECT_TIMEOUT,
        "request_timeout": REQUEST_TIMEOUT,
    }
    if key := environ.get("AWS_ACCESS_KEY_ID"):
        options["access_key"] = key
        options["secret_key"] = environ.get("AWS_SECRET_ACCESS_KEY", "")
        if token := environ.get("AWS_SESSION_TOKEN"):
            options["session_token"] = token
    if region := environ.get("AWS_REGION") or environ.get("AWS_DEFAULT_REGION"):
        options["region"] = region
    if endpoint := environ.get("AWS_ENDPOINT_URL"):
        parts = urlsplit(endpoint)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise ConfigError(
                f"AWS_ENDPOINT_URL is not an http(s) URL: {endpoint!r}",
                hint="set it like https://s3.example.com:9000",
            )
        if parts.scheme == "http" and environ.get("AWS_ALLOW_HTTP", "").lower() not in TRUE:
            raise ConfigError(
                f"AWS_ENDPOINT_URL {endpoint} is plain http",
                hint="use https, or set AWS_ALLOW_HTTP=true for a store on a trusted network",
            )
        options["endpoint_override"] = parts.netloc
        options["scheme"] = parts.scheme
    return options


# The AWS variables as lance (LanceDB's format, under Ray) names its storage options, for
# processes on other machines, whose environment ragd does not set.
_LANCE_OPTIONS = {
    "AWS_ACCESS_KEY_ID": "aws_access_key_id",
    "AWS_SECRET_ACCESS_KEY": "aws_secret_access_key",
    "AWS_SESSION_TOKEN": "aws_session_token",
    "AWS_REGION": "aws_region",
    "AWS_ENDPOINT_URL": "aws_endpoint",
    "AWS_ALLOW_HTTP": "allow_http",
}


def lance_options(environ: Mapping[str, str]) -> dict[str, str]:
    """The AWS variables that are set, as lance's storage options."""
    return {option: environ[var] for var, option in _LANCE_OPTIONS.items() if environ.get(var)}


class ObjectStore:
    """Objects under one location, through one S3 client."""

    def __init__(self, location: ObjectLocation, environ: Mapping[str, str] | None = None) -> None:
        from pyarrow import fs

        self.location = location
        self._fs = fs.S3FileSystem(**s3_options(os.environ if environ is None else environ))

    def _path(self, name: str) -> str:
        return f"{self.location.path}/{name}"

    @contextmanager
    def _errors(self, action: str, name: str) -> Iterator[None]:
        try:
            yield
        except OSError as exc:  # pyarrow raises OSError (and subclasses) for S3 failures
            raise StoreError(
                f"cannot {action} {self.location.uri}/{name}: {exc}", hint=OBJECT_STORE_HINT
            ) from exc

    def put_bytes(self, name: str, data: bytes) -> None:
        """Write one object whole."""
        with self._errors("write", name), self._fs.open_output_stream(self._path(name)) as out:
            out.write(data)

    def put_file(self, name: str, local: Path) -> None:
        """Upload a local file as one object."""
        with (
            self._errors("upload to", name),
            local.open("rb") as source,
            self._fs.open_output_stream(self._path(name)) as out,
        ):
            while block := source.read(COPY_BLOCK):
                out.write(block)

    def get_bytes(self, name: str) -> bytes | None:
        """One object's bytes; None when there is no such object."""
        with self._errors("read", name):
            try:
                with self._fs.open_input_stream(self._path(name)) as found:
                    return bytes(found.read())
            except FileNotFoundError:
                return None

    def get_file(self, name: str, local: Path) -> None:
        """Download one object to `local`, whole or not at all (written aside, renamed)."""
        partial = local.with_name(f".{local.name}.{uuid.uuid4().hex[:8]}.part")
        try:
            with (
                self._errors("download", name),
                self._fs.open_input_stream(self._path(name)) as found,
                partial.open("wb") as out,
            ):
                while block := found.read(COPY_BLOCK):
                    out.write(block)
            partial.replace(local)
        finally:
            partial.unlink(missing_ok=True)

    def names(self, prefix: str) -> list[str]:
        """Every object name under `prefix` (a folder name), relative to the location."""
        from pyarrow import fs

        selector = fs.FileSelector(self._path(prefix), recursive=True, allow_not_found=True)
        with self._errors("list", prefix):
            infos = self._fs.get_file_info(selector)
        base = self.location.path + "/"
        return sorted(i.path.removeprefix(base) for i in infos if i.type == fs.FileType.File)

    def delete(self, names: Iterable[str]) -> None:
        """Delete objects; one already gone is not an error."""
        for name in names:
            with self._errors("delete", name), suppress(FileNotFoundError):
                self._fs.delete_file(self._path(name))


def object_store(uri: str) -> ObjectStore:
    """The store at an `s3://` URI, with the process's AWS environment."""
    return ObjectStore(ObjectLocation(uri))
