"""Arbitrary Unicode through every intake, into the stores: each webhook delivery is either
refused with a 4xx where it enters, or indexed, and every file of UTF-8 text is indexed.
Nothing is acknowledged and then lost.

Each CMS's sender (tests/cms_deliveries.py) builds and signs the delivery as that CMS
does, with a title and body drawn from every code point (lone surrogates, which
JavaScript's JSON.stringify writes as `\\ud800` escapes, noncharacters, NUL, bidirectional
marks and line separators weighted in); the intake answers it as `ragd serve` does, and
the daemon's writer (tests/writer_harness.py) applies what was queued, embedding with the
real first-stage model.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ragd.embedding.static import Model2VecEmbedder
from ragd.indexing.chunking import ChunkSettings
from ragd.indexing.indexer import Indexer
from ragd.indexing.pipeline import Pipeline, manifest_keyword_rows
from ragd.service.daemon.intake import WebhookIntake
from ragd.sources.cms.formats import WebhookFormat
from ragd.sources.cms.native import NativeFormat
from ragd.sources.folders import FolderSource
from ragd.sources.webhooks import WebhookAuth
from ragd.stores.data_dir import DataDir, WriterStores
from tests.cms_deliveries import SENDERS, Entry, Native, Sender
from tests.conftest import MODEL_DIR
from tests.test_cms_formats import make_format, received
from tests.writer_harness import WriterHarness

ODD = st.sampled_from(
    [
        "\x00",  # NUL
        "\ud800",  # lone high surrogate
        "\udfff",  # lone low surrogate
        "\ufffe",  # noncharacters
        "\uffff",
        "\U0010ffff",
        "\u202e",  # right-to-left override
        "\u200f",  # right-to-left mark
        "\u2028",  # line separator
        "\ufeff",  # byte-order mark
        "\x1b",
        "\r",
    ]
)
CHARACTER = st.one_of(st.characters(codec=None, exclude_categories=()), ODD)
# st.text() leaves surrogates out; a list of characters keeps them.
TEXT = st.lists(CHARACTER, max_size=80).map("".join)
SURROGATE = re.compile("[\ud800-\udfff]")


def lone_surrogate(text: str) -> bool:
    """Whether `text` holds a surrogate that is not half of a pair (as JavaScript, whose
    strings are UTF-16, sees it: "\\ud800\\udc00" is one character to it, U+10000)."""
    try:
        text.encode("utf-16-le", "surrogatepass").decode("utf-16-le")
    except UnicodeDecodeError:
        return True
    return False


_ids = itertools.count()


def cms_format(sender: Sender) -> WebhookFormat:
    if isinstance(sender, Native):
        return NativeFormat(
            WebhookAuth.from_secret_text("standard-webhooks", sender.secret.decode())
        )
    return make_format(sender.name)


@pytest.fixture(scope="module")
def writer(tmp_path_factory: pytest.TempPathFactory) -> Iterator[WriterHarness]:
    harness = WriterHarness(
        tmp_path_factory.mktemp("intake"),
        embedder=Model2VecEmbedder(str(MODEL_DIR), is_local=True),
        sources=frozenset(s.name for s in SENDERS),
    )
    yield harness
    harness.close()


@pytest.mark.parametrize("sender", SENDERS, ids=lambda s: s.name)
@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(title=TEXT, text=TEXT)
def test_every_delivery_is_refused_at_the_door_or_indexed(
    writer: WriterHarness, sender: Sender, title: str, text: str
) -> None:
    entry = Entry(f"post-{next(_ids)}", title, text)
    intake = WebhookIntake({sender.name: cms_format(sender)}, max_body_bytes=1 << 20)

    outcome, (status, body) = intake.accept(
        writer.queue, sender.name, received(sender.publish(entry))
    )

    if lone_surrogate(title) or lone_surrogate(text):
        assert status == 400, body
        assert "lone surrogate" in body["error"]
        return
    assert (status, outcome) == (202, "queued"), body
    writer.run_until_idle()
    record = writer.document(sender.key(entry), source=sender.name)
    assert record is not None
    assert (record.status, record.error) == ("indexed", None)


def test_a_lone_surrogate_is_refused_naming_where_it_is(writer: WriterHarness) -> None:
    sender = Native()
    intake = WebhookIntake({sender.name: cms_format(sender)}, max_body_bytes=1 << 20)
    sent = sender.publish(Entry("post-x", "Fine title", "Half a pair: \udc00."))

    _, (status, body) = intake.accept(writer.queue, sender.name, received(sent))

    assert status == 400
    assert body["error"].startswith("the body holds a lone surrogate at $.content")


@pytest.fixture(scope="module")
def folder_indexer(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Indexer]]:
    workdir = tmp_path_factory.mktemp("files")
    root = workdir / "docs"
    root.mkdir()
    stores = WriterStores(DataDir(workdir / "data"), keyword_rows=manifest_keyword_rows)
    embedder = Model2VecEmbedder(str(MODEL_DIR), is_local=True)
    folder = FolderSource("docs", root, ("**/*",))
    yield (
        root,
        Indexer(stores, [folder], Pipeline(ChunkSettings(900, 120), embedder.identity), embedder),
    )
    stores.close()


@pytest.mark.parametrize("suffix", [".md", ".html", ".txt"])
@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(title=TEXT, text=TEXT)
def test_every_utf8_file_of_text_is_indexed(
    folder_indexer: tuple[Path, Indexer], suffix: str, title: str, text: str
) -> None:
    root, indexer = folder_indexer
    # A file holds what UTF-8 can encode; a NUL in its first bytes marks it binary (failed
    # by design, README), so none is written here.
    body = f"# {title}\n\n{text}\n" if suffix == ".md" else f"<h1>{title}</h1><p>{text}</p>"
    body = SURROGATE.sub("\ufffd", body).replace("\x00", " ")
    key = f"page-{next(_ids)}{suffix}"
    (root / key).write_text(body, encoding="utf-8")

    indexer.sync("docs", keys=[key])

    record = indexer.manifest.document(f"docs:{key}")
    assert record is not None
    assert (record.status, record.error) == ("indexed", None)
