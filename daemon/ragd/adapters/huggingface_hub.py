"""huggingface_hub behind one adapter: fetching a model repository's files into the cache.

Owns the one call ragd makes to the hub on its own behalf (model2vec fetches the
first-stage model through its own loader): downloading the files of a second-stage model
by repository id, once, into huggingface_hub's cache, where later runs find them.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path


def download(repo_id: str, patterns: Sequence[str]) -> Path:
    """The local directory holding the repository's files that match `patterns`,
    downloaded on first use (the cache answers afterwards, also offline). Exceptions are
    huggingface_hub's, for the caller to report."""
    from huggingface_hub import snapshot_download

    return Path(snapshot_download(repo_id, allow_patterns=list(patterns)))
