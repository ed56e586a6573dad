"""Random bodies and headers thrown at real webhook endpoints, one per format: no 5xx, no
crash, no change; and a flood of unknown source names leaves /metrics and the log bounded."""

from __future__ import annotations

import json
import secrets
import urllib.parse
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.cms_deliveries import SENDERS
from tests.integration.daemon import Served
from tests.integration.test_webhooks import SECRET_TEXT

HEADER_NAMES = st.sampled_from(
    [
        "webhook-id",
        "webhook-timestamp",
        "webhook-signature",
        "Authorization",
        "X-Hub-Signature-256",
        "X-Ghost-Signature",
        "X-Contentful-Topic",
        "X-Contentful-Signature",
        "X-Contentful-Timestamp",
        "sanity-webhook-signature",
        "idempotency-key",
        "Content-Type",
        "X-Anything",
    ]
)
HEADER_VALUES = st.text(st.characters(min_codepoint=0x20, max_codepoint=0x7E), max_size=200)
PAYLOADS = st.one_of(
    st.binary(max_size=2048),
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.text(max_size=50),
        lambda inner: (
            st.lists(inner, max_size=5) | st.dictionaries(st.text(max_size=10), inner, max_size=5)
        ),
        max_leaves=20,
    ).map(lambda value: json.dumps(value).encode()),
)


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    base = tmp_path_factory.mktemp("fuzz")
    root = base / "docs"
    root.mkdir()
    (root / "seed.md").write_text("# Seed\n\nA page.\n")
    formats = "".join(
        f'\n[[sources]]\nname = "{s.name}"\ntype = "webhook"\n{s.source_toml()}'
        for s in SENDERS
        if s.name != "ragd"
    )
    environ = {k: v for s in SENDERS for k, v in s.environ().items()}
    daemon = Served(
        base,
        root,
        env={"RAGD_TEST_WEBHOOK_SECRET": SECRET_TEXT, **environ},
        extra_sources='\n[[sources]]\nname = "cms"\ntype = "webhook"\n'
        'secret_env = "RAGD_TEST_WEBHOOK_SECRET"\n' + formats,
    )
    daemon.start().wait_ready()
    daemon.wait_scanned()
    yield daemon
    daemon.stop()


def _state(served: Served) -> tuple[object, ...]:
    status = served.status()
    return status["documents"], status["stores"]["manifest_chunks"], status["daemon"]["queue_depth"]


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    body=PAYLOADS,
    headers=st.dictionaries(HEADER_NAMES, HEADER_VALUES, max_size=6),
    source=st.sampled_from(
        ["cms", "docs", "nope", "c%2e%2e", *(s.name for s in SENDERS if s.name != "ragd")]
    ),
)
def test_random_deliveries_never_cause_a_5xx_or_a_change(
    served: Served, body: bytes, headers: dict[str, str], source: str
) -> None:
    before = _state(served)

    status, _ = served.post(f"/v1/webhooks/{source}", body, headers)

    assert status in (400, 401, 404, 413), status
    assert served.get("/healthz")["status"] == "ok"
    assert _state(served) == before


def test_2000_unknown_source_names_leave_metrics_within_1_percent_and_the_log_cut(
    served: Served,
) -> None:
    before = len(served.get_text("/metrics"))
    names = [secrets.token_hex(100) for _ in range(2000)]

    answers = {served.post(f"/v1/webhooks/{urllib.parse.quote(n)}", b"{}", {})[0] for n in names}

    after = len(served.get_text("/metrics"))
    assert answers == {404}
    assert abs(after - before) <= before / 100, (before, after)
    assert names[0][:64] in served.log_text() and names[0] not in served.log_text()
