"""CMS deliveries over HTTP: a delivery's way from request to the durable job queue.

Owns `WebhookIntake.accept`: find the source's format (ragd.sources.cms), authenticate
the delivery, parse it, bound the work it implies, and queue the entries it changes in one
transaction, once per delivery id, answering with the HTTP status and a JSON body. No
answer is ever 410 (Ghost deletes a webhook that gets one). The writer applies queued
deliveries later (ragd.service.daemon.writer), fetching back those that came without content.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from datetime import timedelta
from typing import Any

from ragd.service.logs import get_logger
from ragd.sources.cms.formats import WebhookFormat, WebhookRequest
from ragd.sources.deliveries import Delivery, job_payload
from ragd.sources.webhooks import WebhookRejected
from ragd.stores.jobs import JobQueue

# A delivery id that is a hash of the body (the sender sent none) stands for "this
# content, just now": a repeat within this long is a retry or a replay, a later one a
# new change back to the same content.
REPEAT_AFTER = timedelta(minutes=10)
SHOWN_NAME_CHARS = 64
# One body fans out to many entries in some formats (a Directus bulk update names up to
# thousands of keys and carries one payload for all of them), so the body limit alone
# bounds nothing: 300 keys x a 99 KB body became 38,704 chunks. A delivery may therefore
# change at most this many entries (the largest page the Directus app lists, so the largest
# bulk edit made there; deletes and thin upserts count too, as each is a job and a thin
# one a fetch), and carry at most as much text, content and titles over all its entries,
# as one body may hold: [http] max_body_bytes, in characters (a character of a JSON
# string takes at least one byte, so a delivery of one entry is never refused for it;
# only fan-out, or rich text that grows as Markdown, can pass it).
MAX_DELIVERY_ENTRIES = 1000

log = get_logger("ragd.service.daemon.intake")

Answer = tuple[str, tuple[int, dict[str, Any]]]


class WebhookIntake:
    """The webhook sources of a config, each with its format."""

    def __init__(self, formats: Mapping[str, WebhookFormat], *, max_body_bytes: int) -> None:
        self.formats = dict(formats)
        self.max_text_chars = max_body_bytes  # see MAX_DELIVERY_ENTRIES

    def knows(self, source: str) -> bool:
        """Whether `source` is a configured webhook source."""
        return source in self.formats

    def accept(self, queue: JobQueue, source: str, request: WebhookRequest) -> Answer:
        """Authenticate, validate and durably queue one delivery on `queue`:
        (outcome, (HTTP status, JSON body)); the outcome labels the delivery metric."""
        fmt = self.formats.get(source)
        if fmt is None:
            shown = source[:SHOWN_NAME_CHARS]
            return "unknown_source", (404, {"error": f"unknown webhook source '{shown}'"})
        try:
            delivery_id = fmt.authenticate(request, now=time.time())
        except WebhookRejected as exc:
            return "unauthorized", (exc.status, {"error": exc.message})
        except Exception as exc:  # a checker's bug must not let anything through
            log.exception("webhook_unauthenticated", source=source, error=type(exc).__name__)
            message = (
                f"the delivery could not be authenticated (internal error: {type(exc).__name__})"
            )
            return "unauthorized", (401, {"error": message})
        try:
            parsed = fmt.parse(request)
        except WebhookRejected as exc:
            return "malformed", (exc.status, {"error": exc.message})
        except Exception as exc:  # a reader's bug: the sender gets a 400, the log the trace
            log.exception("webhook_unreadable", source=source, error=type(exc).__name__)
            message = f"the delivery could not be read (internal error: {type(exc).__name__})"
            return "malformed", (400, {"error": message})
        if parsed.ignored is not None:
            return "ignored", (202, {"status": "ignored", "reason": parsed.ignored})
        too_much = implied_work_problem(parsed.deliveries, self.max_text_chars)
        if too_much is not None:
            return "too_large", (413, {"error": too_much})
        thin = [d for d in parsed.deliveries if d.event == "upsert" and d.content is None]
        if thin and not fmt.fetches_thin_entries:
            message = "an upsert without content needs a way to fetch it (fetch_url or api_url)"
            return "malformed", (400, {"error": message})
        entries = [(d.entry_id, job_payload(d), d.version()) for d in parsed.deliveries]
        repeat_after = REPEAT_AFTER if "sha256:" in delivery_id else None  # a body hash
        queued = queue.accept_delivery(source, delivery_id, entries, repeat_after=repeat_after)
        outcome = "queued" if queued else "duplicate"
        return outcome, (202, {"status": outcome, "delivery_id": delivery_id})


def implied_work_problem(deliveries: Sequence[Delivery], max_text_chars: int) -> str | None:
    """Why a delivery implies more work than one delivery may (see MAX_DELIVERY_ENTRIES),
    naming the limit; None when it is within both limits."""
    if len(deliveries) > MAX_DELIVERY_ENTRIES:
        return (
            f"the delivery changes {len(deliveries)} entries; "
            f"the limit is {MAX_DELIVERY_ENTRIES} per delivery"
        )
    chars = sum(len(d.content or "") + len(d.title or "") for d in deliveries)
    if chars > max_text_chars:
        return (
            f"the delivery carries {chars} characters of text over {len(deliveries)} entries; "
            f"the limit is {max_text_chars} per delivery ([http] max_body_bytes)"
        )
    return None
