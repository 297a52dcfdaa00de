"""Where the demo serves, as the composition root started it: what the header shows and
what the story's scripted people point the CLI at."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Endpoints:
    rest_url: str  # http://127.0.0.1:PORT
    grpc_address: str  # 127.0.0.1:PORT, plaintext
    token: str  # the bearer token the API accepts, fresh per run
    # A signed Keep link, as a warning's notification carries: known once the story warned
    keep_url: str | None = None
