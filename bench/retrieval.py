"""Retrieval quality on both gold sets, one configuration, with the second stage: the
table of issue 25's targets.

Usage:
    python bench/retrieval.py [--work DIR] [--model DIR] [--rerank-model DIR]

Indexes fastapi-docs (its whole tree) and the English tldr pages (the unpacked `tldr/`
folder with include = ["pages/**/*.md"], as an operator indexes it for English
questions), both stages filled by `ragd index` (about 6 minutes on 2 cores, once: with
--work the indexes are kept and reused), then runs `ragd eval --mode all` on each gold
set and prints, per set: recall@1 / recall@5 / MRR@10 per mode, MRR@10 per question kind,
and abstention (negatives abstained, answerable abstained).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"
DEFAULT_MODEL = SHARED / "models" / "minilm-l6-static-256"
DEFAULT_RERANK = SHARED / "models" / "minilm-l6-v2-onnx-int8"
SETS = {
    "fastapi-docs": (SHARED / "corpora" / "fastapi-docs", "**/*.md"),
    "tldr-pages": (SHARED / "corpora" / "tldr-pages.tar.gz", "pages/**/*.md"),
}
MODES = ("bm25", "vector", "hybrid", "hybrid+rerank")
KINDS = ("paraphrase", "identifier", "jargon")


def ragd(config: Path, *args: str) -> Any:
    done = subprocess.run(
        [sys.executable, "-m", "ragd", "--config", str(config), *args, "--json"],
        check=True,
        capture_output=True,
        text=True,
        env=dict(os.environ, HF_HUB_OFFLINE="1"),
    )
    return json.loads(done.stdout)


def prepared(name: str, work: Path, model: Path, rerank: Path) -> Path:
    """The set's config under `work`, its index brought up to date."""
    corpus, include = SETS[name]
    root = corpus
    if corpus.is_file():
        root = work / name / "tldr"
        if not root.exists():
            with tarfile.open(corpus) as archive:
                archive.extractall(work / name, filter="data")
    config = work / name / "config.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(
        f'[daemon]\ndata_dir = "{work / name / "data"}"\n'
        f'[embedding]\nmodel = "{model.resolve()}"\n'
        f'[rerank]\nmodel = "{rerank.resolve()}"\n'
        f'[[sources]]\nname = "{name}"\ntype = "folder"\npath = "{root.resolve()}"\n'
        f'include = ["{include}"]\n'
    )
    report = ragd(config, "index")
    print(f"{name}: ragd index {report['seconds']:.1f} s, {report['second_stage']}", flush=True)
    return config


def table(name: str, report: dict[str, Any]) -> None:
    modes = report["modes"]
    print(f"\n{name} ({modes['hybrid']['overall']['questions']} answerable questions)\n")
    print(
        "| mode | recall@1 | recall@5 | MRR@10 | "
        + " | ".join(f"{k} MRR" for k in KINDS)
        + " | negatives abstained | answerable abstained |"
    )
    print("|---" * (6 + len(KINDS)) + "|")
    for mode in MODES:
        if mode not in modes:
            continue
        m, by_kind = modes[mode]["overall"], modes[mode]["by_kind"]
        kinds = " | ".join(f"{by_kind[k]['mrr@10']:.3f}" for k in KINDS)
        abstained = modes[mode]["abstention"]["abstained"]
        print(
            f"| {mode} | {m['recall@1']:.3f} | {m['recall@5']:.3f} | {m['mrr@10']:.3f} | "
            f"{kinds} | {abstained:.0%} | {m['wrongly_abstained']:.1%} |"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--work", type=Path, help="Keep the corpora and indexes here.")
    parser.add_argument("--model", type=Path, default=DEFAULT_MODEL)
    parser.add_argument("--rerank-model", type=Path, default=DEFAULT_RERANK)
    args = parser.parse_args()
    scratch = None if args.work else tempfile.TemporaryDirectory(prefix="ragd-retrieval-")
    work = args.work.resolve() if args.work else Path(scratch.name)  # type: ignore[union-attr]
    print(
        f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"
    )
    reports = {}
    for name in SETS:
        config = prepared(name, work, args.model, args.rerank_model)
        gold = SHARED / "eval" / f"{name}.jsonl"
        reports[name] = ragd(config, "eval", str(gold), "--mode", "all")
    for name, report in reports.items():
        table(name, report)
    if scratch is not None:
        scratch.cleanup()


if __name__ == "__main__":
    main()
