"""markdown-it-pyrs behind one adapter: Markdown source to a tree of block nodes.

Owns building a parser with only the block rules asked for, and the node type it returns
(`name`, `srcmap` byte offsets, `meta`, `children`). markdown-it-pyrs is markdown-it.rs,
the Rust port of the markdown-it family: a Rust panic reaches Python as pyo3's
PanicException, a BaseException, which the caller must catch by name.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from markdown_it_pyrs import MarkdownIt, Node

__all__ = ["BlockRule", "MarkdownIt", "Node", "block_parser"]

# The block rules a parser may be given (the library's names for them).
BlockRule = Literal[
    "blockquote",
    "code",
    "fence",
    "heading",
    "hr",
    "html_block",
    "lheading",
    "list",
    "paragraph",
    "reference",
    "table",
]


def block_parser(rules: Sequence[BlockRule]) -> MarkdownIt:
    """A parser with the "zero" preset (nothing enabled) plus exactly `rules`."""
    return MarkdownIt("zero").enable_many(list(rules))
