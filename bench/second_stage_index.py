"""What the second stage costs a full index: the whole `ragd index` process with it and
without it, beside the bare model encoding the same texts.

Usage:
    python bench/second_stage_index.py [CORPUS] [--include GLOB] [--model DIR]
                                       [--rerank-model DIR]

CORPUS is a directory or a .tar.gz (default ../shared/corpora/fastapi-docs). In one run:

- `ragd index` into a fresh data dir with `[rerank] enabled = false`: the first stage alone;
- `ragd index` into another fresh data dir with the second stage on: both stages, the
  second filled before the command returns (its `second_stage.embedded` texts);
- the bare second-stage model: onnxruntime and the model's tokenizer, in a process of its
  own, encoding the same distinct texts one at a time on all cores, as ragd runs it.

Prints the seconds of each, the second stage's passages per second inside `ragd index`
(its extra seconds over the first-stage run) and alone, and their ratio.
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
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from ragd.indexing.chunking import labelled_text  # noqa: E402
from ragd.stores.manifest_reader import ManifestReader  # noqa: E402

SHARED = REPO.parent / "shared"
DEFAULT_CORPUS = SHARED / "corpora" / "fastapi-docs"
DEFAULT_MODEL = SHARED / "models" / "minilm-l6-static-256"
DEFAULT_RERANK = SHARED / "models" / "minilm-l6-v2-onnx-int8"


def config(work: Path, name: str, root: Path, include: str, model: Path, rerank: str) -> Path:
    path = work / f"{name}.toml"
    path.write_text(
        f'[daemon]\ndata_dir = "{work / name}"\n'
        f'[embedding]\nmodel = "{model.resolve()}"\n'
        f"[rerank]\n{rerank}\n"
        f'[[sources]]\nname = "bench"\ntype = "folder"\npath = "{root}"\n'
        f'include = ["{include}"]\n'
    )
    return path


def index(path: Path) -> tuple[dict[str, object], float]:
    """`ragd index --json` in a process of its own: its report and wall seconds."""
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "ragd", "--config", str(path), "index", "--json"],
        check=True,
        capture_output=True,
        text=True,
        env=dict(os.environ, HF_HUB_OFFLINE="1"),
    )
    report: dict[str, object] = json.loads(done.stdout)
    return report, time.perf_counter() - started


def bare_encode(model: Path, state: Path) -> tuple[float, int]:
    """Seconds for onnxruntime alone to encode the distinct texts ragd's second stage
    embedded (read from `state`), in this process: (seconds, texts)."""
    import numpy as np
    import onnxruntime  # type: ignore[import-untyped]
    from tokenizers import Tokenizer

    manifest = ManifestReader.open(state)
    try:
        texts: dict[str, str] = {}
        for doc in manifest.documents():
            for chunk in manifest.chunks_of(doc.doc_id):
                if chunk.second_key is not None:
                    text = labelled_text(doc.title, chunk.heading_path, chunk.text)
                    texts.setdefault(chunk.second_key, text)
    finally:
        manifest.close()
    tokenizer = Tokenizer.from_file(str(model / "tokenizer.json"))
    tokenizer.no_padding()
    tokenizer.enable_truncation(256)
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = os.cpu_count() or 1
    session = onnxruntime.InferenceSession(
        str(model / "model.onnx"), options, providers=["CPUExecutionProvider"]
    )
    started = time.perf_counter()
    for text in texts.values():
        encoding = tokenizer.encode(text)
        ids = np.array([encoding.ids], dtype=np.int64)
        feed = {
            "input_ids": ids,
            "attention_mask": np.ones_like(ids),
            "token_type_ids": np.zeros_like(ids),
        }
        session.run(None, feed)[0][0].mean(axis=0)
    return time.perf_counter() - started, len(texts)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("corpus", type=Path, nargs="?", default=DEFAULT_CORPUS)
    parser.add_argument("--include", default="**/*.md")
    parser.add_argument("--model", type=Path, default=DEFAULT_MODEL)
    parser.add_argument("--rerank-model", type=Path, default=DEFAULT_RERANK)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="ragd-second-stage-") as scratch:
        work = Path(scratch)
        root = args.corpus.resolve()
        if root.is_file():
            with tarfile.open(root) as archive:
                archive.extractall(work / "corpus", filter="data")
            root = next((work / "corpus").iterdir())
        rerank = f'model = "{args.rerank_model.resolve()}"'
        first, first_s = index(
            config(work, "first", root, args.include, args.model, "enabled = false")
        )
        both, both_s = index(config(work, "both", root, args.include, args.model, rerank))
        bare_s, texts = bare_encode(args.rerank_model, work / "both" / "state.db")

    second = both["second_stage"]
    assert isinstance(second, dict)
    chunks = first["chunks"]
    assert isinstance(chunks, dict)
    extra = both_s - first_s
    print(
        f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"
    )
    print(f"corpus: {args.corpus} ({args.include}); {chunks['embedded']} chunks")
    print()
    print("| run | seconds | second-stage texts | passages/s |")
    print("|---|---|---|---|")
    print(f"| `ragd index`, first stage only | {first_s:.1f} | — | — |")
    print(
        f"| `ragd index`, both stages | {both_s:.1f} | {second['embedded']} | "
        f"{second['embedded'] / extra:.1f} (over the {extra:.1f} s it adds) |"
    )
    print(
        f"| bare onnxruntime encode of the same texts | {bare_s:.1f} | {texts} | "
        f"{texts / bare_s:.1f} |"
    )
    print()
    print(f"ragd's second stage / the bare model: {extra / bare_s:.2f}")


if __name__ == "__main__":
    main()
