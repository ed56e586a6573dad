"""Logging for the daemon and the CLI: structlog events, JSON lines when not on a terminal.

Owns the one logging set-up. Library loggers (uvicorn, watchdog, ragd's own stdlib
loggers) go through the same renderer, so journald sees one format. Never log secrets:
events carry ids, paths, counts and reasons, not configuration values.
"""

from __future__ import annotations

import logging
import sys
from typing import Any, TextIO

import structlog


def configure_logging(
    log_format: str = "auto", level: str = "info", stream: TextIO | None = None
) -> None:
    """Send structlog and stdlib logging to `stream` (stderr), as JSON or console lines."""
    out = stream or sys.stderr
    as_json = log_format == "json" or (log_format == "auto" and not out.isatty())
    shared: list[Any] = [
        structlog.contextvars.merge_contextvars,
        structlog.stdlib.add_log_level,
        structlog.stdlib.add_logger_name,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
    ]
    renderer: Any = (
        structlog.processors.JSONRenderer()
        if as_json
        else structlog.dev.ConsoleRenderer(colors=False)
    )
    structlog.configure(
        processors=[*shared, structlog.stdlib.ProcessorFormatter.wrap_for_formatter],
        logger_factory=structlog.stdlib.LoggerFactory(),
        wrapper_class=structlog.stdlib.BoundLogger,
        cache_logger_on_first_use=True,
    )
    handler = logging.StreamHandler(out)
    handler.setFormatter(
        structlog.stdlib.ProcessorFormatter(
            foreign_pre_chain=shared,
            processors=[
                structlog.stdlib.ProcessorFormatter.remove_processors_meta,
                structlog.processors.format_exc_info,
                renderer,
            ],
        )
    )
    root = logging.getLogger()
    root.handlers = [handler]
    root.setLevel(level.upper())
    # Per-request access lines would drown the document events; errors still show.
    logging.getLogger("uvicorn.access").setLevel(logging.WARNING)
    logging.getLogger("apscheduler").setLevel(logging.WARNING)


def get_logger(name: str) -> Any:
    """A structlog logger bound to a module name."""
    return structlog.get_logger(name)
