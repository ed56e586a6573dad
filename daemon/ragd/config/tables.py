"""One TOML table read into a dataclass of the schema, every complaint one line naming its key.

Unknown keys are refused first; each value then goes through the converters its annotation
names (`ragd.config.values`), and msgspec checks the declared type, `Literal` choices and
`Meta` bounds or patterns. msgspec tells the first error only, as a rule ("Expected `int`
>= 100 - at `$[2]`"): `_told` retells it in ragd's words from the annotation.
"""

import difflib
import json
from collections.abc import Callable, Collection, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Final, Literal, NamedTuple, get_args, get_origin, get_type_hints

import msgspec
from msgspec import Meta

from ragd.errors import ConfigError

Where = Callable[[str], str]  # a key -> "config.toml: section.key", to prefix a message
ABSENT: Final = object()
_TOML_TYPES: Final = (
    (bool, "a boolean"), (int, "an integer"), (float, "a float"), (str, "a string"),
    (list, "an array"), (dict, "a table"),
)  # fmt: skip
_EXPECTED: Final = {  # msgspec's names of types, in TOML's
    "int": "an integer", "float": "a number", "bool": "true or false", "str": "a string",
    "array": "an array", "object": "a table",
}  # fmt: skip


@dataclass
class Invalid(Exception):
    """A complaint about one value; the caller adds where the value came from."""

    problem: str  # "expected ..." (a wrong type: the value's type is shown) or a predicate
    hint: str | None = None
    conceal: bool = False  # the value might be a secret pasted in the wrong place
    subkey: str = ""  # the place inside the value ("[2]", ".Name"), appended to the key
    inner: object = ABSENT  # the offending part of the value, shown instead of it


class InDir(NamedTuple):
    """Marks a converter of values that may be paths relative to a directory."""

    convert: Callable[[object, Path], object]


def told(problem: str, hint: str | None = None, *, conceal: bool = False, **rule: Any) -> Meta:
    """A msgspec constraint (`pattern`, `min_length`...) told as `problem` when it fails."""
    return Meta(**rule, extra={"problem": problem, "hint": hint, "conceal": conceal})


def within(origin: str, table: str) -> Where:
    """Where a key of `table` (dotted, "" for the top level) is, in messages."""
    return lambda key: f"{origin}: {table}.{key}" if table else f"{origin}: {key}"


def read_table(cls: type, data: Mapping[str, object], where: Where, base: Path) -> Any:
    """The dataclass `cls` from `data`; relative paths in it resolve against `base`."""
    fields = fields_of(cls)
    check_keys(data, fields, where)
    values = {k: value_of(fields[k], item, where(k), lambda: base) for k, item in data.items()}
    try:
        return msgspec.convert(values, cls, strict=True)
    except msgspec.ValidationError as exc:  # every value is checked: a key is missing
        key = str(exc).split("`")[1]
        raise missing(where, key, fields[key]) from None


def value_of(annotation: object, value: object, where: str, base: Callable[[], Path]) -> Any:
    """`value` converted and checked as `annotation` declares, or a ConfigError; `base()`
    is the directory relative paths resolve against, asked for only when there is one."""
    steps = get_args(annotation)[1:] if get_origin(annotation) is Annotated else ()
    try:
        for step in steps:
            if isinstance(step, InDir):
                value = step.convert(value, base())
            elif callable(step):
                value = step(value)
        return msgspec.convert(value, annotation, strict=True)
    except Invalid as exc:
        raise fail(where, exc, value) from None
    except msgspec.ValidationError as exc:
        raise fail(where, _told(str(exc), annotation, value), value) from None


def _told(error: str, annotation: object, value: object) -> Invalid:
    error, _, at = error.partition(" - at `")
    if isinstance(value, dict) and at:  # msgspec says `$[...]`: find the entry
        for key, item in value.items():
            try:
                msgspec.convert({key: item}, annotation, strict=True)
            except msgspec.ValidationError as exc:
                told = _told(str(exc).partition(" - at `")[0], annotation, item)
                inner = key if at.startswith("key") else item
                return Invalid(told.problem, told.hint, told.conceal, f".{key}", inner)
    subkey = at.removeprefix("$").removesuffix("`")
    if subkey.startswith("["):  # an item of an array
        value = value[int(subkey[1:-1])]  # type: ignore[index]
    metas = list(_metas(annotation))
    conceal = any(m.extra and m.extra.get("conceal") for m in metas)
    if error.startswith("Expected `") and ", got `" in error:
        wanted = error[10:].split("`")[0].split(" | ")
        expected = " or ".join(_EXPECTED.get(t, t) for t in wanted if t != "null")
        return Invalid(f"expected {expected}", conceal=conceal, subkey=subkey, inner=value)
    if error.startswith("Invalid enum value"):
        return one_of(value, next(_literals(annotation)))
    # The constraint that failed: a pattern (the one the message shows), a length or a bound.
    kind = "pattern" if "regex" in error else "min_length" if "length" in error else "ge"
    found = [m for m in metas if getattr(m, kind) is not None]
    meta = next((m for m in found if repr(m.pattern) in error), found[0])
    if meta.extra:
        return Invalid(meta.extra["problem"], meta.extra["hint"], conceal, subkey, value)
    if meta.min_length:
        return Invalid("must not be empty", subkey=subkey, inner=value)
    if meta.le is None:
        return Invalid(f"must be at least {meta.ge}")
    return Invalid(f"must be between {meta.ge} and {meta.le}")


def _metas(annotation: object) -> Iterator[Meta]:
    for arg in get_args(annotation):
        yield from [arg] if isinstance(arg, Meta) else _metas(arg)


def _literals(annotation: object) -> Iterator[tuple[str, ...]]:
    if get_origin(annotation) is Literal:
        yield get_args(annotation)
    for arg in get_args(annotation):
        yield from _literals(arg)


def one_of(value: object, options: Collection[str]) -> Invalid:
    listed = ", ".join(json.dumps(option) for option in options)
    return Invalid(f"must be one of {listed}", hint=suggest(str(value), options))


def check_keys(
    data: Mapping[str, object],
    allowed: Collection[str],
    where: Where,
    hints: Mapping[str, str] = {},
) -> None:
    for key in data:
        if key not in allowed:
            hint = (
                hints.get(key)
                or suggest(key, allowed)
                or "valid keys: " + ", ".join(sorted(allowed))
            )
            raise fail(where(key), "unknown key", hint=hint)


def suggest(word: str, options: Collection[str]) -> str | None:
    close = difflib.get_close_matches(word, list(options), n=1, cutoff=0.6)
    return f"did you mean {close[0]!r}?" if close else None


def missing(where: Where, key: str, annotation: object) -> ConfigError:
    """A required key is absent: the hint shows how to write it."""
    if options := next(_literals(annotation), ()):
        *first, last = (json.dumps(option) for option in options)
        return fail(where(key), "is required", hint=f"{key} = {', '.join(first)} or {last}")
    shown = [json.dumps(e) for m in _metas(annotation) for e in m.examples or ()]
    return fail(where(key), "is required", hint=f"e.g. {key} = " + " or ".join(shown))


def fail(
    where: str, problem: "Invalid | str", value: object = ABSENT, *, hint: str | None = None
) -> ConfigError:
    """The one line: where, what is wrong, the value (only its type, if it may be a secret)."""
    exc = problem if isinstance(problem, Invalid) else Invalid(problem, hint=hint)
    value = value if exc.inner is ABSENT else exc.inner
    if value is ABSENT:
        got = ""
    elif exc.conceal:
        got = f", got {type_name(value)} (not shown, as it may be a secret)"
    else:
        typed = exc.problem.startswith("expected")
        got = f", got {type_name(value) + ' ' if typed else ''}{show(value)}"
    return ConfigError(f"{where}{exc.subkey}: {exc.problem}{got}", hint=exc.hint)


def type_name(value: object) -> str:
    return next((name for cls, name in _TOML_TYPES if isinstance(value, cls)), "a date/time")


def show(value: object) -> str:
    # JSON spelling is also TOML spelling for strings, numbers, booleans and arrays.
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        text = str(value)
    return text if len(text) <= 80 else text[:77] + "..."


def fields_of(cls: type) -> dict[str, object]:
    """The keys of a table of `cls`, each with its annotation."""
    if cls not in _FIELDS:
        _FIELDS[cls] = get_type_hints(cls, include_extras=True)
    return _FIELDS[cls]


_FIELDS: Final[dict[type, dict[str, object]]] = {}
