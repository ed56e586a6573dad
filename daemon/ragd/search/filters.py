"""Query filters: which sources, and which document keys, a query searches.

Owns the filter a query may carry (source names, and a glob over the document key) and
its one form every store can apply inside its own search: a regular expression a whole
doc_id (`<source>:<key>`) must match. Tantivy matches it against its raw doc_id terms,
LanceDB in its prefilter; both read the syntax of Rust's regex crate, which this module
writes in its plainest subset (escaped literals, `.`, `[^/]`, `*`, groups, `|`).

Glob syntax, over the whole key (POSIX separators): `*` matches within one path segment,
`**` across segments (`docs/**/*.md`, and `**/` may match no directory at all), `?` one
character other than `/`; every other character is itself. Pure; imports nothing from
ragd but its errors.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ragd.errors import QueryRefused

MAX_PATH_CHARS = 1000
MAX_SOURCES = 64
# The regex crate's metacharacters (what its `escape` escapes); others stand for themselves.
_META = frozenset("\\.+*?()|[]{}^$#&-~")
# Control characters, and lone surrogates (invalid UTF-8 in an argument, or "\ud800" in
# JSON), which no store can take.
_UNUSABLE = re.compile(r"[\x00-\x1f\x7f\ud800-\udfff]")


def escape(text: str) -> str:
    """`text` as a literal in Rust regex syntax (also valid Python regex syntax)."""
    return "".join("\\" + c if c in _META else c for c in text)


def glob_regex(glob: str) -> str:
    """A regular expression matching exactly the keys `glob` matches (see module doc)."""
    out: list[str] = []
    i = 0
    while i < len(glob):
        if glob.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif glob.startswith("**", i):
            out.append(".*")
            i += 2
        elif glob[i] == "*":
            out.append("[^/]*")
            i += 1
        elif glob[i] == "?":
            out.append("[^/]")
            i += 1
        else:
            out.append(escape(glob[i]))
            i += 1
    return "".join(out)


@dataclass(frozen=True)
class QueryFilter:
    """Search only documents of these `sources` (any, when empty) whose key matches the
    glob `path` (any, when None), within the `scope` of the asker's token: the sources it
    may read (None: every source). A source asked for outside the scope is searched as
    one that holds nothing, so that an answer never tells what lies beyond it."""

    sources: tuple[str, ...] = ()
    path: str | None = None
    scope: frozenset[str] | None = None

    def __post_init__(self) -> None:
        if len(self.sources) > MAX_SOURCES:
            raise QueryRefused(f"at most {MAX_SOURCES} sources may be named")
        if self.path is not None:
            if not self.path or len(self.path) > MAX_PATH_CHARS:
                raise QueryRefused(f"a path filter has 1 to {MAX_PATH_CHARS} characters")
            if _UNUSABLE.search(self.path):
                raise QueryRefused("a path filter may not hold control characters or invalid text")

    @property
    def active(self) -> bool:
        """Whether it filters anything."""
        return bool(self.sources) or self.path is not None or self.scope is not None

    @property
    def searched(self) -> tuple[str, ...] | None:
        """The sources searched: those asked for, within the scope (None: every source)."""
        if self.scope is None:
            return self.sources or None
        if not self.sources:
            return tuple(sorted(self.scope))
        return tuple(s for s in self.sources if s in self.scope)

    @property
    def matches_nothing(self) -> bool:
        """True when no source is left to search (every one asked for is out of scope)."""
        return self.searched == ()

    def doc_pattern(self) -> str | None:
        """The regular expression a whole doc_id must match; None when nothing is filtered.
        Not asked when it `matches_nothing` (the caller answers without searching)."""
        if not self.active:
            return None
        sources = "|".join(escape(s) for s in dict.fromkeys(self.searched or ())) or "[^:]*"
        key = ".*" if self.path is None else glob_regex(self.path)
        return f"(?:{sources}):{key}"


NO_FILTER = QueryFilter()
