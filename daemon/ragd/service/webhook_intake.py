"""CMS deliveries over HTTP: each webhook source's credentials, and a delivery's way from
request body to the durable job queue.

Owns reading a webhook source's secret and bearer token (once, at start; never logged),
its entry fetcher, and `WebhookIntake.accept`: authenticate, parse, check and queue one
delivery, answering with the HTTP status and body. The writer applies queued deliveries
later (ragd.service.writer); signature schemes are `ragd.sources.webhooks`,
the delivery format `ragd.sources.deliveries`.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterable, Mapping
from typing import Any

from ragd.config import SourceConfig, WebhookSourceConfig
from ragd.errors import ConfigError
from ragd.sources.deliveries import parse_delivery
from ragd.sources.fetch import EntryFetcher
from ragd.sources.webhooks import WebhookAuth, WebhookRejected, authenticate
from ragd.stores.jobs import JobQueue


def webhook_auth(source: WebhookSourceConfig) -> WebhookAuth:
    """Read a webhook source's secret and bearer token (once, at start; never logged)."""
    key = f"sources.{source.name}"
    secret: str | None = None
    if source.secret_env:
        secret = os.environ.get(source.secret_env)
        if not secret:
            raise ConfigError(
                f"{key}.secret_env: environment variable {source.secret_env} is not set or empty"
            )
    elif source.secret_file is not None:
        try:
            secret = source.secret_file.read_text()
        except OSError as exc:
            raise ConfigError(
                f"{key}.secret_file: cannot read {source.secret_file}: {exc.strerror}"
            ) from exc
    token = None
    if source.bearer_token_env:
        token = os.environ.get(source.bearer_token_env)
        if not token:
            raise ConfigError(
                f"{key}.bearer_token_env: environment variable {source.bearer_token_env} "
                "is not set or empty"
            )
    try:
        if source.insecure_no_signature:
            return WebhookAuth.from_secret_text("none", None, token)
        return WebhookAuth.from_secret_text(source.signature, secret, token)
    except ValueError as exc:  # the message never contains the secret
        raise ConfigError(f"{key}: {exc}") from None


def entry_fetcher(source: WebhookSourceConfig) -> EntryFetcher:
    """The fetcher for a webhook source with a fetch_url (header values read from env)."""
    assert source.fetch_url is not None
    headers = {name: os.environ.get(var, "") for name, var in source.fetch_headers_env.items()}
    return EntryFetcher(
        source.fetch_url,
        timeout=source.fetch_timeout.total_seconds(),
        max_bytes=source.fetch_max_bytes,
        headers=headers,
    )


class WebhookIntake:
    """The webhook sources of a config, with their credentials read and fetchers built."""

    def __init__(self, sources: Iterable[SourceConfig]) -> None:
        webhooks = [s for s in sources if isinstance(s, WebhookSourceConfig)]
        self.auth = {s.name: webhook_auth(s) for s in webhooks}
        self.fetchers = {s.name: entry_fetcher(s) for s in webhooks if s.fetch_url}

    def knows(self, source: str) -> bool:
        """Whether `source` is a configured webhook source."""
        return source in self.auth

    def accept(
        self, queue: JobQueue, source: str, headers: Mapping[str, str], body: bytes
    ) -> tuple[str, tuple[int, dict[str, Any]]]:
        """Authenticate, validate and durably queue one delivery on `queue`:
        (outcome, (HTTP status, JSON body)); the outcome labels the delivery metric."""
        auth = self.auth.get(source)
        if auth is None:
            return "unknown_source", (404, {"error": f"unknown webhook source '{source}'"})
        try:
            delivery_id = authenticate(auth, headers, body, now=time.time())
        except WebhookRejected as exc:
            return "unauthorized", (exc.status, {"error": exc.message})
        try:
            delivery = parse_delivery(body)
        except WebhookRejected as exc:
            return "malformed", (exc.status, {"error": exc.message})
        if delivery.event == "upsert" and delivery.content is None and source not in self.fetchers:
            message = "an upsert without content needs fetch_url on the source"
            return "malformed", (400, {"error": message})
        payload = json.dumps(
            {
                "event": delivery.event,
                "title": delivery.title,
                "url": delivery.url,
                "content": delivery.content,
                "content_type": delivery.content_type,
            }
        )
        queued = queue.accept_delivery(
            source, delivery_id, delivery.entry_id, payload, delivery.version()
        )
        outcome = "queued" if queued else "duplicate"
        return outcome, (202, {"status": outcome, "delivery_id": delivery_id})
