"""Tests for ragd.config: the example config, defaults, validation messages, env overrides."""

from __future__ import annotations

import dataclasses
import os
import re
import subprocess
import sys
import tomllib
from datetime import timedelta
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragd.config import (
    DEFAULT_EXCLUDE,
    DEFAULT_INCLUDE,
    DEFAULT_MODEL,
    Config,
    FolderSourceConfig,
    HttpConfig,
    PollSourceConfig,
    WebhookSourceConfig,
    format_duration,
    load_config,
    parse_config,
    parse_duration,
    resolve_config_path,
)
from ragd.config.loading import MAX_CONFIG_BYTES
from ragd.config.settings import SECTIONS
from ragd.config.tables import fields_of
from ragd.errors import ConfigError

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "config.toml"
SCHEMA = {section: set(fields_of(cls)) for section, cls in SECTIONS.items()}  # the keys of each

FOLDER = """
[[sources]]
name = "docs"
type = "folder"
path = "docs"
"""


def parse(text: str, base_dir: Path, environ: dict[str, str] | None = None) -> Config:
    """parse_config with an empty environment unless one is given, so the host's RAGD_* vars
    never leak into a test."""
    return parse_config(text, base_dir=base_dir, environ={} if environ is None else environ)


def error(text: str, base_dir: Path, environ: dict[str, str] | None = None) -> str:
    with pytest.raises(ConfigError) as info:
        parse(text, base_dir, environ)
    message = str(info.value)
    assert "\n" not in message
    return message


def folder_source(config: Config, name: str) -> FolderSourceConfig:
    source = config.source(name)
    assert isinstance(source, FolderSourceConfig)
    return source


def webhook_source(config: Config, name: str) -> WebhookSourceConfig:
    source = config.source(name)
    assert isinstance(source, WebhookSourceConfig)
    return source


def webhook(body: str) -> str:
    return f'[[sources]]\nname = "cms"\ntype = "webhook"\n{body}\n'


# --- the example configuration ---------------------------------------------------------------


def test_example_config_loads_with_fastapi_docs_source() -> None:
    config = load_config(EXAMPLE, environ={})
    source = folder_source(config, "fastapi-docs")
    assert source.path.is_absolute()
    assert source.path == (REPO / "../shared/corpora/fastapi-docs").resolve()
    assert source.include == ("**/*.md",)
    assert config.path == EXAMPLE
    assert config.daemon.data_dir == REPO / ".ragd-data"


def test_example_config_uses_the_local_model() -> None:
    embedding = load_config(EXAMPLE, environ={}).embedding
    assert embedding.model_is_local
    assert embedding.model == str((REPO / "../shared/models/minilm-l6-static-256").resolve())


# Sections that change where the index lives or what runs it: the example shows them
# commented out, so that it runs on one machine as it is.
OPT_IN_SECTIONS = ("storage", "cluster")


def test_example_config_sets_every_key() -> None:
    raw = tomllib.loads(EXAMPLE.read_text(encoding="utf-8"))
    for section, keys in SCHEMA.items():
        if section in OPT_IN_SECTIONS:
            assert section not in raw, section
            continue
        assert set(raw[section]) == set(keys), section
    assert set(raw["sources"][0]) == {"name", "type", "path", "include", "exclude", "max_age"}


def test_example_config_writes_the_http_limits_at_their_defaults() -> None:
    http = load_config(EXAMPLE, environ={}).http
    default = HttpConfig()

    assert (http.header_timeout, http.body_timeout, http.max_connections) == (
        default.header_timeout,
        default.body_timeout,
        default.max_connections,
    )


def test_example_storage_and_cluster_set_every_key_when_uncommented() -> None:
    text = EXAMPLE.read_text(encoding="utf-8")
    commented = text[text.index("# [storage]") : text.index("[[sources]]")]
    uncommented = re.sub(r"^# ", "", commented, flags=re.MULTILINE)
    raw = tomllib.loads(uncommented)
    for section in OPT_IN_SECTIONS:
        assert set(raw[section]) == SCHEMA[section], section
    config = parse(uncommented + FOLDER, REPO)
    assert config.storage.uri == "s3://ragd-index/docs"
    assert config.cluster.ray_address == "ray://ray-head.internal:10001"


def test_example_webhook_source_is_valid_when_uncommented() -> None:
    text = EXAMPLE.read_text(encoding="utf-8")
    commented = text[text.index("# [[sources]]") :]
    # "# key" lines become keys; "# # comment" lines stay comments.
    uncommented = re.sub(r"^# ", "", commented, flags=re.MULTILINE)
    config = parse(FOLDER + uncommented, REPO)
    source = webhook_source(config, "cms")
    assert source.secret_env == "RAGD_CMS_WEBHOOK_SECRET"
    assert source.fetch_url == "https://cms.example.com/api/entries/{id}"
    assert dict(source.fetch_headers_env) == {"Authorization": "RAGD_CMS_API_AUTH"}


def test_reading_a_config_imports_no_pydantic(tmp_path: Path) -> None:
    # Every command reads the config first, `ragd status` beside a daemon included: the
    # schema is checked by msgspec, whose import and schema cost ~8 ms to pydantic's ~95.
    code = (
        "import sys; from pathlib import Path; from ragd.config import parse_config; "
        f"parse_config({FOLDER!r}, base_dir=Path({str(tmp_path)!r}), environ={{}}); "
        "print(sorted({'pydantic', 'msgspec'} & set(sys.modules)))"
    )

    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)

    assert out.stdout.strip() == "['msgspec']"


# --- defaults --------------------------------------------------------------------------------


def test_omitted_sections_take_defaults(tmp_path: Path) -> None:
    config = parse(FOLDER, tmp_path)
    assert config.path is None
    assert config.daemon.data_dir == tmp_path / ".ragd-data"
    assert config.daemon.log_format == "auto"
    assert config.daemon.log_level == "info"
    assert config.daemon.default_max_age == timedelta(days=7)
    assert config.daemon.max_file_bytes == 20_000_000
    assert (config.http.host, config.http.port, config.http.max_body_bytes) == (
        "127.0.0.1",
        8750,
        1_048_576,
    )
    assert (config.http.header_timeout, config.http.body_timeout) == (
        timedelta(seconds=10),
        timedelta(seconds=30),
    )
    assert config.http.max_connections == 512
    assert config.embedding.model == DEFAULT_MODEL
    assert not config.embedding.model_is_local
    assert config.embedding.batch_size == 1024
    assert (config.chunking.max_chars, config.chunking.overlap) == (900, 120)
    search = config.search
    assert (search.k, search.candidates, search.rrf_k) == (10, 50, 60)
    assert (search.max_query_chars, search.mode, search.fusion) == (2000, "hybrid", "convex")
    assert search.index_cache_bytes == 256 << 20
    assert config.schedule.rescan_interval == timedelta(hours=1)
    assert config.schedule.compact_interval == timedelta(hours=6)
    assert config.schedule.cleanup_older_than == timedelta(minutes=10)
    assert config.schedule.misfire_grace == timedelta(hours=1)
    assert config.env_overrides == ()


def test_folder_source_defaults(tmp_path: Path) -> None:
    source = folder_source(parse(FOLDER, tmp_path), "docs")
    assert source.type == "folder"
    assert source.include == DEFAULT_INCLUDE
    assert source.exclude == DEFAULT_EXCLUDE
    assert source.max_age == timedelta(days=7)


def test_source_max_age_defaults_to_daemon_default_max_age(tmp_path: Path) -> None:
    config = parse('[daemon]\ndefault_max_age = "2d"\n' + FOLDER, tmp_path)
    assert config.source("docs").max_age == timedelta(days=2)


def test_source_max_age_overrides_daemon_default(tmp_path: Path) -> None:
    config = parse('[daemon]\ndefault_max_age = "2d"\n' + FOLDER + 'max_age = "3h"\n', tmp_path)
    assert config.source("docs").max_age == timedelta(hours=3)


def test_source_lookup_raises_key_error_for_unknown_name(tmp_path: Path) -> None:
    config = parse(FOLDER, tmp_path)
    assert config.source("docs").name == "docs"
    with pytest.raises(KeyError):
        config.source("nope")


def test_config_objects_are_frozen(tmp_path: Path) -> None:
    config = parse(FOLDER, tmp_path)
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.chunking.max_chars = 1  # type: ignore[misc]


# --- unknown keys ----------------------------------------------------------------------------


def test_unknown_key_in_section_is_named(tmp_path: Path) -> None:
    message = error("[chunking]\nsize = 5\n" + FOLDER, tmp_path)
    assert message.startswith("config.toml: chunking.size: unknown key")
    assert "valid keys: max_chars, max_chunks_per_document, overlap" in message


def test_unknown_top_level_key_is_named(tmp_path: Path) -> None:
    message = error("[searching]\nk = 5\n" + FOLDER, tmp_path)
    assert message.startswith("config.toml: searching: unknown key")
    assert "did you mean 'search'?" in message


def test_section_key_at_top_level_says_which_section(tmp_path: Path) -> None:
    message = error('data_dir = "x"\n' + FOLDER, tmp_path)
    assert "config.toml: data_dir: unknown key" in message
    assert "'data_dir' belongs in [daemon]" in message


def test_unknown_key_in_source_is_named(tmp_path: Path) -> None:
    message = error(FOLDER + "recursive = true\n", tmp_path)
    assert message.startswith("config.toml: sources[0].recursive: unknown key")


def test_near_miss_key_gets_a_suggestion(tmp_path: Path) -> None:
    message = error("[chunking]\nmax_char = 500\n" + FOLDER, tmp_path)
    assert "chunking.max_char: unknown key" in message
    assert message.endswith("(did you mean 'max_chars'?)")


def test_inline_secret_key_hints_at_secret_env(tmp_path: Path) -> None:
    message = error(webhook('secret = "whsec_c2VjcmV0"'), tmp_path)
    assert "sources[0].secret: unknown key" in message
    assert "secret_env" in message
    assert "whsec_c2VjcmV0" not in message


# --- types and bounds ------------------------------------------------------------------------


def test_string_for_int_is_rejected(tmp_path: Path) -> None:
    message = error('[chunking]\nmax_chars = "900"\n' + FOLDER, tmp_path)
    assert message == 'config.toml: chunking.max_chars: expected an integer, got a string "900"'


def test_bool_for_int_is_rejected(tmp_path: Path) -> None:
    message = error("[search]\nk = true\n" + FOLDER, tmp_path)
    assert message == "config.toml: search.k: expected an integer, got a boolean true"


def test_float_for_int_is_rejected(tmp_path: Path) -> None:
    message = error("[embedding]\nbatch_size = 64.0\n" + FOLDER, tmp_path)
    assert "embedding.batch_size: expected an integer, got a float 64.0" in message


@pytest.mark.parametrize(
    ("section", "key", "value", "problem"),
    [
        ("chunking", "max_chars", 99, "must be at least 100"),
        ("chunking", "max_chunks_per_document", 0, "must be at least 1"),
        ("search", "k", 0, "must be between 1 and 1000"),
        ("search", "k", 1001, "must be between 1 and 1000"),
        ("search", "candidates", 10_001, "must be between 1 and 10000"),
        ("search", "rrf_k", 0, "must be at least 1"),
        ("search", "max_query_chars", 100_001, "must be between 1 and 100000"),
        ("search", "index_cache_bytes", 1000, "must be at least 1048576"),
        ("embedding", "batch_size", 65_537, "must be between 1 and 65536"),
        ("daemon", "max_file_bytes", 1023, "must be at least 1024"),
        ("http", "max_body_bytes", 0, "must be at least 1024"),
        ("http", "max_connections", 0, "must be at least 1"),
    ],
)
def test_int_out_of_bounds_is_rejected(
    tmp_path: Path, section: str, key: str, value: int, problem: str
) -> None:
    message = error(f"[{section}]\n{key} = {value}\n" + FOLDER, tmp_path)
    assert message == f"config.toml: {section}.{key}: {problem}, got {value}"


@pytest.mark.parametrize("key", ["header_timeout", "body_timeout"])
def test_an_http_timeout_of_zero_is_named(tmp_path: Path, key: str) -> None:
    message = error(f'[http]\n{key} = "0s"\n' + FOLDER, tmp_path)

    assert message.startswith(f"config.toml: http.{key}: must be greater than zero")


def test_overlap_must_be_below_half_of_max_chars(tmp_path: Path) -> None:
    message = error("[chunking]\nmax_chars = 200\noverlap = 100\n" + FOLDER, tmp_path)
    assert "chunking.overlap: must be less than half of chunking.max_chars (100), got 100" in (
        message
    )


def test_overlap_just_below_half_is_accepted(tmp_path: Path) -> None:
    config = parse("[chunking]\nmax_chars = 200\noverlap = 99\n" + FOLDER, tmp_path)
    assert config.chunking.overlap == 99


def test_the_per_document_chunk_limit_is_a_chunking_key(tmp_path: Path) -> None:
    default = parse(FOLDER, tmp_path).chunking
    config = parse("[chunking]\nmax_chunks_per_document = 40\n" + FOLDER, tmp_path)

    assert default.max_chunks_per_document == 25_000
    assert config.chunking.max_chunks_per_document == 40


def test_negative_overlap_is_rejected(tmp_path: Path) -> None:
    assert "chunking.overlap: must be at least 0, got -1" in error(
        "[chunking]\noverlap = -1\n" + FOLDER, tmp_path
    )


def test_bad_choice_lists_the_options(tmp_path: Path) -> None:
    message = error('[search]\nmode = "keyword"\n' + FOLDER, tmp_path)
    assert message == (
        'config.toml: search.mode: must be one of "hybrid", "bm25", "vector", got "keyword"'
    )


def test_section_that_is_not_a_table_is_rejected(tmp_path: Path) -> None:
    message = error("daemon = 5\n" + FOLDER, tmp_path)
    assert message == "config.toml: daemon: expected a table ([daemon]), got an integer 5"


def test_empty_string_path_is_rejected(tmp_path: Path) -> None:
    assert "daemon.data_dir: must not be empty" in error(
        '[daemon]\ndata_dir = ""\n' + FOLDER, tmp_path
    )


# --- durations -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("500ms", timedelta(milliseconds=500)),
        ("30s", timedelta(seconds=30)),
        ("90m", timedelta(minutes=90)),
        ("6h", timedelta(hours=6)),
        ("7d", timedelta(days=7)),
        ("2w", timedelta(weeks=2)),
        ("1h30m", timedelta(hours=1, minutes=30)),
        ("1h 30m", timedelta(hours=1, minutes=30)),
        ("1.5h", timedelta(minutes=90)),
        ("45", timedelta(seconds=45)),
        (45, timedelta(seconds=45)),
        (0.25, timedelta(milliseconds=250)),
    ],
)
def test_parse_duration_accepts(value: object, expected: timedelta) -> None:
    assert parse_duration(value, key="k") == expected


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ("0s", "must be greater than zero"),
        (0, "must be greater than zero"),
        ("-5m", "must be greater than zero"),
        (-5, "must be greater than zero"),
        ("soon", "is not a duration"),
        ("5 minutes", "is not a duration"),
        ("1M", "is not a duration"),
        ("", "is not a duration"),
        (True, "expected a duration string or a number of seconds"),
        ([1], "expected a duration string or a number of seconds"),
        (float("inf"), "must be a finite number of seconds"),
        ("99999999999w", "is too large"),
    ],
)
def test_parse_duration_rejects(value: object, problem: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse_duration(value, key="schedule.rescan_interval")
    assert info.value.message.startswith(f"schedule.rescan_interval: {problem}, got ")


def test_bad_duration_in_file_names_file_and_key(tmp_path: Path) -> None:
    message = error('[schedule]\ncompact_interval = "6x"\n' + FOLDER, tmp_path)
    assert message.startswith('config.toml: schedule.compact_interval: is not a duration, got "6x"')
    assert '"30s"' in message  # the hint shows how to write one


def test_zero_source_max_age_is_rejected(tmp_path: Path) -> None:
    message = error(FOLDER + 'max_age = "0s"\n', tmp_path)
    assert 'sources.docs.max_age: must be greater than zero, got "0s"' in message


@pytest.mark.parametrize(
    ("td", "text"),
    [
        (timedelta(days=7), "7d"),
        (timedelta(hours=1, minutes=30), "1h30m"),
        (timedelta(milliseconds=500), "500ms"),
        (timedelta(seconds=1, microseconds=5), "1s5us"),
        (timedelta(0), "0s"),
        (-timedelta(minutes=10), "-10m"),
    ],
)
def test_format_duration(td: timedelta, text: str) -> None:
    assert format_duration(td) == text


@settings(database=None, deadline=None)
@given(st.timedeltas(min_value=timedelta(microseconds=1), max_value=timedelta(days=10_000)))
def test_format_duration_round_trips_through_parse(td: timedelta) -> None:
    assert parse_duration(format_duration(td), key="k") == td


# --- paths -----------------------------------------------------------------------------------


def test_relative_paths_resolve_against_base_dir(tmp_path: Path) -> None:
    text = '[daemon]\ndata_dir = "state/../data"\n' + FOLDER + webhook('secret_file = "s/key"')
    config = parse(text, tmp_path)
    assert config.daemon.data_dir == tmp_path / "data"
    assert folder_source(config, "docs").path == tmp_path / "docs"
    assert webhook_source(config, "cms").secret_file == tmp_path / "s" / "key"


def test_absolute_path_is_kept(tmp_path: Path) -> None:
    text = FOLDER.replace('path = "docs"', f'path = "{tmp_path / "elsewhere"}"')
    source = folder_source(parse(text, tmp_path / "conf"), "docs")
    assert source.path == tmp_path / "elsewhere"


def test_home_in_path_is_expanded(tmp_path: Path) -> None:
    config = parse(FOLDER.replace('path = "docs"', 'path = "~/docs"'), tmp_path)
    source = folder_source(config, "docs")
    assert source.path == Path.home().resolve() / "docs"


def test_missing_folder_root_is_not_an_error(tmp_path: Path) -> None:
    source = folder_source(parse(FOLDER, tmp_path), "docs")
    assert not source.path.exists()


def test_folder_path_must_be_a_string(tmp_path: Path) -> None:
    message = error(FOLDER.replace('path = "docs"', "path = 42"), tmp_path)
    assert message == "config.toml: sources.docs.path: expected a string, got an integer 42"


def test_folder_path_is_required(tmp_path: Path) -> None:
    message = error('[[sources]]\nname = "docs"\ntype = "folder"\n', tmp_path)
    assert message.startswith("config.toml: sources.docs.path: is required")


# --- the embedding model ---------------------------------------------------------------------


def test_model_hub_id_is_kept_verbatim(tmp_path: Path) -> None:
    embedding = parse('[embedding]\nmodel = "org/some-model_v2.1"\n' + FOLDER, tmp_path).embedding
    assert (embedding.model, embedding.model_is_local) == ("org/some-model_v2.1", False)


@pytest.mark.parametrize("value", ["./models/m", "../models/m"])
def test_model_relative_path_is_local_and_absolute(tmp_path: Path, value: str) -> None:
    base = tmp_path / "conf"
    (base / value).mkdir(parents=True)
    embedding = parse(f'[embedding]\nmodel = "{value}"\n' + FOLDER, base).embedding
    assert embedding.model_is_local
    assert embedding.model == str((base / value).resolve())


def test_model_that_exists_under_base_dir_is_local(tmp_path: Path) -> None:
    (tmp_path / "org" / "model").mkdir(parents=True)
    embedding = parse('[embedding]\nmodel = "org/model"\n' + FOLDER, tmp_path).embedding
    assert embedding.model_is_local
    assert embedding.model == str(tmp_path / "org" / "model")


@pytest.mark.parametrize(
    "value", ["./models/missing", "/nonexistent/ragd-model", "~/no-such-model"]
)
def test_a_model_directory_that_does_not_exist_is_a_config_error_with_a_hint(
    tmp_path: Path, value: str
) -> None:
    message = error(f'[embedding]\nmodel = "{value}"\n' + FOLDER, tmp_path)

    assert message.startswith("config.toml: embedding.model: no such directory: /")
    assert 'Hugging Face id such as "minishlab/potion-base-8M"' in message


def test_a_model_path_that_is_a_file_is_a_config_error(tmp_path: Path) -> None:
    (tmp_path / "model.safetensors").write_bytes(b"")
    message = error('[embedding]\nmodel = "./model.safetensors"\n' + FOLDER, tmp_path)

    assert message.startswith(
        f"config.toml: embedding.model: is not a directory: {tmp_path / 'model.safetensors'} ("
    )


def test_a_missing_second_stage_model_directory_counts_only_while_it_is_on(
    tmp_path: Path,
) -> None:
    rerank = '[rerank]\nmodel = "./missing-onnx"\n'

    message = error(rerank + FOLDER, tmp_path)
    config = parse(rerank + "enabled = false\n" + FOLDER, tmp_path)

    assert message.startswith("config.toml: rerank.model: no such directory")
    assert "or set [rerank] enabled = false" in message
    assert not config.rerank.enabled


def test_a_missing_model_directory_from_the_environment_names_the_variable(
    tmp_path: Path,
) -> None:
    environ = {"RAGD_EMBEDDING_MODEL": str(tmp_path / "missing")}

    message = error(FOLDER, tmp_path, environ)

    assert message.startswith(
        "environment variable RAGD_EMBEDDING_MODEL (overrides embedding.model): no such directory"
    )


def test_model_that_is_neither_path_nor_hub_id_is_rejected(tmp_path: Path) -> None:
    message = error('[embedding]\nmodel = "a/b/c"\n' + FOLDER, tmp_path)
    assert message.startswith("config.toml: embedding.model: is neither a directory under")
    assert 'got "a/b/c"' in message


# --- environment overrides -------------------------------------------------------------------


def test_env_overrides_model_and_data_dir(tmp_path: Path) -> None:
    model_dir = tmp_path / "model"
    model_dir.mkdir()
    environ = {"RAGD_EMBEDDING_MODEL": str(model_dir), "RAGD_DATA_DIR": str(tmp_path / "d")}
    config = parse('[embedding]\nmodel = "org/model"\n' + FOLDER, tmp_path / "conf", environ)
    assert config.embedding.model == str(model_dir)
    assert config.embedding.model_is_local
    assert config.daemon.data_dir == tmp_path / "d"
    assert set(config.env_overrides) == {"RAGD_EMBEDDING_MODEL", "RAGD_DATA_DIR"}


def test_env_relative_paths_resolve_against_cwd(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "m").mkdir()
    environ = {"RAGD_EMBEDDING_MODEL": "./m", "RAGD_DATA_DIR": "data"}
    config = parse(FOLDER, tmp_path / "conf", environ)
    assert config.embedding.model == str(tmp_path.resolve() / "m")
    assert config.daemon.data_dir == tmp_path.resolve() / "data"


def test_env_model_hub_id_is_not_local(tmp_path: Path) -> None:
    config = parse(FOLDER, tmp_path, {"RAGD_EMBEDDING_MODEL": "org/other"})
    assert (config.embedding.model, config.embedding.model_is_local) == ("org/other", False)


def test_env_overrides_log_format_and_listen(tmp_path: Path) -> None:
    environ = {"RAGD_LOG_FORMAT": "json", "RAGD_HTTP_LISTEN": "[::]:9000"}
    config = parse(FOLDER, tmp_path, environ)
    assert config.daemon.log_format == "json"
    assert (config.http.host, config.http.port) == ("::", 9000)


def test_bad_env_override_names_the_variable(tmp_path: Path) -> None:
    message = error(FOLDER, tmp_path, {"RAGD_LOG_FORMAT": "xml"})
    assert message == (
        "environment variable RAGD_LOG_FORMAT (overrides daemon.log_format): "
        'must be one of "auto", "json", "console", got "xml"'
    )


def test_empty_env_override_is_ignored(tmp_path: Path) -> None:
    config = parse(FOLDER, tmp_path, {"RAGD_DATA_DIR": "", "RAGD_HTTP_LISTEN": ""})
    assert config.daemon.data_dir == tmp_path / ".ragd-data"
    assert config.env_overrides == ()


def test_environ_none_reads_os_environ(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAGD_LOG_FORMAT", "console")
    config = parse_config(FOLDER, base_dir=tmp_path)
    assert config.daemon.log_format == "console"


# --- webhook sources -------------------------------------------------------------------------


def test_webhook_source_with_secret_env(tmp_path: Path) -> None:
    source = webhook_source(parse(webhook('secret_env = "CMS_SECRET"'), tmp_path), "cms")
    assert source.secret_env == "CMS_SECRET"
    assert source.secret_file is None
    assert source.signature == "standard-webhooks"
    assert source.fetch_timeout == timedelta(seconds=10)
    assert source.fetch_max_bytes == 5_000_000
    assert dict(source.fetch_headers_env) == {}


def test_webhook_source_needs_a_secret(tmp_path: Path) -> None:
    message = error(webhook(""), tmp_path)
    assert message.startswith(
        "config.toml: sources.cms.secret_env: a webhook source needs secret_env or secret_file"
    )


def test_webhook_source_rejects_both_secrets(tmp_path: Path) -> None:
    message = error(webhook('secret_env = "S"\nsecret_file = "s.key"'), tmp_path)
    assert "sources.cms.secret_file: set secret_env or secret_file, not both" in message


def test_insecure_webhook_requires_bearer_token_env(tmp_path: Path) -> None:
    message = error(webhook("insecure_no_signature = true"), tmp_path)
    assert "sources.cms.bearer_token_env: is required when insecure_no_signature = true" in message


def test_insecure_webhook_with_bearer_token_env_is_valid(tmp_path: Path) -> None:
    body = 'insecure_no_signature = true\nbearer_token_env = "CMS_TOKEN"'
    source = webhook_source(parse(webhook(body), tmp_path), "cms")
    assert source.insecure_no_signature
    assert source.bearer_token_env == "CMS_TOKEN"
    assert source.secret_env is None


def test_insecure_webhook_rejects_a_secret(tmp_path: Path) -> None:
    body = 'insecure_no_signature = true\nbearer_token_env = "T"\nsecret_env = "S"'
    message = error(webhook(body), tmp_path)
    assert "sources.cms.secret_env: has no effect with insecure_no_signature = true" in message


def test_secret_pasted_into_secret_env_is_not_echoed(tmp_path: Path) -> None:
    message = error(webhook('secret_env = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"'), tmp_path)
    assert "sources.cms.secret_env: expected the NAME of an environment variable" in message
    assert "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw" not in message


def test_secret_values_are_never_read(tmp_path: Path) -> None:
    # The variable is unset and the file missing: the config only records where they live.
    text = webhook('secret_file = "missing.key"') + webhook('secret_env = "UNSET"').replace(
        '"cms"', '"cms2"'
    )
    config = parse(text, tmp_path)
    assert webhook_source(config, "cms").secret_file == tmp_path / "missing.key"


def test_github_signature_scheme_is_accepted(tmp_path: Path) -> None:
    config = parse(webhook('secret_env = "S"\nsignature = "github"'), tmp_path)
    source = webhook_source(config, "cms")
    assert source.signature == "github"


@pytest.mark.parametrize(
    ("url", "problem"),
    [
        ("ftp://cms/{id}", "must start with http:// or https://"),
        ("https://cms/entries", 'must contain the placeholder "{id}" for the entry id'),
        ("https://cms/{id}?rev={rev}", 'may contain no placeholder other than "{id}"'),
    ],
)
def test_bad_fetch_url_is_rejected(tmp_path: Path, url: str, problem: str) -> None:
    message = error(webhook(f'secret_env = "S"\nfetch_url = "{url}"'), tmp_path)
    assert f'sources.cms.fetch_url: {problem}, got "{url}"' in message


def test_fetch_headers_env_maps_header_to_variable_name(tmp_path: Path) -> None:
    body = 'secret_env = "S"\nfetch_headers_env = { Authorization = "CMS_AUTH", X-Api-Key = "K" }'
    source = webhook_source(parse(webhook(body), tmp_path), "cms")
    assert dict(source.fetch_headers_env) == {
        "Authorization": "CMS_AUTH",
        "X-Api-Key": "K",
    }


def test_fetch_headers_env_value_must_be_a_variable_name(tmp_path: Path) -> None:
    body = 'secret_env = "S"\nfetch_headers_env = { Authorization = "Bearer abc123" }'
    message = error(webhook(body), tmp_path)
    assert "sources.cms.fetch_headers_env.Authorization: expected the NAME" in message
    assert "abc123" not in message


def test_folder_key_on_webhook_source_is_an_error(tmp_path: Path) -> None:
    message = error(webhook('secret_env = "S"\npath = "docs"'), tmp_path)
    assert message == (
        "config.toml: sources.cms.path: 'path' applies to folder sources only, "
        'and this source has type = "webhook"'
    )


def test_webhook_key_on_folder_source_is_an_error(tmp_path: Path) -> None:
    message = error(FOLDER + 'fetch_url = "https://x/{id}"\n', tmp_path)
    assert message.startswith(
        "config.toml: sources.docs.fetch_url: 'fetch_url' applies to webhook sources only"
    )


# --- sources in general ----------------------------------------------------------------------


def test_duplicate_source_names_are_rejected(tmp_path: Path) -> None:
    message = error(FOLDER + FOLDER, tmp_path)
    assert message == (
        'config.toml: sources[1].name: duplicate source name (also used by sources[0]), got "docs"'
    )


@pytest.mark.parametrize("name", ["Docs", "-docs", "my docs", "a" * 65, "docs.v2", ""])
def test_bad_source_name_is_rejected(tmp_path: Path, name: str) -> None:
    message = error(FOLDER.replace('"docs"', f'"{name}"', 1), tmp_path)
    assert message.startswith("config.toml: sources[0].name: ")


def test_longest_source_name_is_accepted(tmp_path: Path) -> None:
    name = "a" + "-_9" * 21
    assert len(name) == 64
    assert parse(FOLDER.replace('"docs"', f'"{name}"', 1), tmp_path).sources[0].name == name


def test_source_name_is_required(tmp_path: Path) -> None:
    message = error('[[sources]]\ntype = "folder"\npath = "x"\n', tmp_path)
    assert message.startswith("config.toml: sources[0].name: is required")


def test_unknown_source_type_gets_a_suggestion(tmp_path: Path) -> None:
    message = error(FOLDER.replace('"folder"', '"folders"'), tmp_path)
    assert (
        'sources.docs.type: must be one of "folder", "webhook", "sitemap", "wordpress", '
        'got "folders"' in message
    )
    assert "did you mean 'folder'?" in message


def test_at_least_one_source_is_required(tmp_path: Path) -> None:
    message = error("[chunking]\nmax_chars = 900\n", tmp_path)
    assert message.startswith("config.toml: sources: at least one [[sources]] table is required")


def test_sources_must_be_an_array_of_tables(tmp_path: Path) -> None:
    message = error('[sources]\nname = "docs"\n', tmp_path)
    assert message.startswith("config.toml: sources: expected an array of tables ([[sources]])")


@pytest.mark.parametrize(
    ("include", "problem"),
    [
        ("[]", "sources.docs.include: must list at least one pattern"),
        ('"**/*.md"', 'sources.docs.include: expected an array, got a string "**/*.md"'),
        ('["**/*.md", 3]', "sources.docs.include[1]: expected a string, got an integer 3"),
        ('["!"]', "sources.docs.include[0]: is not a valid pattern"),
    ],
)
def test_bad_include_patterns_are_rejected(tmp_path: Path, include: str, problem: str) -> None:
    assert problem in error(FOLDER + f"include = {include}\n", tmp_path)


def test_empty_exclude_is_allowed(tmp_path: Path) -> None:
    assert folder_source(parse(FOLDER + "exclude = []\n", tmp_path), "docs").exclude == ()


# --- http.listen -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("listen", "host", "port"),
    [
        ("127.0.0.1:8750", "127.0.0.1", 8750),
        ("0.0.0.0:1", "0.0.0.0", 1),
        ("localhost:65535", "localhost", 65535),
        ("[::1]:8750", "::1", 8750),
        ("[::]:80", "::", 80),
    ],
)
def test_listen_is_parsed(tmp_path: Path, listen: str, host: str, port: int) -> None:
    http = parse(f'[http]\nlisten = "{listen}"\n' + FOLDER, tmp_path).http
    assert (http.host, http.port) == (host, port)
    assert http.listen == listen


@pytest.mark.parametrize(
    ("listen", "problem"),
    [
        ("8750", "must be host:port"),
        ("localhost:0", "needs a port between 1 and 65535"),
        ("localhost:65536", "needs a port between 1 and 65535"),
        ("localhost:http", "needs a port between 1 and 65535"),
        ("::1:8750", "has an IPv6 address without brackets"),
        ("[::1]", "must be [IPv6 address]:port"),
        ("[nope]:80", "has an invalid IPv6 address in brackets"),
        (":8750", "has no host"),
        ("bad host:80", "has an invalid host name"),
    ],
)
def test_bad_listen_is_rejected(tmp_path: Path, listen: str, problem: str) -> None:
    message = error(f'[http]\nlisten = "{listen}"\n' + FOLDER, tmp_path)
    assert message.startswith(f'config.toml: http.listen: {problem}, got "{listen}"')


# --- finding and reading the file ------------------------------------------------------------


def test_resolve_config_path_prefers_the_cli_value(tmp_path: Path) -> None:
    cli = tmp_path / "cli.toml"
    environ = {"RAGD_CONFIG": str(tmp_path / "env.toml")}
    assert resolve_config_path(str(cli), environ) == cli


def test_resolve_config_path_falls_back_to_ragd_config(tmp_path: Path) -> None:
    env = tmp_path / "env.toml"
    assert resolve_config_path(None, {"RAGD_CONFIG": str(env)}) == env


def test_resolve_config_path_defaults_to_cwd_config_toml() -> None:
    assert resolve_config_path(None, {}) == Path.cwd() / "config.toml"
    assert resolve_config_path(None, {"RAGD_CONFIG": ""}) == Path.cwd() / "config.toml"


def test_missing_file_message(tmp_path: Path) -> None:
    missing = tmp_path / "nope.toml"
    with pytest.raises(ConfigError) as info:
        load_config(missing, environ={})
    assert str(info.value) == (
        f"config file not found: {missing} (pass --config PATH or set RAGD_CONFIG)"
    )


def test_directory_as_config_file_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as info:
        load_config(tmp_path, environ={})
    assert str(info.value).startswith(f"config file {tmp_path} is a directory, not a regular file")


@pytest.mark.timeout(10)  # a regression blocks in open() or reads forever: fail soon
@pytest.mark.parametrize("kind", ["fifo", "device"])
def test_a_config_path_that_is_no_regular_file_is_refused_without_reading_it(
    tmp_path: Path, kind: str
) -> None:
    path = Path("/dev/zero")
    if kind == "fifo":
        path = tmp_path / "config.fifo"
        os.mkfifo(path)

    with pytest.raises(ConfigError) as info:
        load_config(path, environ={})

    assert "not a regular file" in str(info.value)


def test_a_config_file_over_a_mebibyte_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_bytes(b"#" * (MAX_CONFIG_BYTES + 1))

    with pytest.raises(ConfigError, match="is larger than 1024 KiB"):
        load_config(path, environ={})


def test_toml_syntax_error_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text('[daemon]\nlog_level = "info"\nlog_format = json\n', encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        load_config(path, environ={})
    assert str(info.value).startswith(f"{path}: invalid TOML: ")
    assert "line 3" in str(info.value)


def test_load_config_errors_name_the_file(tmp_path: Path) -> None:
    path = tmp_path / "ragd.toml"
    path.write_text("[search]\nk = 0\n" + FOLDER, encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        load_config(path, environ={})
    assert str(info.value) == f"{path}: search.k: must be between 1 and 1000, got 0"


def test_load_config_resolves_paths_against_the_file_directory(tmp_path: Path) -> None:
    path = tmp_path / "etc" / "config.toml"
    path.parent.mkdir()
    path.write_text(FOLDER, encoding="utf-8")
    config = load_config(path, environ={})
    assert config.path == path
    assert folder_source(config, "docs").path == tmp_path / "etc" / "docs"


def test_fusion_is_convex_or_rrf(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text('[search]\nfusion = "rrf"\n' + FOLDER)

    assert load_config(path).search.fusion == "rrf"
    assert error('[search]\nfusion = "max"\n' + FOLDER, tmp_path) == (
        'config.toml: search.fusion: must be one of "convex", "rrf", got "max"'
    )


# --- webhook formats -------------------------------------------------------------------------


def cms(form: str, body: str = "") -> str:
    """A webhook source of CMS format `form`."""
    return webhook(f'format = "{form}"\n{body}')


@pytest.mark.parametrize(
    ("form", "credential"),
    [
        ("ghost", 'secret_env = "S"'),
        ("sanity", 'secret_env = "S"'),
        ("contentful", 'secret_env = "S"'),
        ("contentful", 'bearer_token_env = "T"'),
        ("strapi", 'bearer_token_env = "T"'),
        ("directus", 'bearer_token_env = "T"'),
    ],
)
def test_each_format_is_valid_with_its_credential(
    tmp_path: Path, form: str, credential: str
) -> None:
    source = webhook_source(parse(cms(form, credential), tmp_path), "cms")
    assert source.format == form


@pytest.mark.parametrize(
    ("form", "problem"),
    [
        ("ghost", "secret_env: a Ghost source needs the webhook's secret"),
        ("sanity", "secret_env: a Sanity source needs the webhook's secret"),
        ("contentful", "secret_env: a Contentful source needs the space's signing secret"),
        ("strapi", "bearer_token_env: a Strapi source needs bearer_token_env"),
        ("directus", "bearer_token_env: a Directus source needs bearer_token_env"),
    ],
)
def test_each_format_requires_its_credential(tmp_path: Path, form: str, problem: str) -> None:
    assert error(cms(form), tmp_path).startswith(f"config.toml: sources.cms.{problem}")


def test_a_ghost_secret_may_be_a_file(tmp_path: Path) -> None:
    source = webhook_source(parse(cms("ghost", 'secret_file = "ghost.key"'), tmp_path), "cms")
    assert source.secret_file == tmp_path / "ghost.key"


@pytest.mark.parametrize(
    ("form", "line", "users"),
    [
        ("strapi", 'secret_env = "S"', "ragd, ghost, contentful, sanity"),
        ("ghost", 'body_field = "html"', "strapi, directus, contentful, sanity"),
        ("ghost", 'locale = "de-DE"', "contentful"),
        ("directus", 'locales = ["de"]', "strapi"),
        ("strapi", 'fetch_url = "https://cms/{id}"', "ragd"),
        ("ragd", 'title_field = "name"', "strapi, directus, contentful, sanity"),
        # Sanity signs its webhooks: a token that was never checked would only mislead.
        ("sanity", 'bearer_token_env = "T"', "ragd, strapi, directus, contentful"),
    ],
)
def test_a_key_of_another_format_is_rejected_naming_its_formats(
    tmp_path: Path, form: str, line: str, users: str
) -> None:
    # Only the key under test is foreign: the credentials are the format's own.
    own = 'bearer_token_env = "T"\n' if form in ("strapi", "directus") else 'secret_env = "S"\n'
    key = line.split(" ", 1)[0]
    message = error(cms(form, own + line), tmp_path)
    assert message == (
        f'config.toml: sources.cms.{key}: does not apply to format = "{form}" (it is for {users})'
    )


def test_field_mapping_is_read_for_a_format_that_maps_fields(tmp_path: Path) -> None:
    body = 'bearer_token_env = "T"\ntitle_field = "headline"\nbody_field = "body.html"'
    body += '\nbody_format = "html"\nurl_template = "https://site.example/{slug}"'
    source = webhook_source(parse(cms("strapi", body), tmp_path), "cms")
    assert (source.title_field, source.body_field, source.body_format) == (
        "headline",
        "body.html",
        "html",
    )
    assert source.url_template == "https://site.example/{slug}"


@pytest.mark.parametrize(
    ("template", "problem"),
    [
        ("/posts/{slug}", "must be an absolute http:// or https:// URL"),
        ("ftp://site/{slug}", "must be an absolute http:// or https:// URL"),
        ("https://site/{bad name}", "placeholder {bad name} is not a field name"),
    ],
)
def test_bad_url_template_is_rejected(tmp_path: Path, template: str, problem: str) -> None:
    body = f'bearer_token_env = "T"\nurl_template = "{template}"'
    message = error(cms("strapi", body), tmp_path)
    assert message.startswith(f'config.toml: sources.cms.url_template: {problem}, got "{template}"')


def test_a_field_name_must_be_a_name(tmp_path: Path) -> None:
    message = error(cms("strapi", 'bearer_token_env = "T"\ntitle_field = "a b"'), tmp_path)
    assert message.startswith(
        'config.toml: sources.cms.title_field: is not a field name, got "a b"'
    )


# --- read APIs of webhook sources ------------------------------------------------------------


def test_an_api_url_with_its_token_is_read(tmp_path: Path) -> None:
    body = 'secret_env = "S"\napi_url = "https://ghost.example.com"\napi_token_env = "K"'
    source = webhook_source(parse(cms("ghost", body), tmp_path), "cms")
    assert source.api_url == "https://ghost.example.com"
    assert source.api_token_env == "K"
    assert source.reconcile_interval == timedelta(hours=1)


@pytest.mark.parametrize(
    ("url", "problem"),
    [
        ("ftp://ghost.example.com", 'must be an absolute http:// or https:// URL, got "ftp://'),
        ("ghost.example.com", "must be an absolute http:// or https:// URL"),
        ("https://ghost.example.com/{id}", "takes no placeholders"),
        ("https://ghost.example.com/a b", "must not contain spaces or control characters"),
    ],
)
def test_a_bad_api_url_is_rejected(tmp_path: Path, url: str, problem: str) -> None:
    body = f'secret_env = "S"\napi_url = "{url}"\napi_token_env = "K"'
    message = error(cms("ghost", body), tmp_path)
    assert message.startswith(f"config.toml: sources.cms.api_url: {problem}")


def test_credentials_in_an_api_url_are_rejected_and_not_echoed(tmp_path: Path) -> None:
    body = 'secret_env = "S"\napi_url = "https://me:hunter2@ghost.example.com"\napi_token_env = "K"'
    message = error(cms("ghost", body), tmp_path)
    assert "sources.cms.api_url: must not carry credentials" in message
    assert "hunter2" not in message


def test_an_api_url_needs_its_token(tmp_path: Path) -> None:
    body = 'secret_env = "S"\napi_url = "https://ghost.example.com"'
    message = error(cms("ghost", body), tmp_path)
    assert message.startswith("config.toml: sources.cms.api_token_env: is required with api_url")


def test_a_public_sanity_dataset_needs_no_api_token(tmp_path: Path) -> None:
    body = 'secret_env = "S"\napi_url = "https://p.api.sanity.io/v2021-10-21/data/query/prod"'
    body += '\ncontent_types = ["post"]'
    source = webhook_source(parse(cms("sanity", body), tmp_path), "cms")
    assert source.api_token_env is None
    assert dict(source.content_types or {}) == {"post": "post"}


def test_a_ghost_source_names_the_content_types_it_holds(tmp_path: Path) -> None:
    source = webhook_source(
        parse(cms("ghost", 'secret_env = "S"\ncontent_types = ["post"]'), tmp_path), "cms"
    )
    assert dict(source.content_types or {}) == {"post": "post"}


def test_a_ghost_content_type_other_than_post_or_page_is_rejected_with_a_hint(
    tmp_path: Path,
) -> None:
    message = error(cms("ghost", 'secret_env = "S"\ncontent_types = ["posts"]'), tmp_path)
    assert message == (
        'config.toml: sources.cms.content_types: is not a Ghost content type, got "posts" '
        '(a Ghost site holds "post" and "page": content_types = ["post"])'
    )


def test_a_reconciled_strapi_source_needs_its_content_types(tmp_path: Path) -> None:
    body = 'bearer_token_env = "T"\napi_url = "https://strapi.example.com"\napi_token_env = "K"'
    message = error(cms("strapi", body), tmp_path)
    assert message.startswith("config.toml: sources.cms.content_types: is required with api_url")


def test_strapi_content_types_map_models_to_collections(tmp_path: Path) -> None:
    body = 'bearer_token_env = "T"\napi_url = "https://strapi.example.com"\napi_token_env = "K"'
    body += '\ncontent_types = { article = "articles" }'
    source = webhook_source(parse(cms("strapi", body), tmp_path), "cms")
    assert dict(source.content_types or {}) == {"article": "articles"}


@pytest.mark.parametrize("key", ['api_token_env = "K"', 'reconcile_interval = "2h"'])
def test_api_settings_without_api_url_are_rejected(tmp_path: Path, key: str) -> None:
    message = error(cms("ghost", f'secret_env = "S"\n{key}'), tmp_path)
    name = key.split(" ", 1)[0]
    assert message.startswith(f"config.toml: sources.cms.{name}: has no effect without api_url")


def test_a_reconcile_interval_under_a_minute_is_rejected(tmp_path: Path) -> None:
    body = 'secret_env = "S"\napi_url = "https://g.example.com"\napi_token_env = "K"'
    message = error(cms("ghost", body + '\nreconcile_interval = "30s"'), tmp_path)
    assert "sources.cms.reconcile_interval: must be at least 1 minute" in message


# --- polled sources: sitemap and wordpress ---------------------------------------------------


def polled(kind: str, url: str, body: str = "") -> str:
    return f'[[sources]]\nname = "site"\ntype = "{kind}"\nurl = "{url}"\n{body}\n'


def poll_source(config: Config, name: str) -> PollSourceConfig:
    source = config.source(name)
    assert isinstance(source, PollSourceConfig)
    return source


def test_a_wordpress_source_names_the_content_types_it_holds(tmp_path: Path) -> None:
    text = polled("wordpress", "https://blog.example.com", 'content_types = ["post"]')
    source = poll_source(parse(text, tmp_path), "site")
    assert dict(source.content_types or {}) == {"post": "post"}


def test_a_wordpress_content_type_other_than_post_or_page_is_rejected_with_a_hint(
    tmp_path: Path,
) -> None:
    text = polled("wordpress", "https://blog.example.com", 'content_types = ["article"]')
    assert error(text, tmp_path) == (
        'config.toml: sources.site.content_types: is not a WordPress content type, got "article" '
        '(a WordPress site holds "post" and "page": content_types = ["post"])'
    )


def test_content_types_do_not_apply_to_a_sitemap_source(tmp_path: Path) -> None:
    text = polled("sitemap", "https://docs.example.com/sitemap.xml", 'content_types = ["post"]')
    assert error(text, tmp_path) == (
        "config.toml: sources.site.content_types: 'content_types' applies to "
        'type = "wordpress" only, not "sitemap"'
    )


def test_a_sitemap_source_takes_defaults(tmp_path: Path) -> None:
    url = "https://docs.example.com/sitemap.xml"
    source = poll_source(parse(polled("sitemap", url), tmp_path), "site")
    assert (source.type, source.url) == ("sitemap", url)
    assert source.poll_interval == timedelta(hours=1)
    assert source.max_age == timedelta(days=7)
    assert source.fetch_timeout == timedelta(seconds=10)
    assert source.fetch_max_bytes == 5_000_000
    assert source.max_concurrency == 4


def test_a_wordpress_source_takes_its_settings(tmp_path: Path) -> None:
    body = (
        'poll_interval = "15m"\nfetch_timeout = "30s"\nfetch_max_bytes = 1000\nmax_concurrency = 2'
    )
    source = poll_source(
        parse(polled("wordpress", "https://blog.example.com", body), tmp_path), "site"
    )
    assert (source.type, source.url) == ("wordpress", "https://blog.example.com")
    assert source.poll_interval == timedelta(minutes=15)
    assert source.fetch_timeout == timedelta(seconds=30)
    assert (source.fetch_max_bytes, source.max_concurrency) == (1000, 2)


@pytest.mark.parametrize(
    ("url", "problem"),
    [
        ("ftp://docs.example.com/sitemap.xml", "must be an absolute http:// or https:// URL"),
        ("/sitemap.xml", "must be an absolute http:// or https:// URL"),
        ("https://docs.example.com/site map.xml", "must not contain spaces or control characters"),
        ("https://docs.example.com/{lang}/sitemap.xml", "takes no placeholders"),
    ],
)
@pytest.mark.parametrize("kind", ["sitemap", "wordpress"])
def test_a_polled_source_with_a_bad_url_is_rejected(
    tmp_path: Path, kind: str, url: str, problem: str
) -> None:
    assert error(polled(kind, url), tmp_path).startswith(
        f"config.toml: sources.site.url: {problem}"
    )


def test_a_polled_source_needs_a_url(tmp_path: Path) -> None:
    message = error('[[sources]]\nname = "site"\ntype = "sitemap"\n', tmp_path)
    assert message.startswith("config.toml: sources.site.url: is required")


def test_credentials_in_a_polled_url_are_rejected_and_not_echoed(tmp_path: Path) -> None:
    message = error(polled("sitemap", "https://me:hunter2@docs.example.com/s.xml"), tmp_path)
    assert "sources.site.url: must not carry credentials" in message
    assert "hunter2" not in message


def test_a_poll_interval_under_a_minute_is_rejected(tmp_path: Path) -> None:
    text = polled("sitemap", "https://d.example.com/s.xml", 'poll_interval = "30s"')
    assert error(text, tmp_path) == (
        'config.toml: sources.site.poll_interval: must be at least 1 minute, got "30s"'
    )


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        ("max_concurrency = 33", "max_concurrency: must be between 1 and 32, got 33"),
        ("fetch_max_bytes = 0", "fetch_max_bytes: must be at least 1, got 0"),
    ],
)
def test_bad_polled_limits_are_rejected(tmp_path: Path, line: str, problem: str) -> None:
    text = polled("wordpress", "https://blog.example.com", line)
    assert error(text, tmp_path).startswith(f"config.toml: sources.site.{problem}")


def test_a_webhook_key_on_a_sitemap_source_is_an_error(tmp_path: Path) -> None:
    text = polled("sitemap", "https://d.example.com/s.xml", 'secret_env = "S"')
    assert error(text, tmp_path) == (
        "config.toml: sources.site.secret_env: 'secret_env' applies to webhook sources only, "
        'and this source has type = "sitemap"'
    )


def test_a_polled_key_on_a_folder_source_names_both_polled_kinds(tmp_path: Path) -> None:
    message = error(FOLDER + 'url = "https://d.example.com/s.xml"\n', tmp_path)
    assert message == (
        "config.toml: sources.docs.url: 'url' applies to sitemap sources and wordpress "
        'sources only, and this source has type = "folder"'
    )


@pytest.mark.parametrize("value", ['"31s"', '"5m"'])
def test_a_fetch_timeout_over_30_seconds_is_rejected(tmp_path: Path, value: str) -> None:
    # A longer fetch would hold the writer past the service watchdog's 60 s.
    text = cms("ghost", f'secret_env = "S"\nfetch_timeout = {value}')

    assert error(text, tmp_path).startswith(
        "config.toml: sources.cms.fetch_timeout: must be at most 30 s"
    )


# --- [storage] and [cluster] ------------------------------------------------------------------


def test_storage_and_cluster_default_to_local_stores_and_a_local_ray(tmp_path: Path) -> None:
    config = parse(FOLDER, tmp_path)

    assert config.storage.uri is None
    assert config.storage.refresh_interval == timedelta(seconds=5)
    assert config.cluster.ray_address is None


@pytest.mark.parametrize(
    ("uri", "stored"),
    [
        ("s3://ragd-index", "s3://ragd-index"),
        ("s3://ragd-index/", "s3://ragd-index"),
        ("s3://ragd-index/prod", "s3://ragd-index/prod"),
        ("s3://ragd-index/prod/", "s3://ragd-index/prod"),
        ("s3://my.bucket-1/teams/docs/v2/", "s3://my.bucket-1/teams/docs/v2"),
        ("s3://abc/a..b/.hidden", "s3://abc/a..b/.hidden"),
    ],
)
def test_storage_uri_accepts_an_s3_bucket_and_prefix(tmp_path: Path, uri: str, stored: str) -> None:
    config = parse(f'[storage]\nuri = "{uri}"\n' + FOLDER, tmp_path)

    assert config.storage.uri == stored


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ('"https://s3.example.com/bucket"', 'must be an "s3://bucket/prefix" URI'),
        ('"ragd-index/prod"', 'must be an "s3://bucket/prefix" URI'),
        ('"S3://ragd-index"', 'must be an "s3://bucket/prefix" URI'),
        ('"s3://"', "'' is not an S3 bucket name"),
        ('"s3://Ragd-Index/prod"', "'Ragd-Index' is not an S3 bucket name"),
        ('"s3://ab/prod"', "'ab' is not an S3 bucket name"),
        ('"s3://ragd_index"', "'ragd_index' is not an S3 bucket name"),
        ('"s3://-ragd/prod"', "'-ragd' is not an S3 bucket name"),
        ('"s3://ragd-index/../other"', "the prefix must not contain '.', '..'"),
        ('"s3://ragd-index/a/../../b"', "the prefix must not contain '.', '..'"),
        ('"s3://ragd-index/./prod"', "the prefix must not contain '.', '..'"),
        ('"s3://ragd-index/pro\\u0001d"', "the prefix must not contain '.', '..' or control"),
        ('""', "must not be empty"),
        ("5", "expected a string"),
    ],
)
def test_storage_uri_refuses_what_is_not_an_s3_location(
    tmp_path: Path, value: str, problem: str
) -> None:
    message = error(f"[storage]\nuri = {value}\n" + FOLDER, tmp_path)

    assert message.startswith(f"config.toml: storage.uri: {problem}")


def test_a_storage_uri_that_is_not_s3_hints_how_to_keep_local_stores(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as info:
        parse('[storage]\nuri = "/var/lib/ragd"\n' + FOLDER, tmp_path)

    assert info.value.hint is not None and "leave [storage] uri out" in info.value.hint


@pytest.mark.parametrize(
    ("value", "interval"),
    [('"1s"', timedelta(seconds=1)), ('"2m"', timedelta(minutes=2)), ("30", timedelta(30 / 86400))],
)
def test_storage_refresh_interval_is_a_duration(
    tmp_path: Path, value: str, interval: timedelta
) -> None:
    text = f'[storage]\nuri = "s3://ragd-index"\nrefresh_interval = {value}\n' + FOLDER

    assert parse(text, tmp_path).storage.refresh_interval == interval


@pytest.mark.parametrize(
    ("value", "problem"),
    [('"0s"', "must be greater than zero"), ('"often"', "is not a duration")],
)
def test_a_bad_storage_refresh_interval_is_named(tmp_path: Path, value: str, problem: str) -> None:
    message = error(f"[storage]\nrefresh_interval = {value}\n" + FOLDER, tmp_path)

    assert message.startswith(f"config.toml: storage.refresh_interval: {problem}")


def test_cluster_ray_address_is_a_string(tmp_path: Path) -> None:
    config = parse('[cluster]\nray_address = "ray://head.internal:10001"\n' + FOLDER, tmp_path)

    assert config.cluster.ray_address == "ray://head.internal:10001"


def test_a_cluster_ray_address_that_is_not_a_string_is_named(tmp_path: Path) -> None:
    message = error("[cluster]\nray_address = 10001\n" + FOLDER, tmp_path)

    assert message.startswith("config.toml: cluster.ray_address: expected a string")


@pytest.mark.parametrize(
    ("section", "key", "hint"),
    [
        ("storage", "url", "did you mean 'uri'?"),
        ("storage", "endpoint", "valid keys: refresh_interval, uri"),
        ("cluster", "address", "did you mean 'ray_address'?"),
        ("cluster", "workers", "valid keys: ray_address"),
    ],
)
def test_unknown_keys_in_storage_and_cluster_are_named(
    tmp_path: Path, section: str, key: str, hint: str
) -> None:
    message = error(f'[{section}]\n{key} = "x"\n' + FOLDER, tmp_path)

    assert message.startswith(f"config.toml: {section}.{key}: unknown key")
    assert hint in message
