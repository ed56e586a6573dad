"""Re-embedding after a model change: `ragd reembed` on this machine and on a local Ray.

Usage:
    python bench/reembed.py [--files N]

Indexes fastapi-docs (or its first N Markdown files) with the first-stage test model and
the second stage off, then changes the configuration as an operator would: another
first-stage model (the test model with every token's vector re-weighted, as in
tests/integration/test_reembed.py) and the second stage on. Two copies of that data dir
are then brought to the new models, one by `ragd reembed` (local), one by
`ragd reembed --ray --ray-cpus 2` (Ray Data on a local Ray, the texts as Lance datasets).
Prints, for each, the texts embedded per stage, the wall time of the command and the
texts per second, then checks that `ragd index` afterwards embeds nothing. On the same
2 cores Ray adds its start-up and one actor per spare CPU: the point is the path, not
the speed.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.conftest import FASTAPI_DOCS, RERANK_MODEL_DIR, write_config  # noqa: E402
from tests.integration.test_reembed import other_model  # noqa: E402


def _ragd(config: Path, *args: str) -> tuple[dict[str, object], float]:
    started = time.perf_counter()
    result = subprocess.run(
        [sys.executable, "-m", "ragd", "--config", str(config), *args, "--json"],
        capture_output=True,
        text=True,
        env=dict(os.environ, HF_HUB_OFFLINE="1"),
        check=False,
    )
    seconds = time.perf_counter() - started
    if result.returncode != 0:
        raise SystemExit(f"ragd {' '.join(args)} failed:\n{result.stderr[-3000:]}")
    report: dict[str, object] = json.loads(result.stdout)
    return report, seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", type=int, default=0, help="Only the first N files (0: all).")
    args = parser.parse_args()
    print(
        f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"
    )
    with tempfile.TemporaryDirectory(prefix="ragd-reembed-") as tmp:
        work = Path(tmp)
        docs = work / "docs"
        pages = sorted((FASTAPI_DOCS / "docs").rglob("*.md"))
        for page in pages[: args.files or None]:
            target = docs / page.relative_to(FASTAPI_DOCS / "docs")
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(page, target)
        base = work / "base"
        base.mkdir()
        indexed, _ = _ragd(write_config(base, docs), "index")
        chunks = indexed["chunks"]
        print(f"corpus: fastapi-docs, {len(list(docs.rglob('*.md')))} files, {chunks}")
        model_b = other_model(work / "model-b")
        for label, extra in (("local", ()), ("ray", ("--ray", "--ray-cpus", "2"))):
            run = work / label
            shutil.copytree(base / "data", run / "data")
            config = write_config(run, docs, model=model_b, rerank=RERANK_MODEL_DIR)
            report, seconds = _ragd(config, "reembed", *extra)
            texts = report["texts"]
            assert isinstance(texts, dict)
            total = int(texts["first_stage"]) + int(texts["second_stage"])
            print(
                f"reembed {label:5}: {texts['first_stage']} first-stage and "
                f"{texts['second_stage']} second-stage texts in {seconds:.1f} s "
                f"({total / seconds:.1f} texts/s, the command's wall time); "
                f"{report['documents_switched']} documents switched"
            )
            after, _ = _ragd(config, "index")
            print(f"  then ragd index embeds {after['chunks']} and {after['second_stage']}")


if __name__ == "__main__":
    main()
