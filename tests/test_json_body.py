"""decode_json: the one way ragd reads JSON it did not write (a delivery, a CMS's answer)."""

from __future__ import annotations

import pytest

from ragd.sources.json_body import decode_json, parse_json
from ragd.sources.webhooks import WebhookRejected


def refusal(body: bytes) -> str:
    with pytest.raises(ValueError) as info:
        decode_json(body)
    return str(info.value)


@pytest.mark.parametrize(
    ("body", "where"),
    [
        (rb'{"content": "a\ud800b"}', "$.content"),
        (rb'{"x": [1, {"t": "\udfff"}]}', "$.x[1].t"),
        (rb'["fine", "\udc00\ud800"]', "$[1]"),  # a low half before a high one: no pair
        (rb'{"a": {"\ud800": 1}}', "a key of $.a"),
    ],
)
def test_a_lone_surrogate_is_refused_naming_where_it_is(body: bytes, where: str) -> None:
    assert refusal(body).startswith(f"holds a lone surrogate at {where} ")


def test_a_surrogate_pair_escaped_is_the_character_it_stands_for() -> None:
    assert decode_json(rb'{"emoji": "\ud83d\ude00"}') == {"emoji": "\U0001f600"}


def test_an_escaped_backslash_before_u_is_text_not_an_escape() -> None:
    assert decode_json(rb'{"path": "C:\\ud800"}') == {"path": "C:\\ud800"}


def test_a_webhook_body_with_a_lone_surrogate_is_a_400_saying_so() -> None:
    with pytest.raises(WebhookRejected) as info:
        parse_json(rb'{"title": "\ud800"}')

    assert info.value.status == 400
    assert info.value.message.startswith("the body holds a lone surrogate at $.title ")


def test_bytes_that_are_not_utf8_are_refused_as_such() -> None:
    assert refusal(b'{"a": "\xff"}') == "is not valid UTF-8"
