"""The model2vec adapter's two fast paths, each against the public path it stands for, A
against B in one run: tokenizing by table (ragd.adapters.tokenizers) against model2vec's
own `encode`, and building a local model from its files against `from_pretrained`.

Usage:
    python bench/model_fast_paths.py CORPUS [--model DIR] [--rounds 3]

CORPUS is a directory or a .tar.gz to unpack (e.g. ../shared/corpora/tldr-pages.tar.gz).
Each round, alternating which goes first, times:

- the whole `ragd index` process into a fresh data dir (first stage, the second off), as
  shipped (texts tokenized by table), and with the table encoder off in every process of
  the pass (the command's and its index workers'), so model2vec's `encode` embeds: a
  `sitecustomize` module this bench puts first on PYTHONPATH for that run makes
  `TableMeanEncoder.fits` false;
- in this process, the unique texts that pass embedded, in batches of 1,024, through
  ragd's model adapter both ways (model loaded, the first batch untimed);
- a fresh process that loads the model (interpreter start-up included), as each index
  worker and each `ragd query` does: built from its files, and with that path patched
  off in the child, so `StaticModel.from_pretrained` loads it (reading the model card
  through huggingface_hub).

Prints every round and the medians with their ratios. It checks that both ways give the
same vectors for the first 2,000 texts; it asserts nothing about timings.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO / "daemon"), str(REPO)]

from ragd.adapters.model2vec import LoadedModel, load_model  # noqa: E402
from ragd.indexing.chunking import labelled_text  # noqa: E402
from ragd.stores.manifest_reader import ManifestReader  # noqa: E402

DEFAULT_MODEL = REPO.parent / "shared" / "models" / "minilm-l6-static-256"
BATCH_SIZE = 1024  # [embedding] batch_size default
TABLE_OFF = (
    "from ragd.adapters import model2vec\n"
    "model2vec.TableMeanEncoder.fits = staticmethod(lambda static: False)\n"
)
LOAD = (
    "import sys\n"
    "from ragd.adapters import model2vec\n"
    "if sys.argv[2] == 'from_pretrained':\n"
    "    model2vec._from_directory = lambda directory: None\n"
    "model2vec.load_model(sys.argv[1], is_local=True)\n"
)


def run_index(config: Path, extra_path: Path | None) -> float:
    """Wall seconds of `ragd index --json` (`extra_path` first on PYTHONPATH)."""
    paths = [str(REPO / "daemon"), str(REPO)]
    if extra_path is not None:
        paths.insert(0, str(extra_path))
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "ragd", "--config", str(config), "index", "--json"],
        capture_output=True,
        check=True,
        env=dict(os.environ, HF_HUB_OFFLINE="1", PYTHONPATH=os.pathsep.join(paths)),
    )
    seconds = time.perf_counter() - started
    assert json.loads(done.stdout)["chunks"]["embedded"] > 0
    return seconds


def load_seconds(model: Path, way: str) -> float:
    """Wall seconds of a fresh process that loads the model `way`."""
    started = time.perf_counter()
    subprocess.run(
        [sys.executable, "-c", LOAD, str(model), way],
        check=True,
        env=dict(os.environ, HF_HUB_OFFLINE="1", PYTHONPATH=f"{REPO / 'daemon'}"),
    )
    return time.perf_counter() - started


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


def encode_seconds(model: LoadedModel, texts: list[str]) -> float:
    model.encode(texts[:BATCH_SIZE], BATCH_SIZE)  # warm
    started = time.perf_counter()
    for start in range(0, len(texts), BATCH_SIZE):
        model.encode(texts[start : start + BATCH_SIZE], BATCH_SIZE)
    return time.perf_counter() - started


def write_config(work: Path, root: Path, data_dir: Path, model: Path) -> Path:
    config = work / f"{data_dir.name}.toml"
    config.write_text(
        f'[daemon]\ndata_dir = "{data_dir}"\n'
        f'[embedding]\nmodel = "{model.resolve()}"\n'
        "[rerank]\nenabled = false\n"
        f'[[sources]]\nname = "bench"\ntype = "folder"\npath = "{root}"\n'
        'include = ["**/*.md"]\n'
    )
    return config


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("corpus", type=Path)
    parser.add_argument("--model", type=Path, default=DEFAULT_MODEL)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    print(
        f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"
    )
    import numpy as np

    by_table = load_model(str(args.model), is_local=True)
    by_model2vec = load_model(str(args.model), is_local=True, fast=False)
    assert (by_table.path, by_model2vec.path) == ("table", "encode")
    index: dict[str, list[float]] = {"table": [], "model2vec": []}
    encode: dict[str, list[float]] = {"table": [], "model2vec": []}
    load: dict[str, list[float]] = {"files": [], "from_pretrained": []}
    with tempfile.TemporaryDirectory(prefix="ragd-table-tokenizer-") as tmp:
        work = Path(tmp)
        root = args.corpus.resolve()
        if root.is_file():
            with tarfile.open(root) as archive:
                archive.extractall(work / "corpus", filter="data")
            root = work / "corpus"
        table_off = work / "table-off"
        table_off.mkdir()
        (table_off / "sitecustomize.py").write_text(TABLE_OFF)
        texts: list[str] = []
        for n in range(args.rounds):
            sides = [("table", None), ("model2vec", table_off)]
            for name, extra_path in sides if n % 2 == 0 else reversed(sides):
                data_dir = work / f"{name}-{n}"
                config = write_config(work, root, data_dir, args.model)
                index[name].append(run_index(config, extra_path))
                if not texts:
                    texts = embed_texts(data_dir / "state.db")
                    sample = texts[:2000]
                    same = np.array_equal(
                        by_table.encode(sample, BATCH_SIZE),
                        by_model2vec.encode(sample, BATCH_SIZE),
                    )
                    assert same, "the table encoder's vectors differ from model2vec's"
            models = [("table", by_table), ("model2vec", by_model2vec)]
            for name, model in models if n % 2 == 0 else reversed(models):
                encode[name].append(encode_seconds(model, texts))
            ways = ["files", "from_pretrained"]
            for _ in range(3):
                for way in ways if n % 2 == 0 else reversed(ways):
                    load[way].append(load_seconds(args.model, way))
            print(
                f"round {n + 1}: ragd index {index['table'][-1]:.2f} s by table, "
                f"{index['model2vec'][-1]:.2f} s by model2vec; encode of {len(texts)} texts "
                f"{encode['table'][-1]:.2f} s by table, {encode['model2vec'][-1]:.2f} s "
                f"by model2vec; model loaded in {statistics.median(load['files'][-3:]):.2f} s "
                f"from its files, {statistics.median(load['from_pretrained'][-3:]):.2f} s by "
                "from_pretrained (medians of 3)"
            )
    print()
    print(f"corpus: {args.corpus.name}; {len(texts)} unique texts embedded; first stage")
    print("| figure (median) | fast path, s | public path, s | ratio |")
    print("|---|---|---|---|")
    figures = [
        ("whole `ragd index` process, by table / model2vec's encode", index, "table"),
        ("encode of the texts, by table / model2vec's encode", encode, "table"),
        ("a fresh process loading the model, from its files / from_pretrained", load, "files"),
    ]
    for figure, runs, fast_name in figures:
        (slow_name,) = set(runs) - {fast_name}
        fast, slow = statistics.median(runs[fast_name]), statistics.median(runs[slow_name])
        print(f"| {figure} | {fast:.2f} | {slow:.2f} | {slow / fast:.2f}x |")


if __name__ == "__main__":
    main()
