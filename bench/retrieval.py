"""Retrieval quality on both gold sets, one configuration, with the second stage: the
table of issue 25's targets.

Usage:
    python bench/retrieval.py [--work DIR] [--model DIR] [--rerank-model DIR] [--check]

Indexes fastapi-docs (its whole tree) and the English tldr pages (the unpacked `tldr/`
folder with include = ["pages/**/*.md"], as an operator indexes it for English
questions), both stages filled by `ragd index` (about 6 minutes on 2 cores, once: with
--work the indexes are kept and reused), then runs `ragd eval --mode all` on each gold
set and prints, per set: recall@1 / recall@5 / MRR@10 per mode, MRR@10 per question kind,
and abstention (negatives abstained, answerable abstained).

With --check it then compares every figure of tests/retrieval_baseline.json (the
second-stage ones included, which CI's tests/integration/test_eval.py leaves to this
bench) and that identifier and jargon questions lose no recall@1 or recall@5 to the
second stage; it lists what fell short and exits 1 if anything did.
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


def shortfalls(reports: dict[str, dict[str, Any]]) -> list[str]:
    """Every figure below tests/retrieval_baseline.json, and every loss of identifier or
    jargon questions to the second stage."""
    baseline = json.loads((REPO / "tests" / "retrieval_baseline.json").read_text())
    short = []
    for name, expected in baseline.items():
        modes = reports[name]["modes"]
        for mode, figures in expected["modes"].items():
            for metric, floor in figures.items():
                if (got := modes[mode]["overall"][metric]) < floor:
                    short.append(f"{name} {mode} {metric}: {got:.4f} < {floor}")
        for mode, limits in expected["abstention"].items():
            abstained = modes[mode]["abstention"]["abstained"]
            wrongly = modes[mode]["overall"]["wrongly_abstained"]
            if abstained < limits["negatives_abstained"]:
                short.append(f"{name} {mode} negatives abstained: {abstained:.4f}")
            if wrongly > limits["answerable_abstained"]:
                short.append(f"{name} {mode} answerable abstained: {wrongly:.4f}")
        if "hybrid+rerank" in modes:
            for kind in ("identifier", "jargon"):
                for metric in ("recall@1", "recall@5"):
                    first = modes["hybrid"]["by_kind"][kind][metric]
                    second = modes["hybrid+rerank"]["by_kind"][kind][metric]
                    if second < first:
                        short.append(f"{name} {kind} {metric}: {second:.4f} reranked < {first:.4f}")
    return short


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--work", type=Path, help="Keep the corpora and indexes here.")
    parser.add_argument("--model", type=Path, default=DEFAULT_MODEL)
    parser.add_argument("--rerank-model", type=Path, default=DEFAULT_RERANK)
    parser.add_argument(
        "--check", action="store_true", help="Exit 1 if a figure is below the baseline."
    )
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
    if args.check:
        short = shortfalls(reports)
        print("\nbaseline: " + ("; ".join(short) if short else "every figure holds"))
        if short:
            sys.exit(1)


if __name__ == "__main__":
    main()
