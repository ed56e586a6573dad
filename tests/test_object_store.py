"""Tests for ragd.adapters.object_store against a real S3 server (SeaweedFS on loopback)."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from ragd.adapters.object_store import ObjectLocation, ObjectStore, object_store, s3_options
from ragd.errors import ConfigError, StoreError
from tests.s3_server import ACCESS_KEY, REGION, SECRET_KEY


@pytest.fixture
def store(s3_uri: str) -> ObjectStore:
    return object_store(s3_uri)


def _closed_port() -> int:
    """A port on 127.0.0.1 that nothing listens on (bound, then released)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


# --- locations ----------------------------------------------------------------------------


def test_location_names_children_below_its_prefix() -> None:
    location = ObjectLocation("s3://bucket/some/prefix")

    assert location.child("published", "LATEST").uri == "s3://bucket/some/prefix/published/LATEST"
    assert location.path == "bucket/some/prefix"


@pytest.mark.parametrize("uri", ["bucket/prefix", "s3://bucket/prefix/", "file:///srv/index"])
def test_location_refuses_what_is_not_an_s3_prefix(uri: str) -> None:
    with pytest.raises(ValueError, match="not an s3://bucket/prefix URI"):
        ObjectLocation(uri)


# --- s3_options ---------------------------------------------------------------------------


def test_s3_options_take_endpoint_and_credentials_from_the_aws_variables() -> None:
    options = s3_options(
        {
            "AWS_ENDPOINT_URL": "https://s3.example.com:9000",
            "AWS_ACCESS_KEY_ID": "key",
            "AWS_SECRET_ACCESS_KEY": "secret",
            "AWS_SESSION_TOKEN": "token",
            "AWS_DEFAULT_REGION": "eu-west-1",
        }
    )

    assert options["endpoint_override"] == "s3.example.com:9000"
    assert options["scheme"] == "https"
    assert (options["access_key"], options["secret_key"]) == ("key", "secret")
    assert options["session_token"] == "token"
    assert options["region"] == "eu-west-1"
    assert options["connect_timeout"] and options["request_timeout"]


def test_s3_options_refuse_an_http_endpoint_without_allow_http() -> None:
    with pytest.raises(ConfigError) as info:
        s3_options({"AWS_ENDPOINT_URL": "http://127.0.0.1:8333"})

    assert "http://127.0.0.1:8333" in info.value.message
    assert info.value.hint is not None and "AWS_ALLOW_HTTP" in info.value.hint


@pytest.mark.parametrize("allow", ["true", "1", "YES", "on"])
def test_s3_options_accept_an_http_endpoint_with_allow_http(allow: str) -> None:
    options = s3_options({"AWS_ENDPOINT_URL": "http://127.0.0.1:8333", "AWS_ALLOW_HTTP": allow})

    assert (options["scheme"], options["endpoint_override"]) == ("http", "127.0.0.1:8333")


@pytest.mark.parametrize("endpoint", ["127.0.0.1:8333", "s3.example.com", "ftp://host", "https://"])
def test_s3_options_refuse_an_endpoint_that_is_not_an_http_url(endpoint: str) -> None:
    with pytest.raises(ConfigError) as info:
        s3_options({"AWS_ENDPOINT_URL": endpoint, "AWS_ALLOW_HTTP": "true"})

    assert "not an http(s) URL" in info.value.message
    assert info.value.hint is not None


# --- objects on the server ----------------------------------------------------------------


def test_put_bytes_then_get_bytes_returns_them(store: ObjectStore) -> None:
    data = bytes(range(256)) * 5

    store.put_bytes("some/object.bin", data)

    assert store.get_bytes("some/object.bin") == data


def test_put_bytes_replaces_an_object_whole(store: ObjectStore) -> None:
    store.put_bytes("LATEST", b"first, and longer than the second")

    store.put_bytes("LATEST", b"second")

    assert store.get_bytes("LATEST") == b"second"


def test_get_bytes_of_a_missing_object_is_none(store: ObjectStore) -> None:
    assert store.get_bytes("never/written") is None


def test_put_file_then_get_file_returns_the_same_bytes(store: ObjectStore, tmp_path: Path) -> None:
    source = tmp_path / "source.bin"
    source.write_bytes(bytes(range(256)) * 9000)  # over one copy block
    target = tmp_path / "out" / "copy.bin"
    target.parent.mkdir()

    store.put_file("files/source.bin", source)
    store.get_file("files/source.bin", target)

    assert target.read_bytes() == source.read_bytes()
    assert [p.name for p in target.parent.iterdir()] == ["copy.bin"]  # nothing left aside


def test_get_file_of_a_missing_object_is_a_store_error_leaving_no_file(
    store: ObjectStore, tmp_path: Path
) -> None:
    target = tmp_path / "copy.bin"

    with pytest.raises(StoreError, match=r"missing\.bin"):
        store.get_file("missing.bin", target)

    assert list(tmp_path.iterdir()) == []


def test_get_file_of_a_missing_object_keeps_the_old_local_file(
    store: ObjectStore, tmp_path: Path
) -> None:
    target = tmp_path / "copy.bin"
    target.write_bytes(b"old")

    with pytest.raises(StoreError):
        store.get_file("missing.bin", target)

    assert target.read_bytes() == b"old"
    assert list(tmp_path.iterdir()) == [target]


def test_names_lists_recursively_relative_to_the_location(store: ObjectStore) -> None:
    for name in ("a/one", "a/b/two", "a/b/c/three", "ab/other", "top"):
        store.put_bytes(name, name.encode())

    assert store.names("a") == ["a/b/c/three", "a/b/two", "a/one"]
    assert store.names("a/b") == ["a/b/c/three", "a/b/two"]


def test_names_of_a_missing_folder_is_empty(store: ObjectStore) -> None:
    assert store.names("nothing/here") == []


def test_names_do_not_see_other_prefixes(s3_uri: str) -> None:
    mine, other = object_store(s3_uri + "/mine"), object_store(s3_uri + "/other")
    mine.put_bytes("x/1", b"1")
    other.put_bytes("x/2", b"2")

    assert mine.names("x") == ["x/1"]
    assert other.names("x") == ["x/2"]


def test_delete_removes_the_named_objects_only(store: ObjectStore) -> None:
    for name in ("d/1", "d/2", "d/3"):
        store.put_bytes(name, b"x")

    store.delete(["d/1", "d/3"])

    assert store.names("d") == ["d/2"]
    assert store.get_bytes("d/1") is None


def test_delete_of_an_already_missing_name_is_fine(store: ObjectStore) -> None:
    store.put_bytes("kept", b"x")

    store.delete(["never/written", "gone"])
    store.delete(["never/written"])

    assert store.get_bytes("kept") == b"x"


def test_an_unreachable_endpoint_is_a_store_error() -> None:
    # The client's timeouts bound it (s3_options, tested above); a hang fails the test's timeout.
    environ = {
        "AWS_ENDPOINT_URL": f"http://127.0.0.1:{_closed_port()}",
        "AWS_ALLOW_HTTP": "true",
        "AWS_ACCESS_KEY_ID": ACCESS_KEY,
        "AWS_SECRET_ACCESS_KEY": SECRET_KEY,
        "AWS_REGION": REGION,
    }
    unreachable = ObjectStore(ObjectLocation("s3://ragd-tests/nowhere"), environ)

    with pytest.raises(StoreError, match="s3://ragd-tests/nowhere/LATEST"):
        unreachable.get_bytes("LATEST")
