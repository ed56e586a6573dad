"""markdown-it-pyrs behind one adapter: Markdown source to a tree of block nodes.

Owns building a parser of block rules only, and the node type it returns
(`name`, `srcmap` byte offsets, `meta`, `children`). markdown-it-pyrs is markdown-it.rs,
the Rust port of the markdown-it family: a Rust panic reaches Python as pyo3's
PanicException, a BaseException, which the caller must catch by name.
"""

from __future__ import annotations

from typing import Literal, get_args

from markdown_it_pyrs import MarkdownIt, Node

__all__ = ["MarkdownIt", "Node", "block_parser"]

# CommonMark's block rules plus tables (the library's names for them).
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
BLOCK_RULES: tuple[BlockRule, ...] = get_args(BlockRule)


def block_parser() -> MarkdownIt:
    """A parser with the "zero" preset (nothing enabled) plus the block rules alone: no
    inline rule."""
    return MarkdownIt("zero").enable_many(list(BLOCK_RULES))
