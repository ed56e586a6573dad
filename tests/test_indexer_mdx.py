"""An MDX page through the write path: real stores on disk, a deterministic fake embedder."""

from __future__ import annotations

from pathlib import Path

from ragd.indexing.chunking import ChunkSettings
from ragd.indexing.indexer import Indexer
from ragd.indexing.pipeline import Pipeline, manifest_keyword_rows
from ragd.sources.folders import FolderSource
from ragd.stores.data_dir import DataDir, WriterStores
from tests.conftest import FakeEmbedder

PAGE = """---
title: Guide
---

import Tabs from '@theme/Tabs';
import TabItem from '@theme/TabItem';

## Install {#install}

<Tabs>
  <TabItem value="pip" label="pip">
    Run the installer and wait for the quokka to finish.
  </TabItem>
</Tabs>

## Configure {#configure}

{/* keep in step with config.toml */}
:::tip

Edit the settings file; every key is documented.

:::
"""


def index(root: Path, data: DataDir, embedder: FakeEmbedder) -> dict[str, dict[str, int]]:
    stores = WriterStores(data, keyword_rows=manifest_keyword_rows)
    try:
        folder = FolderSource("docs", root, ("**/*.mdx",))
        pipeline = Pipeline(ChunkSettings(900, 120), embedder.identity)
        report = Indexer(stores, [folder], pipeline, embedder).run().to_json()
        return {key: report[key] for key in ("documents", "chunks")}  # type: ignore[misc]
    finally:
        stores.close()


def test_editing_one_section_of_an_mdx_page_embeds_only_that_sections_chunk(
    tmp_path: Path, fake_embedder: FakeEmbedder
) -> None:
    root, data = tmp_path / "docs", DataDir(tmp_path / "data")
    root.mkdir()
    page = root / "guide.mdx"
    page.write_text(PAGE)
    first = index(root, data, fake_embedder)
    fake_embedder.texts.clear()
    page.write_text(PAGE.replace("every key is documented", "every key has a default"))

    report = index(root, data, fake_embedder)

    assert first["documents"]["added"] == 1 and first["chunks"]["embedded"] == 2
    assert report["documents"]["changed"] == 1
    assert report["chunks"]["embedded"] == 1
    assert report["chunks"]["reused"] == 1
    assert report["chunks"]["deleted"] == 1
    assert len(fake_embedder.texts) == 1
    assert fake_embedder.texts[0].startswith("Guide — Configure\n")
    assert "Tip:\nEdit the settings file; every key has a default." in fake_embedder.texts[0]
