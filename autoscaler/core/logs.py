"""Logging set-up: plain text for people, one JSON object per line for log collectors.

Structured fields passed with `extra=` (namespace, workload, state, …) become JSON keys.
Neither format lets a control or bidi character through: a reason set with kubectl may hold
ESC, CR or U+202E, and a log line must not rewrite the terminal of whoever reads it (JSON
escapes them, being ASCII; the text format spells them out with `domain.text.escape`).
"""

from __future__ import annotations

import json
import logging
import sys
from datetime import UTC, datetime
from typing import Any

from autoscaler.domain.text import escape

_STANDARD = set(vars(logging.makeLogRecord({}))) | {"message", "asctime"}


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        payload: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, tz=UTC).isoformat(),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        payload.update({k: v for k, v in vars(record).items() if k not in _STANDARD})
        if record.exc_info:
            payload["exception"] = self.formatException(record.exc_info)
        return json.dumps(payload, default=str)  # ensure_ascii: no raw control or bidi


class TextFormatter(logging.Formatter):
    """Plain lines, with the message and any traceback escaped line by line."""

    def __init__(self) -> None:
        super().__init__("%(asctime)s %(levelname)s %(name)s: %(message)s")

    def formatMessage(self, record: logging.LogRecord) -> str:
        record.message = escape(record.message)
        return super().formatMessage(record)

    def formatException(self, ei: Any) -> str:
        return "\n".join(escape(line) for line in super().formatException(ei).split("\n"))


def configure_logging(*, format_name: str, level: str) -> logging.Logger:
    """Configure the `autoscaler` logger tree once, from the composition root."""
    handler = logging.StreamHandler(sys.stderr)
    if format_name == "json":
        handler.setFormatter(JsonFormatter())
    else:
        handler.setFormatter(TextFormatter())
    logger = logging.getLogger("autoscaler")
    logger.handlers[:] = [handler]
    logger.setLevel(level)
    logger.propagate = False
    return logger
