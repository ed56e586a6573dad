"""Structured rich text as Markdown: Strapi's blocks, Sanity's Portable Text and
Contentful's Rich Text.

Owns turning the JSON trees these CMSes store into Markdown that ragd's Markdown parser
chunks by heading, so a CMS entry is indexed as text with its headings, lists, quotes and
code, never as JSON. Unknown node types contribute their text and nothing else; anything
that is not the expected shape is skipped, never an error. Depth and size are bounded
(the tree comes from a webhook body). Pure.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from typing import Any

_BACKTICKS = re.compile(r"`+")
MAX_DEPTH = 64  # a deeper tree is cut there: no real document nests lists this far


def is_rich_text(value: object) -> bool:
    """Whether `value` looks like one of the three formats (and not a plain string)."""
    if isinstance(value, dict):
        return value.get("nodeType") == "document"
    if isinstance(value, list) and value and isinstance(value[0], dict):
        return "type" in value[0] or "_type" in value[0]
    return False


def to_markdown(value: object) -> str:
    """Markdown for a rich-text value (see `is_rich_text`); "" for anything else."""
    if isinstance(value, dict) and value.get("nodeType") == "document":
        blocks = _contentful_blocks(value.get("content"), 0)
    elif isinstance(value, list) and any(isinstance(n, dict) and "_type" in n for n in value):
        blocks = _portable_blocks(value)
    elif isinstance(value, list):
        blocks = _strapi_blocks(value, 0)
    else:
        return ""
    return "\n\n".join(b for b in blocks if b.strip()) + "\n"


def _nodes(value: object) -> Iterator[dict[str, Any]]:
    if isinstance(value, list):
        yield from (node for node in value if isinstance(node, dict))


def _text(value: object) -> str:
    return value if isinstance(value, str) else ""


def _fence(code: str, language: object) -> str:
    """A fenced code block: a fence longer than any run of backticks in the code (found
    in one pass: growing a fence until it no longer occurs is quadratic), and a language
    on one line."""
    longest = max((len(run) for run in _BACKTICKS.findall(code)), default=0)
    fence = "`" * max(3, longest + 1)
    info = " ".join(_text(language).split())[:40].replace("`", "")
    return f"{fence}{info}\n{code}\n{fence}"


def _quote(text: str) -> str:
    return "\n".join(f"> {line}" if line else ">" for line in text.splitlines())


def _item(marker: str, text: str, indent: str) -> str:
    # Continuation lines (and nested lists) align with the item's text, as CommonMark
    # requires: under "1." that is three columns, not two.
    lines = text.splitlines() or [""]
    inner = indent + " " * (len(marker) + 1)
    rest = "".join(f"\n{inner}{line}" for line in lines[1:])
    return f"{indent}{marker} {lines[0]}{rest}"


# -- Strapi blocks (strapi/blocks-react-renderer, the blocks validator) -----------------------


def _strapi_inline(children: object, depth: int) -> str:
    if depth > MAX_DEPTH:
        return ""
    parts = []
    for node in _nodes(children):
        if node.get("type") == "link":
            label = _strapi_inline(node.get("children"), depth + 1)
            url = _text(node.get("url"))
            parts.append(f"[{label}]({url})" if url else label)
        elif node.get("code"):
            parts.append(f"`{_text(node.get('text'))}`")
        else:
            parts.append(_text(node.get("text")) or _strapi_inline(node.get("children"), depth + 1))
    return "".join(parts)


def _strapi_blocks(nodes: object, depth: int) -> list[str]:
    if depth > MAX_DEPTH:
        return []
    out = []
    for node in _nodes(nodes):
        kind = node.get("type")
        if kind == "heading":
            level = node.get("level")
            hashes = "#" * (level if isinstance(level, int) and 1 <= level <= 6 else 2)
            out.append(f"{hashes} {_strapi_inline(node.get('children'), depth)}")
        elif kind == "list":
            out.append(_strapi_list(node, depth))
        elif kind == "quote":
            out.append(_quote(_strapi_inline(node.get("children"), depth)))
        elif kind == "code":
            language = node.get("language", node.get("syntax"))
            out.append(_fence(_strapi_inline(node.get("children"), depth), language))
        elif kind == "image":
            image = node["image"] if isinstance(node.get("image"), dict) else {}
            out.append(_text(image.get("alternativeText")) or _text(image.get("caption")))
        else:
            out.append(_strapi_inline(node.get("children"), depth))
    return out


def _strapi_list(node: dict[str, Any], depth: int, indent: str = "") -> str:
    ordered = node.get("format") == "ordered"
    lines = []
    number = 0
    nested = indent + "  "  # a nested list belongs to the item before it
    for child in _nodes(node.get("children")):
        if child.get("type") == "list" and depth < MAX_DEPTH:
            lines.append(_strapi_list(child, depth + 1, nested))
            continue
        number += 1
        marker = f"{number}." if ordered else "-"
        nested = indent + " " * (len(marker) + 1)
        lines.append(_item(marker, _strapi_inline(child.get("children"), depth), indent))
    return "\n".join(lines)


# -- Sanity Portable Text (portabletext/types) --------------------------------------------------


def _portable_inline(block: dict[str, Any]) -> str:
    links = {
        d["_key"]: _text(d.get("href"))
        for d in _nodes(block.get("markDefs"))
        if d.get("_type") == "link" and isinstance(d.get("_key"), str)
    }
    parts = []
    for span in _nodes(block.get("children")):
        text = _text(span.get("text"))
        marks: list[Any] = span["marks"] if isinstance(span.get("marks"), list) else []
        if "code" in marks:
            text = f"`{text}`"
        href = next((links[m] for m in marks if isinstance(m, str) and links.get(m)), None)
        parts.append(f"[{text}]({href})" if href else text)
    return "".join(parts)


def _portable_blocks(blocks: Iterable[object]) -> list[str]:
    out: list[str] = []
    numbers: dict[int, int] = {}  # the running number of each list level, while in a list
    nested: dict[int, str] = {}  # the indent of the items under each level's last item
    for block in _nodes(blocks):
        kind = block.get("_type")
        list_item = block.get("listItem") if kind == "block" else None
        if not isinstance(list_item, str):
            numbers, nested = {}, {}
        if kind == "block" and isinstance(list_item, str):
            level = block.get("level")
            depth = max(0, min(level if isinstance(level, int) else 1, MAX_DEPTH) - 1)
            in_list = bool(numbers)
            numbers = {d: n for d, n in numbers.items() if d <= depth}
            nested = {d: i for d, i in nested.items() if d < depth}
            numbers[depth] = numbers.get(depth, 0) + 1
            marker = f"{numbers[depth]}." if list_item == "number" else "-"
            indent = nested[max(nested)] if nested else ""
            nested[depth] = indent + " " * (len(marker) + 1)
            line = _item(marker, _portable_inline(block), indent)
            if in_list:  # consecutive items are one Markdown list
                out[-1] += "\n" + line
            else:
                out.append(line)
        elif kind == "block":
            text, style = _portable_inline(block), _text(block.get("style"))
            if len(style) == 2 and style[0] == "h" and style[1] in "123456":
                out.append(f"{'#' * int(style[1])} {text}")
            elif style == "blockquote":
                out.append(_quote(text))
            else:
                out.append(text)
        elif kind == "code":
            out.append(_fence(_text(block.get("code")), block.get("language")))
        else:
            out.append(_text(block.get("text")) or _text(block.get("alt")))
    return out


# -- Contentful Rich Text (contentful/rich-text, rich-text-types) ------------------------------


def _contentful_inline(nodes: object, depth: int) -> str:
    if depth > MAX_DEPTH:
        return ""
    parts = []
    for node in _nodes(nodes):
        kind = node.get("nodeType")
        if kind == "text":
            text = _text(node.get("value"))
            code = any(m.get("type") == "code" for m in _nodes(node.get("marks")))
            parts.append(f"`{text}`" if code else text)
        elif kind == "hyperlink":
            data = node["data"] if isinstance(node.get("data"), dict) else {}
            label = _contentful_inline(node.get("content"), depth + 1)
            uri = _text(data.get("uri"))
            parts.append(f"[{label}]({uri})" if uri else label)
        else:
            parts.append(_contentful_inline(node.get("content"), depth + 1))
    return "".join(parts)


def _contentful_blocks(nodes: object, depth: int) -> list[str]:
    if depth > MAX_DEPTH:
        return []
    out = []
    for node in _nodes(nodes):
        kind = _text(node.get("nodeType"))
        content = node.get("content")
        if kind.startswith("heading-") and kind[-1] in "123456":
            out.append(f"{'#' * int(kind[-1])} {_contentful_inline(content, depth + 1)}")
        elif kind in ("unordered-list", "ordered-list"):
            lines = []
            for number, item in enumerate(_nodes(content), start=1):
                marker = f"{number}." if kind == "ordered-list" else "-"
                # The item's continuation lines indent a nested list: it renders unindented.
                inner = _contentful_blocks(item.get("content"), depth + 1)
                lines.append(_item(marker, "\n".join(inner), ""))
            out.append("\n".join(lines))
        elif kind == "blockquote":
            out.append(_quote("\n\n".join(_contentful_blocks(content, depth + 1))))
        elif kind == "hr":
            out.append("---")
        elif kind in ("paragraph", "table-cell", "table-header-cell"):
            out.append(_contentful_inline(content, depth + 1))
        else:
            out.extend(_contentful_blocks(content, depth + 1))
    return out
