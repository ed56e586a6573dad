"""A webhook body as a JSON object, read defensively.

Owns the one way ragd reads a JSON body it did not write (a delivery, or a CMS's answer
to a fetch): strict UTF-8, no object that names a key twice (two parsers could each
believe a different copy), bounded nesting, text that is Unicode (JSON's `\\ud800`
escape can name half a surrogate pair, which no encoding can store: such a body is
refused where it enters, never queued), and messages that name the JSON type received
but never echo the value. Also the small typed readers the CMS formats use to take
fields out of such an object. Pure; `decode_json` raises `ValueError` with a one-line
message, the webhook readers `WebhookRejected(400)`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from ragd.sources.webhooks import WebhookRejected

__all__ = ["decode_json", "describe", "got", "json_object", "optional_text", "parse_json"]

_SURROGATE = re.compile("[\ud800-\udfff]")
_SHOWN_KEY_CHARS = 40


class _DuplicateKeys(dict[str, Any]):
    """A JSON object that named some key twice (kept only to be refused)."""


def _object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj = dict(pairs)
    return obj if len(obj) == len(pairs) else _DuplicateKeys(obj)


def decode_json(data: bytes) -> object:
    """The JSON value `data` holds; ValueError for bytes that are not UTF-8 JSON whose
    every string is Unicode text, its message a predicate to follow "the body" or "the
    answer" (`is not valid UTF-8`), never echoing the data."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise ValueError("is not valid UTF-8") from None
    try:
        value = json.loads(text, object_pairs_hook=_object)
    except RecursionError:
        raise ValueError("is JSON nested too deeply") from None
    except ValueError as exc:  # JSONDecodeError, and ints over Python's digit limit
        raise ValueError(f"is not valid JSON ({str(exc)[:120]})") from None
    # Only an escape puts a surrogate in a decoded string (strict UTF-8 never does).
    if "\\u" in text and (where := _lone_surrogate(value)) is not None:
        raise ValueError(
            f"holds a lone surrogate at {where} (a \\ud800-\\udfff escape without its "
            "pair), which is not Unicode text"
        )
    return value


def _lone_surrogate(value: object) -> str | None:
    """Where (`$.a.b[2]`) a string or key holding a surrogate is, or None. Each node's
    place is kept as a link to its parent's, and spelled out only for the one found."""
    stack: list[tuple[_Place, object]] = [(None, value)]
    while stack:
        place, item = stack.pop()
        if isinstance(item, str):
            if _SURROGATE.search(item):
                return _spelled(place)
        elif isinstance(item, dict):
            for key, child in item.items():
                if _SURROGATE.search(key):
                    return f"a key of {_spelled(place)}"
                stack.append(((place, key), child))
        elif isinstance(item, list):
            stack.extend(((place, n), child) for n, child in enumerate(item))
    return None


_Place = tuple["_Place", str | int] | None
"""Where a node is: None for the whole value, else (its parent's place, its key or index)."""


def _spelled(place: _Place) -> str:
    steps: list[str] = []
    while place is not None:
        place, step = place
        steps.append(f"[{step}]" if isinstance(step, int) else f".{step[:_SHOWN_KEY_CHARS]}")
    return "$" + "".join(reversed(steps))


def parse_json(body: bytes) -> object:
    """The body's JSON value; WebhookRejected(400) for bytes that are not one."""
    try:
        return decode_json(body)
    except ValueError as exc:
        raise WebhookRejected(400, f"the body {exc}") from None


def json_object(body: bytes) -> dict[str, Any]:
    """The body as a JSON object, with no key named twice at the top level."""
    payload = parse_json(body)
    if not isinstance(payload, dict):
        raise WebhookRejected(400, f"the body must be a JSON object, not {describe(payload)}")
    if isinstance(payload, _DuplicateKeys):
        raise WebhookRejected(400, "the JSON object names the same field twice")
    return payload


def optional_text(payload: Mapping[str, Any], key: str, limit: int | None) -> str | None:
    """`payload[key]` as text (None when absent or null); 400 for another type or length."""
    value = payload.get(key)
    if value is None:
        return None
    if not isinstance(value, str):
        raise WebhookRejected(400, f"{key} must be a string" + got(value))
    if limit is not None and len(value) > limit:
        raise WebhookRejected(400, f"{key} is {len(value)} characters; the limit is {limit}")
    return value


_KINDS = ((bool, "a boolean"), (int | float, "a number"), (str, "a string"), (list, "an array"))


def describe(value: object) -> str:
    """The JSON type of `value` in words, never the value: it may be huge or hostile."""
    if value is None:
        return "null"
    return next((name for t, name in _KINDS if isinstance(value, t)), "an object")


def got(value: object) -> str:
    """ ", got <type>" for a message, or "" for a string (its type was right, not its value)."""
    return "" if isinstance(value, str) else f", got {describe(value)}"
