"""Full index, no-op re-index and no-op daemon rescan, each beside its lower bound.

Usage:
    python bench/full_index.py CORPUS [--model DIR]

CORPUS is a directory (e.g. ../shared/corpora/fastapi-docs) or a .tar.gz to unpack
(e.g. ../shared/corpora/tldr-pages.tar.gz). Every *.md file under it is indexed into a
fresh temporary data_dir. In one run, on the same machine state, it measures:

- full index: the real `ragd index` process, beside the bare model (model2vec `encode`,
  same batch size, in a process of its own) encoding the same unique chunk texts ragd
  sent to it: the pipeline overhead ratio (issue 8 target: at most 1.5). This machine's
  speed drifts by more than 10% within minutes, so index and encode alternate
  FULL_ROUNDS times (each index into a fresh data_dir) and the ratio is of the sums;
  for reference, the encode with the float16 table widened to float32, as ragd loads
  the model, is also timed;
- no-op re-index: `ragd index` again, beside a bare `os.scandir` + `stat` walk of the
  same tree (target: at most 3x; zero model calls). The tree is walked once untimed, so
  both start from a warm dentry cache, then walk and no-op alternate NOOP_ROUNDS times
  and the medians are compared. Each round also times a no-op with the listing digest
  forgotten, as a watcher's writes leave it: the per-file comparison, which then
  remembers the digest again;
- no-op daemon rescan: `ragd serve` started on the up-to-date index; the start-up scan
  is a full rescan that finds nothing to do; its time from the writer's log.

Target 1 is read two ways. The `ragd index` process pays, once, for what the bare encode
is timed without: importing lancedb and loading the model (~0.7 s on the reference
machine; a 155-file corpus cannot amortise it). So each round also starts `ragd serve`
on a fresh data dir, which imports and loads before it scans: its start-up scan, a full
index, times the pipeline alone (chunk, embed, write), beside the same encodes.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sqlite3
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from datetime import datetime
from pathlib import Path
from typing import cast

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from ragd.indexing.chunking import labelled_text  # noqa: E402
from ragd.stores.manifest_reader import ManifestReader  # noqa: E402
from tests.integration.daemon import free_port, stop_daemon, wait_until  # noqa: E402

DEFAULT_MODEL = REPO.parent / "shared" / "models" / "minilm-l6-static-256"
BATCH_SIZE = 1024  # [embedding] batch_size default
# The no-op pass on this machine runs either fast or ~40% slower for minutes at a time
# (the same calls, all slower); a median of seven alternating rounds is steadier than of
# three, at ~4 s more per run.
NOOP_ROUNDS = 7
FULL_ROUNDS = 2


def run_index(config: Path) -> tuple[dict[str, object], float, int]:
    """Run `ragd index --json`; return its report, wall seconds and peak RSS in MiB."""
    started = time.perf_counter()
    process = subprocess.Popen(
        [sys.executable, "-m", "ragd", "--config", str(config), "index", "--json"],
        stdout=subprocess.PIPE,
        env=dict(os.environ, HF_HUB_OFFLINE="1"),
    )
    assert process.stdout is not None
    output = process.stdout.read()
    _, status, usage = os.wait4(process.pid, 0)
    seconds = time.perf_counter() - started
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"ragd index failed with exit code {os.waitstatus_to_exitcode(status)}")
    return json.loads(output), seconds, usage.ru_maxrss // 1024


def embed_texts(manifest_path: Path) -> list[str]:
    """The unique texts ragd embeds: title and heading path prefixed to each chunk."""
    manifest = ManifestReader.open(manifest_path)
    try:
        texts: dict[str, None] = {}
        for document in manifest.documents():
            for chunk in manifest.chunks_of(document.doc_id):
                texts[labelled_text(document.title, chunk.heading_path, chunk.text)] = None
        return list(texts)
    finally:
        manifest.close()


def bare_encode_seconds(model_dir: Path, texts: list[str], *, widened: bool = False) -> float:
    """Seconds model2vec takes to encode `texts` in batches of BATCH_SIZE (model loaded).

    `widened`: with the float16 table widened to float32 first, as ragd loads the model.
    """
    import numpy as np
    from model2vec import StaticModel

    model = StaticModel.from_pretrained(str(model_dir))
    if widened:
        model.embedding = model.embedding.astype(np.float32)
    model.encode(texts[:BATCH_SIZE], batch_size=BATCH_SIZE, use_multiprocessing=False)  # warm
    started = time.perf_counter()
    for start in range(0, len(texts), BATCH_SIZE):
        model.encode(
            texts[start : start + BATCH_SIZE], batch_size=BATCH_SIZE, use_multiprocessing=False
        )
    return time.perf_counter() - started


def encode_in_child(model_dir: Path, manifest: Path, *, widened: bool = False) -> tuple[float, int]:
    """`bare_encode_seconds` of the manifest's `embed_texts`, in a fresh process; and how
    many texts. This process never holds the model or the texts, so the peak RSS counted
    for its later children stays theirs (fork copies the parent's pages)."""
    flags = ["--widened"] if widened else []
    result = subprocess.run(
        [sys.executable, __file__, "--encode", str(manifest), "--model", str(model_dir), *flags],
        capture_output=True,
        text=True,
        check=True,
    )
    seconds, count = result.stdout.split()
    return float(seconds), int(count)


def walk_seconds(root: Path) -> tuple[float, int]:
    """Seconds for a bare recursive scandir + stat of every entry; and the file count."""
    started = time.perf_counter()
    files = 0
    pending = [str(root)]
    while pending:
        with os.scandir(pending.pop()) as entries:
            for entry in entries:
                entry.stat(follow_symlinks=False)
                if entry.is_dir(follow_symlinks=False):
                    pending.append(entry.path)
                else:
                    files += 1
    return time.perf_counter() - started, files


def forget_listing_digests(manifest: Path) -> None:
    """Make the next pass compare file by file, as it does after any document changed."""
    connection = sqlite3.connect(manifest, isolation_level=None)
    try:
        connection.execute("DELETE FROM listing_digests")
    finally:
        connection.close()


def daemon_scan_seconds(config: Path, log_path: Path) -> float:
    """Start `ragd serve`; seconds its start-up scan took (a full index on an empty data
    dir, a rescan on an up-to-date one). The daemon loads the model and opens both stores
    before it scans, so the scan is the pipeline alone, as when a source is added later.

    The end of the scan is read from the daemon's log, not asked over HTTP: a status
    request reads every document's staleness, and polling it five times a second while
    the scan ran made the scan 0.72-1.28 s instead of 0.33-0.47 s.
    """

    def finished() -> float | None:
        for line in log_path.read_text().splitlines():
            try:
                event = json.loads(line) if line.startswith("{") else {}
            except json.JSONDecodeError:  # the line being written as we read
                continue
            if event.get("event") == "scan_finished":
                return float(event["seconds"])
        return None

    with log_path.open("wb") as log:
        daemon = subprocess.Popen(
            [sys.executable, "-m", "ragd", "--config", str(config), "serve"],
            stdout=log,
            stderr=log,
            env=dict(os.environ, HF_HUB_OFFLINE="1", RAGD_LOG_FORMAT="json"),
        )
        try:
            seconds: float = wait_until(finished, 600, 0.2)
        finally:
            stop_daemon(daemon)
    return seconds


def ratios(runs: list[float], encodes: list[float]) -> str:
    """Each round's seconds beside its encode's, and their ratio."""
    return "; ".join(
        f"{run:.2f} s / {encode:.2f} s = {run / encode:.2f}"
        for run, encode in zip(runs, encodes, strict=True)
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("corpus", type=Path, nargs="?")
    parser.add_argument("--model", type=Path, default=DEFAULT_MODEL)
    parser.add_argument("--encode", type=Path, help=argparse.SUPPRESS)  # state.db: child
    parser.add_argument("--widened", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.encode:
        texts = embed_texts(args.encode)
        print(bare_encode_seconds(args.model, texts, widened=args.widened), len(texts))
        return
    if args.corpus is None:
        parser.error("the CORPUS directory or .tar.gz is required")

    with tempfile.TemporaryDirectory(prefix="ragd-bench-") as tmp:
        work = Path(tmp)
        root = args.corpus.resolve()
        if root.is_file():
            with tarfile.open(root) as archive:
                archive.extractall(work / "corpus", filter="data")
            root = work / "corpus"
        port = free_port()
        fulls: list[tuple[dict[str, object], float, int]] = []
        encodes: list[float] = []
        daemon_fulls: list[float] = []
        for round_ in range(FULL_ROUNDS):
            config, manifest = work / "config.toml", work / f"data{round_}" / "state.db"
            config.write_text(
                f'[daemon]\ndata_dir = "{manifest.parent}"\n'
                f'[http]\nlisten = "127.0.0.1:{port}"\n'
                f'[embedding]\nmodel = "{args.model.resolve()}"\n'
                # The first stage's pipeline against its model; the second stage's cost is
                # bench/second_stage_index.py's.
                "[rerank]\nenabled = false\n"
                f'[[sources]]\nname = "bench"\ntype = "folder"\npath = "{root}"\n'
                'include = ["**/*.md"]\n'
            )
            fulls.append(run_index(config))
            encode_s, encoded = encode_in_child(args.model, manifest)
            encodes.append(encode_s)
            served = work / f"served{round_}.toml"
            served.write_text(config.read_text().replace(f"data{round_}", f"served{round_}"))
            daemon_fulls.append(daemon_scan_seconds(served, work / f"served{round_}.log"))
        widened_s, _ = encode_in_child(args.model, work / "data0" / "state.db", widened=True)
        walk_seconds(root)  # untimed: the dentry cache warm for both sides
        walks: list[float] = []
        noops: list[tuple[dict[str, object], float, int]] = []
        per_file: list[float] = []
        for _ in range(NOOP_ROUNDS):
            walk_s, entries = walk_seconds(root)
            walks.append(walk_s)
            noops.append(run_index(config))
            forget_listing_digests(manifest)  # of the last round, which config names
            per_file.append(cast(float, run_index(config)[0]["seconds"]))
        walk_s = statistics.median(walks)
        noop, noop_wall, noop_rss = sorted(noops, key=lambda run: cast(float, run[0]["seconds"]))[
            len(noops) // 2
        ]
        rescan_s = daemon_scan_seconds(config, work / "serve.log")

    full, full_wall, full_rss = fulls[0]
    chunks = full["chunks"]["embedded"] + full["chunks"]["reused"]  # type: ignore[index]
    files = sum(full["documents"].values())  # type: ignore[attr-defined]
    runs = [float(run[0]["seconds"]) for run in fulls]  # type: ignore[arg-type]
    full_s, encode_s = sum(runs) / len(runs), sum(encodes) / len(encodes)
    noop_s = float(noop["seconds"])  # type: ignore[arg-type]
    print(
        f"{datetime.now():%Y-%m-%d %H:%M}  {platform.machine()}, {os.cpu_count()} cores, ", end=""
    )
    print(f"Python {platform.python_version()}; corpus {args.corpus}")
    print()
    print("| step | ragd s | beside it | bare s | ratio | notes |")
    print("|---|---|---|---|---|---|")
    rounds = ratios(runs, encodes)
    print(
        f"| full index ({files} files, {chunks} chunks; mean of {FULL_ROUNDS}) | {full_s:.2f} "
        f"| model2vec encode of the {encoded} unique chunk texts (mean of {FULL_ROUNDS}, "
        f"alternating) | {encode_s:.2f} | {full_s / encode_s:.2f} | rounds: {rounds}; "
        f"{chunks / full_s:.0f} chunks/s; process wall {full_wall:.2f} s; peak RSS "
        f"{full_rss} MiB; embedded {full['chunks']['embedded']} |"  # type: ignore[index]
    )
    daemon_s = sum(daemon_fulls) / len(daemon_fulls)
    print(
        f"| full index in the daemon (mean of {FULL_ROUNDS}) | {daemon_s:.2f} | the same "
        f"encodes | {encode_s:.2f} | {daemon_s / encode_s:.2f} | start-up scan of `ragd serve` "
        f"on an empty data dir, model loaded and stores open: the pipeline alone; rounds: "
        f"{ratios(daemon_fulls, encodes)}; {chunks / daemon_s:.0f} chunks/s |"
    )
    print(
        f"| full index, beside the model as ragd loads it | {full_s:.2f} | the same encode "
        f"with the float16 table widened to float32 | {widened_s:.2f} | "
        f"{full_s / widened_s:.2f} | not the target's yardstick; shows what the model costs "
        "ragd |"
    )
    print(
        f"| no-op re-index (median of {NOOP_ROUNDS}) | {noop_s:.2f} | scandir + stat walk "
        f"({entries} files, median of {NOOP_ROUNDS}) | {walk_s:.2f} | {noop_s / walk_s:.2f} | "
        f"runs {', '.join(str(run[0]['seconds']) for run in noops)} s beside walks "
        f"{', '.join(f'{w:.3f}' for w in walks)} s; process wall {noop_wall:.2f} s; peak RSS "
        f"{noop_rss} MiB; embedded {noop['chunks']['embedded']} |"  # type: ignore[index]
    )
    per_file_s = statistics.median(per_file)
    print(
        f"| no-op re-index, listing digest forgotten (median of {NOOP_ROUNDS}) | "
        f"{per_file_s:.2f} | the same walks | {walk_s:.2f} | {per_file_s / walk_s:.2f} | "
        f"the per-file comparison, as after a watcher's writes; runs "
        f"{', '.join(f'{run:.3f}' for run in per_file)} s |"
    )
    print(
        f"| no-op daemon rescan | {rescan_s:.2f} | scandir + stat walk | {walk_s:.2f} | "
        f"{rescan_s / walk_s:.2f} | start-up scan of `ragd serve` on the up-to-date index |"
    )


if __name__ == "__main__":
    main()
