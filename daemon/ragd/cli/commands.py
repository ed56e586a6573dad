"""The `ragd` command line: a thin shell over the core.

Owns argument parsing, JSON output (the text people read is `ragd.cli.text`), and the
one place where errors become one-line messages and exit codes: 0 success, 1 runtime failure,
2 usage or configuration error (including a refused query). Each command imports the part
of the engine it runs when it runs: `ragd status` beside a daemon only asks it over HTTP,
so it should not pay for importing the indexer.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Sequence
from contextlib import nullcontext
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar, get_args

import click

from ragd.cli.daemon_client import (
    PASS_TIMEOUT,
    QUERY_TIMEOUT,
    TOKEN_ENV,
    DaemonAnswer,
    ask_daemon,
    daemon_url,
    refusal,
    request_daemon,
    status_url,
)
from ragd.cli.text import (
    Progress,
    eval_text,
    index_summary,
    query_text,
    reembed_summary,
    stale_text,
    status_text,
    verdict,
)
from ragd.config import Config, SearchMode, SourceConfig, load_config, resolve_config_path
from ragd.errors import ConfigError, LockedError, RagdError, UsageError
from ragd.stores.wrapping import Wrapper, unwrapped

if TYPE_CHECKING:
    from ragd.indexing.indexer import Indexer
    from ragd.indexing.report import IndexReport
    from ragd.service.runtime import Runtime

EXIT_OK, EXIT_FAILURE, EXIT_USAGE = 0, 1, 2
MODES: tuple[SearchMode, ...] = get_args(SearchMode)
# `ragd eval`'s modes: the query modes, and hybrid re-scored by the second stage (the
# query modes' hybrid is measured without it, so the two can be compared).
EVAL_MODES = ("bm25", "vector", "hybrid", "hybrid+rerank")
# malloc arenas `ragd serve` keeps. At 125k chunks one arena per thread (glibc's default)
# held ~90 MiB more than two after 20 s of queries from 4 clients, at the same throughput.
SERVE_ARENAS = 2


def _exit_code(error: RagdError) -> int:
    return EXIT_USAGE if isinstance(error, ConfigError | UsageError | LockedError) else EXIT_FAILURE


class _State:
    """What every command shares: the options --config and --debug set (before the command
    name or after it), the config (read once, when first needed) and a test's wrapper of the
    writer's parts (ragd.stores.wrapping)."""

    def __init__(self, wrap: Wrapper = unwrapped) -> None:
        self.config_path: str | None = None
        self.debug = False
        self.wrap = wrap
        self._config: Config | None = None

    def config(self) -> Config:
        if self._config is None:
            self._config = load_config(resolve_config_path(self.config_path, os.environ))
        return self._config

    def runtime(self) -> Runtime:
        from ragd.service.runtime import Runtime

        return Runtime.from_config(self.config(), wrap=self.wrap)


def _set_config(ctx: click.Context, _: click.Parameter, value: str | None) -> None:
    if value is not None:  # given after the command name too: the later one wins
        ctx.ensure_object(_State).config_path = value


def _set_debug(ctx: click.Context, _: click.Parameter, value: bool) -> None:
    if value:
        ctx.ensure_object(_State).debug = True


F = TypeVar("F", bound=Callable[..., Any])


def _shared_options(command: F) -> F:
    """--config and --debug, on the group and on every command, so that both
    `ragd --config x.toml status` and `ragd status --config x.toml` work alike."""
    command = click.option(
        "--debug",
        is_flag=True,
        expose_value=False,
        callback=_set_debug,
        help="Show tracebacks for unexpected errors.",
    )(command)
    return click.option(
        "--config",
        metavar="PATH",
        expose_value=False,
        callback=_set_config,
        help="Configuration file. Default: $RAGD_CONFIG, else ./config.toml.",
    )(command)


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(package_name="ragd", prog_name="ragd", message="%(prog)s %(version)s")
@_shared_options
def cli() -> None:
    """ragd keeps a hybrid (BM25 + vector) retrieval index in step with your documents.

    \b
    ragd index              bring the index in step with the sources (incremental)
    ragd reembed            after a model change: re-embed stored chunk texts (--ray)
    ragd query "text"       search it; hits carry indexed_at and stale flags
    ragd status             what is indexed, failed, stale; whether the stores agree
    ragd eval GOLD.jsonl    measure retrieval (recall@k, MRR, nDCG, abstention)
    ragd serve              the daemon: watch, re-index on change, answer over HTTP
    ragd mcp                search for LLM applications over MCP (stdio)

    --config and --debug may also follow the command name. status, query and index ask
    a running ragd serve of the same data directory; when its [access] has tokens, set
    RAGD_TOKEN to one (a token of some sources sees only those).
    """


@cli.command()
@_shared_options
@click.option(
    "--full",
    is_flag=True,
    help="Re-read every file and rewrite every document (stored embeddings are still re-used).",
)
@click.option("--json", "as_json", is_flag=True, help="Print a JSON summary on stdout.")
@click.pass_obj
def index(state: _State, full: bool, as_json: bool) -> int:
    """Run one synchronous indexing pass over all configured sources.

    Only what changed is re-chunked and re-embedded. With the second stage on ([rerank]),
    chunks without a second-stage vector are then embedded by it too, before the command
    returns (the slow part: tens of chunks a second). Exits 0 when the pass completes,
    even if some documents failed (they are reported); 1 when it could not complete.

    When `ragd serve` runs for this data directory, the daemon's writer runs the pass
    (after what it has queued) and this command prints its report: remote sources are
    then polled on the daemon's schedule, and second-stage vectors embedded in its
    background (`pending` counts them).
    """
    from ragd.indexing.report import IndexReport

    answer = _ask_daemon(state, "POST", "/v1/index", {"full": full}, timeout=PASS_TIMEOUT)
    if answer.report is not None:
        return _print_index_report(IndexReport.from_json(answer.report), as_json)
    return _index_here(state, full, as_json)


def _index_here(state: _State, full: bool, as_json: bool) -> int:
    """`ragd index` with no daemon for the data directory: the pass in this process."""
    from ragd.indexing.workers import worker_count

    runtime = state.runtime()
    progress = Progress(sys.stderr)
    publisher = runtime.publisher()
    with runtime.indexer(second_threads=worker_count()) as indexer:
        if publisher is not None:  # cleanups keep what replicas may be reading
            indexer.stores.keep_published(publisher.oldest_versions(), runtime.embedder.dim)
        report = indexer.run(full=full, progress=progress)
        progress.finish()
        for source in runtime.config.sources:
            if not report.interrupted:
                report = report.combined(_poll_once(indexer, source))
        if not report.interrupted:
            second = Progress(sys.stderr, label="second stage", unit="chunks")
            report = report.merged(indexer.fill_second_stage(progress=second))
            second.finish()
        if publisher is not None and not report.interrupted:
            published = publisher.publish(indexer.stores.vector_versions(runtime.embedder.dim))
            click.echo(
                f"published generation {published.number} to {publisher.store.location.uri}",
                err=True,
            )
    return _print_index_report(report, as_json)


def _print_index_report(report: IndexReport, as_json: bool) -> int:
    if as_json:
        click.echo(json.dumps(report.to_json(), indent=2))
    else:
        click.echo(index_summary(report))
    for skipped in report.skipped:
        click.echo(f"ragd: warning: skipped {skipped}", err=True)
    for error in report.errors:
        click.echo(f"ragd: error: {error}", err=True)
    return EXIT_FAILURE if report.errors else EXIT_OK


def _poll_once(indexer: Indexer, source: SourceConfig) -> IndexReport:
    """Poll one remote source (a sitemap, a WordPress site, a CMS's read API) and apply
    what changed; an empty report for a source ragd does not poll."""
    from ragd.indexing.applied_polls import apply_poll
    from ragd.indexing.report import IndexReport
    from ragd.service.remote_sources import polled_source_of

    try:
        polled = polled_source_of(source)
    except ConfigError as exc:  # e.g. its API token is not in this shell's environment
        return IndexReport(errors=[f"source '{source.name}' not polled: {exc}"])
    if polled is None:
        return IndexReport()
    click.echo(f"polling {source.name}...", err=True)
    applied, found = apply_poll(indexer, polled[0])
    click.echo(
        f"polled {source.name}: {found.listed} listed, {found.fetched} fetched, "
        f"{found.deleted} deleted, {len(found.failed)} failed",
        err=True,
    )
    return applied


@cli.command()
@_shared_options
@click.option(
    "--ray",
    "on_ray",
    is_flag=True,
    help="Embed on a Ray cluster with Ray Data (the extra: pip install -e '.[ray]'): the one "
    "at --ray-address or [cluster] ray_address, else a local Ray started for the run.",
)
@click.option(
    "--ray-address",
    metavar="ADDR",
    help="The Ray cluster to join (implies --ray): ray://HOST:10001, HOST:6379 or auto.",
)
@click.option(
    "--ray-cpus",
    type=click.IntRange(2, 4096),
    metavar="N",
    help="CPUs of a local Ray (default: all of this machine's); one is kept for reading "
    "and writing, the others each run a model.",
)
@click.option("--json", "as_json", is_flag=True, help="Print a JSON summary on stdout.")
@click.pass_obj
def reembed(
    state: _State, on_ray: bool, ray_address: str | None, ray_cpus: int | None, as_json: bool
) -> int:
    """Re-embed every chunk whose vector the current models lack, then switch to them.

    \b
    After a change of [embedding] model or [rerank] model, every document is indexed
    under another fingerprint. Rather than re-reading and re-chunking every file (what
    `ragd index` would do), this embeds the chunk texts the manifest already holds: each
    distinct text once, in batches whose vectors are stored as they come, so a run that
    is stopped or fails is finished by the next. Then it switches in one step: the new
    vectors in LanceDB (one commit per stage), then the chunks' keys and the documents'
    fingerprints in one manifest transaction. A first-stage model of another width
    rebuilds the vector table: vector search finds nothing until that commit.

    \b
    Only documents chunked exactly as the current [chunking] settings and ragd version
    would chunk them switch; the others are counted as left, for `ragd index`. Second-
    stage vectors the current [rerank] model lacks are embedded too. Holds the writer
    lock: stop `ragd serve` first. Afterwards `ragd index` embeds nothing.

    \b
    With --ray, the texts go to Ray Data as a Lance dataset under data_dir/reembed/ (with
    [storage] uri: under that prefix, where every node reaches it), are embedded by one
    model per Ray actor, and come back the same way. It joins [cluster] ray_address (or
    --ray-address), else starts a local Ray; the cluster's nodes need ragd (with the
    extra) installed and the models at the same paths.
    """
    from ragd.adapters.object_store import lance_options
    from ragd.indexing.reembed.backends import LocalBackend, RayBackend, RayCluster, Scratch
    from ragd.indexing.reembed.bulk import reembed as run_reembed
    from ragd.indexing.workers import worker_count

    runtime = state.runtime()
    ray = on_ray or ray_address is not None
    address = ray_address or (runtime.config.cluster.ray_address if ray else None)
    progress = _ReembedProgress("on Ray" if ray else "locally")
    publisher = runtime.publisher()
    cluster = RayCluster(address, num_cpus=None if address else ray_cpus)
    # A cluster's nodes reach the object store, not this machine's disk.
    storage = runtime.config.storage.uri
    scratch = (
        Scratch(str(runtime.data_dir.root / "reembed"))
        if storage is None
        else Scratch(f"{storage}/reembed", lance_options(os.environ))
    )
    with (
        runtime.indexer(second_threads=worker_count()) as indexer,
        RayBackend(cluster, scratch) if ray else nullcontext(LocalBackend()) as backend,
    ):
        report = run_reembed(
            indexer.stores,
            indexer.pipeline,
            indexer.embedder,
            # On Ray each actor has one CPU: the model's single-threaded copy.
            runtime.second_stage if ray else indexer.second,
            backend,
            progress=progress,
            cleanup_older_than=indexer.cleanup_older_than,
            keep_published=None if publisher is None else publisher.oldest_versions(),
        )
        progress.finish()
        if publisher is not None and (report.documents_switched or report.chunks_rekeyed):
            published = publisher.publish(indexer.stores.vector_versions(runtime.embedder.dim))
            click.echo(
                f"published generation {published.number} to {publisher.store.location.uri}",
                err=True,
            )
    click.echo(json.dumps(report.to_json(), indent=2) if as_json else reembed_summary(report))
    return EXIT_OK


class _ReembedProgress:
    """`ragd reembed`'s progress on stderr: a line per stage with something to embed,
    then a bar (a terminal) or a line every few seconds."""

    def __init__(self, where: str) -> None:
        self.where = where
        self._bars: dict[str, Progress] = {}

    def __call__(self, stage: str, done: int, total: int) -> None:
        bar = self._bars.get(stage)
        if bar is None:
            for earlier in self._bars.values():
                earlier.finish()
            click.echo(f"ragd: re-embedding {total} texts ({stage} stage) {self.where}", err=True)
            label = f"re-embedding ({stage} stage)"
            bar = self._bars[stage] = Progress(sys.stderr, label=label, unit="texts")
        if done:
            bar(done, total)

    def finish(self) -> None:
        for bar in self._bars.values():
            bar.finish()


@cli.command()
@_shared_options
@click.argument("text")
@click.option(
    "-k",
    "k",
    type=click.IntRange(1, 1000),
    default=None,
    help="How many results (default: search.k).",
)
@click.option(
    "--mode",
    type=click.Choice(MODES),
    default=None,
    help="Retriever: hybrid (BM25 and vector, fused, then re-scored by the second stage "
    "when it is on), bm25 or vector alone. Default: search.mode.",
)
@click.option(
    "--no-rerank",
    is_flag=True,
    help="Rank by the first stage alone, without the second-stage model.",
)
@click.option(
    "--source",
    "sources",
    multiple=True,
    metavar="NAME",
    help="Search only this source (repeat for several).",
)
@click.option(
    "--path",
    metavar="GLOB",
    help="Search only documents whose key matches GLOB ('*' within a directory, '**' "
    "across them, e.g. 'docs/**/*.md').",
)
@click.option("--exclude-stale", is_flag=True, help="Drop hits whose source may have changed.")
@click.option(
    "--expand",
    is_flag=True,
    help="Give each hit its whole section as context (bounded), for an LLM prompt.",
)
@click.option(
    "--context",
    "as_context",
    is_flag=True,
    help="Print one block for an LLM prompt: numbered, cited passages (each hit's section "
    "where it fits --max-chars), stale ones noted, and a sentence when ragd abstains.",
)
@click.option(
    "--max-chars",
    type=click.IntRange(1, 200_000),
    default=8000,
    show_default=True,
    help="With --context: the characters of the passages' texts in all (their citations "
    "and notes come on top).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
@click.pass_obj
def query(
    state: _State,
    text: str,
    k: int | None,
    mode: SearchMode | None,
    no_rerank: bool,
    sources: tuple[str, ...],
    path: str | None,
    exclude_stale: bool,
    expand: bool,
    as_context: bool,
    max_chars: int,
    as_json: bool,
) -> int:
    """Search the index for TEXT.

    \b
    hybrid (the default): BM25 and the first-stage vectors each retrieve their
    search.candidates best chunks, and convex fusion merges them: each list's scores
    divided by its best score, summed with weights search.bm25_weight (1.0) and
    search.vector_weight (0.5). search.fusion = "rrf" fuses by weighted reciprocal rank
    (search.rrf_k) instead. With the second stage on ([rerank]), its model re-scores the
    best rerank.candidates; its share of the score grows the less of the query the
    documents' own words cover.

    Hits carry indexed_at and stale flags (text output: "indexed 3 min ago"); a hybrid
    query whose evidence is weak says so first (abstained): the documents may not answer
    it.
    """
    asked: dict[str, Any] = {
        "query": text,
        "exclude_stale": exclude_stale,
        "expand": expand and not as_context,  # the context builds its sections itself
        "rerank": not no_rerank,
        "source": list(sources),
    }
    asked |= {name: v for name, v in (("k", k), ("mode", mode), ("path", path)) if v is not None}
    route = "/v1/context" if as_context else "/v1/query"
    if as_context:
        asked["max_chars"] = max_chars
    answer = _ask_daemon(state, "POST", route, asked, timeout=QUERY_TIMEOUT)
    result = answer.report if answer.report is not None else _query_here(state, asked)
    if as_context and not as_json:
        click.echo(result["context"])
    elif as_json:
        click.echo(json.dumps(result, indent=2, ensure_ascii=False))
    else:
        click.echo(query_text(result, now=datetime.now(UTC)))
    return EXIT_OK


def _query_here(state: _State, asked: dict[str, Any]) -> dict[str, Any]:
    """The query contract's JSON (or the context's, with `max_chars`) of a search in this
    process: no daemon serves the data directory."""
    from ragd.search.context import build_context
    from ragd.search.filters import QueryFilter

    runtime = state.runtime()
    filters = QueryFilter(tuple(asked["source"]), asked.get("path"))
    with runtime.readers() as stores:
        searcher = runtime.searcher(stores)
        response = searcher.search(
            asked["query"],
            k=asked.get("k"),
            mode=asked.get("mode") or runtime.config.search.mode,
            exclude_stale=asked["exclude_stale"],
            expand=asked["expand"],
            rerank=asked["rerank"],
            filters=filters,
        )
        if "max_chars" in asked:
            context = build_context(response, searcher.parents.around, asked["max_chars"])
            return context.to_json()
    return response.to_json()


def _ask_daemon(
    state: _State, method: str, route: str, body: dict[str, Any], *, timeout: float
) -> DaemonAnswer:
    """The daemon's answer when `ragd serve` runs for this data directory and answers 200;
    a refusal of the request itself (400) is this command's usage error; anything else
    is a note, and no report: the command does the work itself."""
    config = state.config()
    url = daemon_url(config.http.host, config.http.port) + route
    token = os.environ.get(TOKEN_ENV)
    answer = request_daemon(
        method, url, config.daemon.data_dir, body=body, timeout=timeout, token=token
    )
    if answer.report is not None and answer.status == 400:
        raise UsageError(
            str(answer.report.get("error") if isinstance(answer.report, dict) else answer.report)
        )
    if answer.report is not None and answer.status != 200:
        answer = DaemonAnswer(None, refusal(url, answer.status))
    if answer.note:
        click.echo(f"ragd: note: {answer.note}; working without it", err=True)
    return answer


@cli.command()
@_shared_options
@click.option("--json", "as_json", is_flag=True, help="Print the full report as JSON.")
@click.option(
    "--check",
    is_flag=True,
    help="Print one line; exit 1 if anything is stale or failed, the stores disagree, or "
    "a running daemon's writer is dead or its watcher degraded.",
)
@click.option(
    "--stale",
    "list_stale",
    is_flag=True,
    help="List the stale documents: path, reasons, when indexed.",
)
@click.pass_obj
def status(state: _State, as_json: bool, check: bool, list_stale: bool) -> int:
    """Report documents, chunks, failures and staleness per source, and store agreement.

    Works with or without a running daemon. When `ragd serve` runs for this data
    directory (at http.listen), its report is shown, with a daemon section: uptime, queue,
    writer and watcher health, next scheduled jobs, LanceDB versions. Otherwise the stores
    are read directly. Folder sources also list the symlinks, special files and files
    whose names are not valid UTF-8 their last full scan skipped (symlinks are not
    followed). Text output gives times as ages; --json as ISO 8601 UTC.
    """
    report = _status_report(state)
    code, line = verdict(report)
    if as_json:
        click.echo(json.dumps(report, indent=2, ensure_ascii=False))
    elif check:
        click.echo(line)
    elif list_stale:
        click.echo(stale_text(report))
    else:
        click.echo(status_text(report))
    return code if check else EXIT_OK


def _status_report(state: _State) -> dict[str, Any]:
    config = state.config()
    http = config.http
    url = status_url(http.host, http.port)
    answer = ask_daemon(url, config.daemon.data_dir, token=os.environ.get(TOKEN_ENV))
    if answer.note:
        click.echo(f"ragd: note: {answer.note}; reading the stores instead", err=True)
    if isinstance(answer.report, dict):
        return answer.report
    return state.runtime().status().to_json()


@cli.command(name="eval")
@_shared_options
@click.argument("gold", type=click.Path(dir_okay=False, path_type=Path))
@click.option(
    "-k", "k", type=click.IntRange(1, 100), default=10, show_default=True, help="Results per query."
)
@click.option(
    "--mode",
    type=click.Choice([*EVAL_MODES, "all"]),
    default="all",
    show_default=True,
    help="hybrid+rerank is hybrid re-scored by the second stage; all: every mode (that one "
    "only when the second stage is on).",
)
@click.option("--source", "sources", multiple=True, metavar="NAME", help="Search only this source.")
@click.option("--path", metavar="GLOB", help="Search only documents whose key matches GLOB.")
@click.option("--json", "as_json", is_flag=True, help="Print the full report as JSON.")
@click.pass_obj
def eval_command(
    state: _State,
    gold: Path,
    k: int,
    mode: str,
    sources: tuple[str, ...],
    path: str | None,
    as_json: bool,
) -> int:
    """Measure retrieval on a gold set (JSONL): recall@1/5/10, MRR@10, nDCG@10, abstention,
    per mode and question kind.

    Indexes nothing; refuses to run if a gold path is not in the index.
    """
    from ragd.search.evaluation import check_gold_paths, evaluate, load_gold
    from ragd.search.filters import QueryFilter

    runtime = state.runtime()
    questions = load_gold(gold)
    filters = QueryFilter(sources, path)
    reranking = runtime.second_stage is not None
    if mode == "hybrid+rerank" and not reranking:
        raise UsageError(
            "the second stage is off", hint="set [rerank] enabled = true, or pick another mode"
        )
    modes = (
        [m for m in EVAL_MODES if reranking or m != "hybrid+rerank"] if mode == "all" else [mode]
    )
    kinds = sorted({q.kind for q in questions if q.gold})
    with runtime.readers() as stores:
        check_gold_paths(questions, {d.key for d in stores.manifest.documents()})
        searcher = runtime.searcher(stores)
        reports = [evaluate(searcher, questions, m, k, filters=filters) for m in modes]
    if as_json:
        body = {"gold": str(gold), "k": k, "modes": {r.mode: r.to_json(kinds) for r in reports}}
        click.echo(json.dumps(body, indent=2, ensure_ascii=False))
    else:
        click.echo(eval_text(reports, kinds))
    return EXIT_OK


@cli.command()
@_shared_options
@click.option(
    "--reader",
    is_flag=True,
    help="Serve queries only, from the generations a writer publishes to [storage] uri.",
)
@click.pass_obj
def serve(state: _State, reader: bool) -> int:
    """Run the daemon: watch the sources, keep the index current, serve HTTP.

    \b
    Start-up queues a full scan (changes made while it was down are picked up, and an
    unclean stop is reconciled). Then file changes are indexed as they happen (searchable
    at once; their second-stage vectors follow in the background), a full rescan runs
    every schedule.rescan_interval, and the HTTP API answers on [http] listen:
      GET  /                         the status page (HTML)
      GET  /healthz                  liveness: writer alive, watcher degraded
      POST /v1/query                 search (the JSON of ragd query --json)
      POST /v1/context               prompt-ready passages (ragd query --context)
      GET  /v1/status                ragd status --json, plus the daemon's own section
      POST /v1/index                 ragd index beside the daemon (from this machine only)
      POST /v1/webhooks/<source>     deliveries of a webhook source
      GET  /metrics                  Prometheus metrics
      GET  /openapi.json             the API's OpenAPI description
      GET|POST|DELETE /mcp           MCP over Streamable HTTP
    SIGTERM or SIGINT stops gracefully; a second signal exits at once. Logs go to stderr,
    JSON lines unless stderr is a terminal (see daemon.log_format).

    \b
    With [storage] uri set, the writer publishes each commit there as a generation, and
    `ragd serve --reader` runs a read replica: no writer, watcher or scheduler; it answers
    /v1/query, /v1/context, /mcp, /v1/status, /metrics and / from the newest generation,
    looking for a newer one every storage.refresh_interval, with data_dir as its cache.
    Its hits' staleness is as of that generation (source_changed needs the sources).
    """
    # uvicorn, apscheduler and watchdog: only the daemon needs them.
    from ragd.adapters.allocator import limit_arenas
    from ragd.adapters.arrow import use_system_allocator
    from ragd.service.logs import configure_logging

    # Before the daemon's threads start: they share SERVE_ARENAS malloc arenas rather
    # than keeping one each, and Arrow allocates from those arenas rather than keeping a
    # pool of its own (ragd.adapters.allocator and ragd.adapters.arrow say why).
    limit_arenas(SERVE_ARENAS)
    use_system_allocator()
    runtime = state.runtime()
    configure_logging(runtime.config.daemon.log_format, runtime.config.daemon.log_level)
    if reader:
        from ragd.service.replica.server import ReplicaServer

        with ReplicaServer(runtime) as replica:
            return replica.serve()
    from ragd.service.serve import Daemon

    with Daemon(runtime) as daemon:
        return daemon.serve()


@cli.command(name="mcp")
@_shared_options
@click.pass_obj
def mcp_command(state: _State) -> int:
    """Serve search to an LLM application over MCP (the Model Context Protocol), on stdio.

    \b
    Tools: search, get_section, get_document, status. Read-only: it never writes the
    stores, runs beside `ragd serve`, and reads the newest committed index on every call.
    An MCP client starts it as: command "ragd", args ["--config", "/path/config.toml",
    "mcp"]. `ragd serve` offers the same tools over HTTP at /mcp. Logs go to stderr.
    """
    from ragd.service.logs import configure_logging
    from ragd.service.mcp.tools import build_server
    from ragd.service.readers import Readers

    runtime = state.runtime()
    configure_logging("json", runtime.config.daemon.log_level)  # stdout carries the protocol
    readers = Readers(runtime, every_read=True)
    try:
        runtime.embedder.embed([])  # load the models before the client's first call
        if runtime.second_stage is not None:
            runtime.second_stage.load()
        build_server(readers, lambda: runtime.status().to_json()).run("stdio")
    finally:
        readers.close()
    return EXIT_OK


# -- the one place errors become exit codes ------------------------------------------------


def main(argv: Sequence[str] | None = None, *, wrap: Wrapper = unwrapped) -> int:
    """Entry point of the `ragd` console script; returns the exit code. `wrap` is a test's
    wrapper of the writer's parts (tests/integration/crashing_ragd.py); the console script
    has none."""
    args = list(sys.argv[1:] if argv is None else argv)
    state = _State(wrap)
    try:
        result = cli.main(args=args, prog_name="ragd", standalone_mode=False, obj=state)
    except click.exceptions.Abort:
        click.echo("ragd: interrupted", err=True)
        return 130
    except click.ClickException as exc:
        exc.show()
        return EXIT_USAGE
    except RagdError as exc:
        click.echo(f"ragd: error: {exc}", err=True)
        return _exit_code(exc)
    except Exception as exc:
        if state.debug:
            raise
        first_line = (str(exc).splitlines() or [""])[0]
        click.echo(
            f"ragd: internal error: {type(exc).__name__}: {first_line} "
            "(run with --debug for the traceback)",
            err=True,
        )
        return EXIT_FAILURE
    return result if isinstance(result, int) else EXIT_OK


def run() -> None:
    """Console-script wrapper: exit with main()'s code."""
    sys.exit(main())


__all__ = ["cli", "main", "run"]
