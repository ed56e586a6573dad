"""TOML that tomllib accepts (or chokes on) but no setting can use: each is one ConfigError
line naming the file and, where it is known, the key, never an internal error."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragd.config import parse_config
from ragd.config.loading import MAX_DEPTH
from ragd.errors import ConfigError

FOLDER = '\n[[sources]]\nname = "docs"\ntype = "folder"\npath = "docs"\n'
RANGE = "TOML integers are 64-bit, from -9223372036854775808 to 9223372036854775807"


def error(text: str, tmp_path: Path, environ: dict[str, str] | None = None) -> str:
    with pytest.raises(ConfigError) as info:
        parse_config(text, base_dir=tmp_path, environ=environ or {})
    message = str(info.value)
    assert "\n" not in message
    return message


@pytest.mark.parametrize(
    "value",
    ["[" * 5000 + "]" * 5000, "{a = " * 5000 + "1" + "}" * 5000],
    ids=["arrays", "inline-tables"],
)
def test_values_nested_5000_deep_are_refused_as_invalid_toml(tmp_path: Path, value: str) -> None:
    message = error(f"nested = {value}\n" + FOLDER, tmp_path)

    assert message == (
        "config.toml: invalid TOML: arrays or inline tables nested too deeply "
        f"(ragd reads at most {MAX_DEPTH} levels)"
    )


def test_a_value_nested_deeper_than_ragd_reads_is_refused_naming_its_key(tmp_path: Path) -> None:
    # tomllib reads this without recursing far: 300 levels of arrays in a known section.
    message = error("[http]\nlisten = " + "[" * 300 + "]" * 300 + "\n" + FOLDER, tmp_path)

    path = "[0]" * MAX_DEPTH
    assert message == (
        f"config.toml: http.listen{path[:-3]}: nested more than {MAX_DEPTH} levels deep "
        "(ragd's settings nest at most 3)"
    )


def test_tables_nested_by_5000_dotted_keys_are_refused_naming_the_key(tmp_path: Path) -> None:
    # Dotted keys nest tables without recursion in tomllib, for the schema's messages
    # (which show the value) to recurse through.
    message = error("[http]\nlisten." + ".".join(["a"] * 5000) + " = 1\n" + FOLDER, tmp_path)

    assert message.startswith("config.toml: http.listen.a.a.a.")
    assert message.endswith(
        f"nested more than {MAX_DEPTH} levels deep (ragd's settings nest at most 3)"
    )


def test_a_5000_digit_integer_is_refused_as_invalid_toml(tmp_path: Path) -> None:
    message = error("[http]\nmax_body_bytes = " + "9" * 5000 + "\n" + FOLDER, tmp_path)

    assert message == f"config.toml: invalid TOML: an integer is too large ({RANGE})"


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("http.max_body_bytes", "0x" + "f" * 5000),  # converts, but cannot be shown
        ("http.max_body_bytes", "9223372036854775808"),
        ("schedule.rescan_interval", "0x" + "f" * 5000),  # a duration in seconds
        ("http.listen", "-9223372036854775809"),  # the wrong type, shown in its message
    ],
    ids=["huge-hex", "2**63", "huge-hex-duration", "below-64-bit-wrong-type"],
)
def test_an_integer_outside_64_bits_is_refused_naming_its_key(
    tmp_path: Path, key: str, value: str
) -> None:
    section, name = key.split(".")

    message = error(f"[{section}]\n{name} = {value}\n" + FOLDER, tmp_path)

    assert message == f"config.toml: {key}: integer out of range ({RANGE})"


def test_the_largest_64_bit_integer_is_a_value_like_any_other(tmp_path: Path) -> None:
    config = parse_config(
        "[daemon]\nmax_file_bytes = 9223372036854775807\n" + FOLDER, base_dir=tmp_path, environ={}
    )

    assert config.daemon.max_file_bytes == 2**63 - 1


def test_a_listen_port_of_5000_digits_is_refused_naming_the_key(tmp_path: Path) -> None:
    listen = "127.0.0.1:" + "9" * 5000

    message = error(f'[http]\nlisten = "{listen}"\n' + FOLDER, tmp_path)

    assert message.startswith("config.toml: http.listen: needs a port between 1 and 65535, got")


def test_a_listen_override_with_a_5000_digit_port_is_refused_naming_the_variable(
    tmp_path: Path,
) -> None:
    environ = {"RAGD_HTTP_LISTEN": "127.0.0.1:" + "9" * 5000}

    message = error(FOLDER, tmp_path, environ)

    assert message.startswith(
        "environment variable RAGD_HTTP_LISTEN (overrides http.listen): "
        "needs a port between 1 and 65535"
    )
