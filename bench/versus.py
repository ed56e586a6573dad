"""This checkout's `ragd` beside another checkout's, in one run: full index, no-op re-index
and `ragd status`, each the whole process, alternating so both see the same machine.

Usage:
    git worktree add ../ragd-before <commit>
    python bench/versus.py ../ragd-before CORPUS [--rounds N] [--model DIR]

CORPUS is a directory or a .tar.gz to unpack (e.g. ../shared/corpora/tldr-pages.tar.gz).
Both sides run with this virtualenv's interpreter and libraries, each importing ragd from
its own `daemon/` directory. Per round, in alternating order: a full index into a fresh
data_dir, then NOOP no-op re-indexes, then STATUS runs of `ragd status` without a daemon.
Last, this checkout's `ragd serve` runs on its index and `ragd status` is timed beside it
(the CLI then asks the daemon). Medians and ratios (this / other) are printed.
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.integration.daemon import free_port, scan_finished, stop_daemon, wait_until  # noqa: E402

DEFAULT_MODEL = REPO.parent / "shared" / "models" / "minilm-l6-static-256"
NOOP = 3
STATUS = 2


def config_for(work: Path, corpus: Path, model: Path, port: int, tree: Path) -> Path:
    """A config for `tree`'s ragd; the second stage off where that ragd has one (both trees
    then do the same work)."""
    settings = tree / "daemon" / "ragd" / "config" / "settings.py"
    second = "[rerank]\nenabled = false\n\n" if "RerankConfig" in settings.read_text() else ""
    config = work / "config.toml"
    config.write_text(
        f'[daemon]\ndata_dir = "{work / "data"}"\n\n[http]\nlisten = "127.0.0.1:{port}"\n\n'
        f'[embedding]\nmodel = "{model}"\n\n{second}'
        f'[[sources]]\nname = "corpus"\ntype = "folder"\npath = "{corpus}"\ninclude = ["**/*.md"]\n'
    )
    return config


def timed(tree: Path, config: Path, *args: str) -> float:
    """Seconds the whole `ragd` process took (it must exit 0)."""
    env = dict(os.environ, HF_HUB_OFFLINE="1", PYTHONPATH=str(tree / "daemon"))
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "ragd", "--config", str(config), *args],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        check=False,
    )
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"{tree}: ragd {' '.join(args)} failed: {done.stderr.decode()[-2000:]}")
    return seconds


def unpacked(corpus: Path, work: Path) -> Path:
    if corpus.is_dir():
        return corpus
    with tarfile.open(corpus) as archive:
        archive.extractall(work / "corpus", filter="data")
    return work / "corpus"


def serve_and_time_status(tree: Path, config: Path, port: int, runs: int) -> list[float]:
    """`ragd status` while this tree's daemon serves the index."""
    env = dict(os.environ, HF_HUB_OFFLINE="1", PYTHONPATH=str(tree / "daemon"))
    daemon = subprocess.Popen(
        [sys.executable, "-m", "ragd", "--config", str(config), "serve"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_until(lambda: scan_finished(port), 300, interval=0.5)
        return [timed(tree, config, "status") for _ in range(runs)]
    finally:
        stop_daemon(daemon)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("other", type=Path, help="the other checkout (e.g. a git worktree)")
    parser.add_argument("corpus", type=Path)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--model", type=Path, default=DEFAULT_MODEL)
    parser.add_argument("--this", type=Path, default=REPO, help="this checkout (default: here)")
    args = parser.parse_args()
    trees = {"this": args.this.resolve(), "other": args.other.resolve()}
    print(
        f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"
    )
    print(f"this: {trees['this']}  other: {trees['other']}  corpus: {args.corpus}")
    times: dict[tuple[str, str], list[float]] = {}
    with tempfile.TemporaryDirectory(prefix="ragd-versus-") as scratch:
        work = Path(scratch)
        corpus = unpacked(args.corpus.resolve(), work)
        configs, port = {}, free_port()
        for side in trees:
            (work / side).mkdir()
            configs[side] = config_for(work / side, corpus, args.model.resolve(), port, trees[side])
        for round_ in range(args.rounds):
            order = list(trees) if round_ % 2 == 0 else list(trees)[::-1]
            for side in order:
                shutil.rmtree(work / side / "data", ignore_errors=True)
                full = timed(trees[side], configs[side], "index")
                times.setdefault(("full index", side), []).append(full)
                for _ in range(NOOP):
                    times.setdefault(("no-op index", side), []).append(
                        timed(trees[side], configs[side], "index")
                    )
                for _ in range(STATUS):
                    times.setdefault(("status, no daemon", side), []).append(
                        timed(trees[side], configs[side], "status")
                    )
            print(
                f"round {round_ + 1}: full "
                + ", ".join(f"{s} {times['full index', s][-1]:.2f} s" for s in order),
                flush=True,
            )
        served = serve_and_time_status(trees["this"], configs["this"], port, 5)
    print(f"\n{'':22}{'this':>10}{'other':>10}{'ratio':>8}   (medians, seconds)")
    for what in ("full index", "no-op index", "status, no daemon"):
        this, other = (statistics.median(times[what, s]) for s in ("this", "other"))
        print(f"{what:22}{this:10.3f}{other:10.3f}{this / other:8.2f}")
        for side in ("this", "other"):
            print(f"  {side:6} runs: " + ", ".join(f"{t:.2f}" for t in times[what, side]))
    print(
        f"{'status, daemon serving':22}{statistics.median(served):10.3f}"
        f"   runs: " + ", ".join(f"{t:.2f}" for t in served)
    )


if __name__ == "__main__":
    main()
