"""ragd for LLM applications: a Model Context Protocol server (the official `mcp` SDK).

Owns the tools an MCP client sees and what each answers with, as structured output and
as readable text:

- `search`: numbered hits with their freshness (`indexed_at`, `stale`, `stale_reasons`)
  and `abstained`;
- `get_section` / `get_document`: the whole section around a chunk, or a whole document,
  by id, bounded by a character budget ("embed small, return the parent");
- `status`: the freshness summary per source.

`search` reads through `ragd.service.readers`, which brings its handles to the newest
commit before it reads, so a session never serves an index its writer has moved past;
sections and documents come from the manifest, whose every read is current; `status` is
the daemon's (or `ragd status`'s) report.
`ragd mcp` serves these tools over stdio; `ragd serve` over Streamable HTTP at /mcp
(ragd.service.mcp.endpoint). Errors a client causes (an unknown id, a refused query) come
back as tool errors with one line saying why; the server goes on.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any, Literal, Protocol, TypeVar

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, TextContent
from pydantic import BaseModel, Field

from ragd import __version__
from ragd.errors import RagdError
from ragd.search.context import STALE_NOTES
from ragd.search.filters import QueryFilter
from ragd.search.parents import ParentHit
from ragd.search.results import QueryRequest, SearchResponse, cited_uri
from ragd.service.access import OPEN, Grant, scoped_status

T = TypeVar("T")
DEFAULT_K = 8
SECTION_CHARS = 4000
DOCUMENT_CHARS = 20_000
INSTRUCTIONS = (
    "ragd searches a documentation index that it keeps in step with its sources. "
    "`search` finds passages (each says when it was indexed and whether it may be stale); "
    "`get_section` and `get_document` return the text around a hit; `status` says how "
    "fresh the index is. When `abstained` is true the documents may not answer: say so."
)


class Reader(Protocol):
    """What the tools read through (ragd.service.readers.Readers)."""

    def search(self, request: QueryRequest) -> SearchResponse: ...
    def section(self, chunk_id: str, max_chars: int) -> ParentHit | None: ...
    def document(self, doc_id: str, max_chars: int) -> ParentHit | None: ...


# -- what the tools answer with (their output schemas) ---------------------------------------


class Freshness(BaseModel):
    indexed_at: str | None = Field(description="When the document was last indexed (UTC).")
    stale: bool = Field(description="True when the index may no longer say what the source says.")
    stale_reasons: list[str] = Field(
        description="source_changed, source_deleted, pending, max_age or fingerprint."
    )


class SearchHit(Freshness):
    number: int = Field(description="The hit's rank, 1 first: cite it as [number].")
    doc_id: str
    chunk_id: str = Field(description="Pass to get_section for the whole section.")
    title: str
    heading_path: list[str]
    page: int | None = Field(
        default=None, description="The 1-based page of a PDF the chunk is on; null otherwise."
    )
    uri: str = Field(description="The document's address; '#page=N' on a PDF's page.")
    text: str = Field(description="The chunk's text.")
    score: float


class SearchResult(BaseModel):
    query: str
    abstained: bool = Field(description="True when the documents may not answer the query.")
    hits: list[SearchHit]


class ParentResult(Freshness):
    doc_id: str
    chunk_id: str | None = Field(description="The chunk a section was asked around.")
    source: str = Field(description="The source (folder, CMS or site) it came from.")
    path: str = Field(description="The document's key within its source.")
    title: str
    heading_path: list[str] = Field(description="The section's headings; [] for a document.")
    page: int | None = Field(
        default=None, description="The 1-based page of a PDF the section is on; null otherwise."
    )
    uri: str = Field(description="The document's address; '#page=N' on a PDF's page.")
    text: str
    chars: int = Field(description="The whole section's or document's length.")
    truncated: bool = Field(description="True when text was cut to max_chars.")


class SourceFreshness(BaseModel):
    name: str
    documents: int
    chunks: int
    failed: int
    stale: int
    stale_by_reason: dict[str, int]
    last_indexed_at: str | None
    second_stage_coverage: float | None = Field(
        description="Share of chunks with a second-stage vector; null when it is off."
    )


class StatusResult(BaseModel):
    stores_agree: bool
    documents: int
    stale: int
    failed: int
    sources: list[SourceFreshness]


# -- the server ----------------------------------------------------------------------------


def build_server(reader: Reader, status: Callable[[], dict[str, Any]]) -> MCPServer:
    """The MCP server over a reader and a status report (`ragd status --json`'s object)."""
    server = MCPServer(name="ragd", version=__version__, instructions=INSTRUCTIONS)

    @server.tool(
        name="search",
        description="Search the documentation. Hits are numbered, each with its freshness; "
        "abstained=true means the documents may not answer the question.",
    )
    def search(
        query: Annotated[str, Field(description="The question or keywords.")],
        k: Annotated[int, Field(ge=1, le=50, description="How many hits.")] = DEFAULT_K,
        mode: Annotated[
            Literal["hybrid", "bm25", "vector"] | None,
            Field(description="How to match; default: the index's configured mode."),
        ] = None,
        exclude_stale: Annotated[bool, Field(description="Leave out stale hits.")] = False,
        source: Annotated[list[str] | None, Field(description="Only these sources.")] = None,
        path: Annotated[
            str | None, Field(description="Only keys matching this glob ('docs/**/*.md').")
        ] = None,
        ctx: Context | None = None,
    ) -> Annotated[CallToolResult, SearchResult]:
        filters = _refused_as_tool_error(lambda: QueryFilter(tuple(source or ()), path))
        request = QueryRequest(
            query, k=k, mode=mode, exclude_stale=exclude_stale, filters=_grant(ctx).scoped(filters)
        )
        response = _refused_as_tool_error(lambda: reader.search(request))
        result = SearchResult(
            query=response.query,
            abstained=response.abstained,
            hits=[
                SearchHit(
                    number=hit.rank,
                    doc_id=hit.document.doc_id,
                    chunk_id=hit.chunk.chunk_id,
                    title=hit.document.title,
                    heading_path=list(hit.chunk.heading_path),
                    page=hit.chunk.page,
                    uri=cited_uri(hit.document.uri, hit.chunk.page),
                    text=hit.chunk.text,
                    score=hit.score,
                    indexed_at=hit.document.indexed_at,
                    stale=bool(hit.stale_reasons),
                    stale_reasons=list(hit.stale_reasons),
                )
                for hit in response.hits
            ],
        )
        return _answer(result, _search_text(result))

    @server.tool(
        name="get_section",
        description="The whole section around a chunk (a hit's chunk_id), at most max_chars.",
    )
    def get_section(
        chunk_id: str,
        max_chars: Annotated[int, Field(ge=100, le=200_000)] = SECTION_CHARS,
        ctx: Context | None = None,
    ) -> Annotated[CallToolResult, ParentResult]:
        found = _refused_as_tool_error(lambda: reader.section(chunk_id, max_chars))
        if found is None or not _grant(ctx).sees(found.document.source):
            raise ToolError(f"no chunk {chunk_id!r} in the index (it may have been re-indexed)")
        return _parent(found)

    @server.tool(
        name="get_document",
        description="A whole document by doc_id, its first max_chars (truncated says so).",
    )
    def get_document(
        doc_id: str,
        max_chars: Annotated[int, Field(ge=100, le=200_000)] = DOCUMENT_CHARS,
        ctx: Context | None = None,
    ) -> Annotated[CallToolResult, ParentResult]:
        found = _refused_as_tool_error(lambda: reader.document(doc_id, max_chars))
        if found is None or not _grant(ctx).sees(found.document.source):
            raise ToolError(f"no document {doc_id!r} with text in the index")
        return _parent(found)

    @server.tool(
        name="status",
        description="How fresh the index is: per source, documents, stale ones by reason, "
        "failed ones, when it was last indexed, and whether the stores agree.",
    )
    def status_tool(ctx: Context | None = None) -> Annotated[CallToolResult, StatusResult]:
        report = scoped_status(_refused_as_tool_error(status), _grant(ctx))
        result = StatusResult(
            stores_agree=report["stores_agree"],
            documents=report["documents"],
            stale=report["stale"],
            failed=report["failed"],
            sources=[
                SourceFreshness(
                    name=s["name"],
                    documents=s["documents"],
                    chunks=s["chunks"],
                    failed=s["failed"],
                    stale=s["stale"],
                    stale_by_reason=s["stale_by_reason"],
                    last_indexed_at=s["last_indexed_at"],
                    second_stage_coverage=(s.get("second_stage") or {}).get("coverage"),
                )
                for s in report["sources"]
            ],
        )
        return _answer(result, _status_text(result))

    return server


def _grant(ctx: Context | None) -> Grant:
    """What the caller may read: the grant ragd's access gate put on the HTTP request
    (ragd.service.http.gate); over stdio, a local user's, everything."""
    try:
        request = None if ctx is None else ctx.request_context.request
    except ValueError:  # called outside any request: in this process, not over HTTP
        request = None
    state = getattr(request, "scope", {}).get("state") or {}
    found = state.get("grant", OPEN)
    return found if isinstance(found, Grant) else OPEN


def _refused_as_tool_error(call: Callable[[], T]) -> T:
    """`call()`, with ragd's own errors as tool errors (their message, one line)."""
    try:
        return call()
    except RagdError as exc:
        raise ToolError(str(exc)) from exc


def _answer(result: BaseModel, text: str) -> CallToolResult:
    return CallToolResult(
        content=[TextContent(type="text", text=text)],
        structured_content=result.model_dump(mode="json"),
    )


def _parent(found: ParentHit) -> CallToolResult:
    result = ParentResult.model_validate(found.to_json())
    where = " › ".join(result.heading_path) or result.title
    lines = [f"{where} — {result.uri}", _freshness(result), "", result.text]
    if result.truncated:
        lines.append(f"[cut: {len(result.text):,} of {result.chars:,} characters shown]")
    return _answer(result, "\n".join(lines))


def _freshness(item: Freshness) -> str:
    indexed = f"indexed {item.indexed_at or 'never'}"
    if not item.stale:
        return indexed
    reasons = "; ".join(STALE_NOTES.get(r, r) for r in item.stale_reasons)
    return f"{indexed}; STALE: {reasons}"


def _search_text(result: SearchResult) -> str:
    lines = []
    if result.abstained:
        lines += ["The documents may not answer this question; the closest passages follow.", ""]
    for hit in result.hits:
        where = " › ".join(hit.heading_path) or hit.title
        lines += [
            f"[{hit.number}] {where} — {hit.uri}",
            f"chunk_id {hit.chunk_id}; {_freshness(hit)}",
            hit.text,
            "",
        ]
    if not result.hits:
        lines.append(f"No passage matched {result.query!r}.")
    return "\n".join(lines).rstrip()


def _status_text(result: StatusResult) -> str:
    lines = [
        f"{result.documents} documents, {result.stale} stale, {result.failed} failed; "
        f"stores {'agree' if result.stores_agree else 'DISAGREE'}"
    ]
    for s in result.sources:
        stale = ", ".join(f"{n} {reason}" for reason, n in s.stale_by_reason.items())
        lines.append(
            f"{s.name}: {s.documents} documents, {s.chunks} chunks, {s.failed} failed, "
            f"{s.stale} stale{f' ({stale})' if stale else ''}, last indexed "
            f"{s.last_indexed_at or 'never'}"
        )
    return "\n".join(lines)
