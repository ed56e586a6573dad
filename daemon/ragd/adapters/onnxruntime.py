"""onnxruntime behind one adapter: a transformer sentence-embedding model on the CPU.

Owns every call into onnxruntime: finding the files of an exported sentence-transformers
model in a directory (the ONNX graph at `model.onnx` or `onnx/model.onnx`, `tokenizer.json`,
`sentence_bert_config.json` for the longest input, `1_Pooling/config.json` for the pooling),
opening an inference session with a set number of threads, and encoding texts: tokenize
(`ragd.adapters.tokenizers`), run the graph, pool the token vectors over the attention
mask. The vectors are not normalised; the caller does that.

Each text runs alone: with no padding, a short text costs only its own tokens, which on
2 cores measured faster than batches padded to their longest text, even sorted by length.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from ragd.adapters import allocator
from ragd.adapters.tokenizers import SentenceTokenizer

Matrix = npt.NDArray[np.float32]

# Where an exported graph may lie in a model directory, in order of preference.
GRAPH_FILES = ("model.onnx", "onnx/model.onnx")
# What a model directory must hold besides the graph, and what it may.
TOKENIZER_FILE = "tokenizer.json"
SENTENCE_CONFIG = "sentence_bert_config.json"
POOLING_CONFIG = "1_Pooling/config.json"
# sentence-transformers' default for a model that does not say.
DEFAULT_MAX_TOKENS = 256
POOLINGS = ("mean", "cls")


class ModelFilesError(Exception):
    """A directory does not hold a usable exported model; the message says what is missing."""


@dataclass(frozen=True)
class ModelFiles:
    """The files of one exported model and what its configuration says."""

    graph: Path
    tokenizer: Path
    max_tokens: int
    pooling: str

    @property
    def identity_files(self) -> tuple[Path, ...]:
        """The files whose bytes decide what the model computes."""
        directory = self.tokenizer.parent
        extra = [directory / SENTENCE_CONFIG, directory / POOLING_CONFIG]
        return (self.graph, self.tokenizer, *(p for p in extra if p.is_file()))


def model_files(directory: Path) -> ModelFiles:
    """The model in `directory`; ModelFilesError naming what is missing or unsupported."""
    graph = next((directory / name for name in GRAPH_FILES if (directory / name).is_file()), None)
    if graph is None:
        raise ModelFilesError(f"no {' or '.join(GRAPH_FILES)} in {directory}")
    tokenizer = directory / TOKENIZER_FILE
    if not tokenizer.is_file():
        raise ModelFilesError(f"no {TOKENIZER_FILE} in {directory}")
    max_tokens = int(_json(directory / SENTENCE_CONFIG).get("max_seq_length", DEFAULT_MAX_TOKENS))
    pooling_config = _json(directory / POOLING_CONFIG)
    if pooling_config.get("pooling_mode_cls_token") and not pooling_config.get(
        "pooling_mode_mean_tokens"
    ):
        pooling = "cls"
    elif pooling_config and not pooling_config.get("pooling_mode_mean_tokens", False):
        modes = sorted(k for k, v in pooling_config.items() if k.startswith("pooling_mode") and v)
        raise ModelFilesError(f"pooling {', '.join(modes) or 'none'} is not supported")
    else:
        pooling = "mean"
    return ModelFiles(graph, tokenizer, max(1, max_tokens), pooling)


def _json(path: Path) -> dict[str, Any]:
    if not path.is_file():
        return {}
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ModelFilesError(f"cannot read {path}: {exc}") from exc
    if not isinstance(value, dict):
        raise ModelFilesError(f"{path} is not a JSON object")
    return value


class SentenceEncoder:
    """An open inference session: texts in, pooled token vectors out."""

    def __init__(self, files: ModelFiles, *, threads: int) -> None:
        import onnxruntime  # type: ignore[import-untyped]  # ships no type hints

        options = onnxruntime.SessionOptions()
        # One thread runs the graph on the calling thread, so that thread's priority (a
        # background filler's niceness) is the graph's.
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        # Without onnxruntime's own arena a run's buffers go back to malloc, which a daemon
        # trims; with it they stay reserved at the longest input seen (same speed here).
        options.enable_cpu_mem_arena = False
        self._session = onnxruntime.InferenceSession(
            str(files.graph), options, providers=["CPUExecutionProvider"]
        )
        # Building the session (folding the int8 weights to float) frees about as much as
        # it keeps: give that back now rather than leave it in the heap.
        allocator.trim()
        self._tokenizer = SentenceTokenizer(str(files.tokenizer), max_tokens=files.max_tokens)
        self._inputs = {i.name for i in self._session.get_inputs()}
        missing = {"input_ids", "attention_mask"} - self._inputs
        if missing:
            raise ModelFilesError(f"the graph has no input {', '.join(sorted(missing))}")
        self._pooling = files.pooling
        shape = self._session.get_outputs()[0].shape
        width = shape[-1] if shape else None
        self.dim = width if isinstance(width, int) and width > 0 else len(self._encode_one("a"))

    def encode(self, texts: Sequence[str]) -> Matrix:
        """One pooled vector per text, float32, not normalised."""
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            out[row] = self._encode_one(text)
        return out

    def _encode_one(self, text: str) -> Matrix:
        ids, type_ids = self._tokenizer.encode(text)
        feed = {
            "input_ids": np.array([ids], dtype=np.int64),
            "attention_mask": np.ones((1, len(ids)), dtype=np.int64),
        }
        if "token_type_ids" in self._inputs:
            feed["token_type_ids"] = np.array([type_ids], dtype=np.int64)
        output = np.asarray(self._session.run(None, feed)[0], dtype=np.float32)
        if output.ndim == 2:  # a graph that pools by itself
            pooled: Matrix = output[0]
        elif self._pooling == "cls":
            pooled = output[0, 0]
        else:  # one text, no padding: every token is attended to
            pooled = output[0].mean(axis=0)
        return pooled
