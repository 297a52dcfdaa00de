"""A token whose answer is at hand (kept from an earlier review) is answered on the event loop;
any other is reviewed on a worker thread, since a review is a request to the API server. A trip
to a worker thread waits for the GIL, which the loop's cycle holds for long stretches."""

from __future__ import annotations

import asyncio
import logging
import threading

import httpx
from starlette.types import Receive, Scope, Send

from autoscaler.api.middleware import IDENTITY, AuthenticationMiddleware
from autoscaler.domain.access import Identity, Recalled

ALICE = Identity(username="alice")


class Authenticator:
    """Recalls what it is told to, and records the thread of every review."""

    def __init__(self, recalled: Recalled | None) -> None:
        self.recalled = recalled
        self.reviewed_on: list[threading.Thread] = []

    def authenticate(self, token: str) -> Identity | None:
        self.reviewed_on.append(threading.current_thread())
        return ALICE if token == "alice-token" else None

    def recall(self, token: str) -> Recalled | None:
        return self.recalled


async def whoami(scope: Scope, receive: Receive, send: Send) -> None:
    user = scope["state"][IDENTITY].username.encode()
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": user})


def get(authenticator: Authenticator, token: str) -> tuple[int, str, threading.Thread]:
    """GET with `token` through the middleware; the status, the body and the loop's thread."""
    app = AuthenticationMiddleware(
        whoami, authenticator=authenticator, reads_open=False, logger=logging.getLogger("t")
    )

    async def main() -> tuple[int, str, threading.Thread]:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://api") as client:
            reply = await client.get(
                "/api/v1/workloads", headers={"Authorization": f"Bearer {token}"}
            )
        return reply.status_code, reply.text, threading.current_thread()

    return asyncio.run(main())


def test_a_recalled_user_is_let_in_without_a_review() -> None:
    authenticator = Authenticator(Recalled(ALICE))
    assert get(authenticator, "alice-token")[:2] == (200, "alice")
    assert authenticator.reviewed_on == []


def test_a_recalled_refusal_is_a_401_without_a_review() -> None:
    authenticator = Authenticator(Recalled(None))
    assert get(authenticator, "alice-token")[0] == 401
    assert authenticator.reviewed_on == []


def test_a_token_not_at_hand_is_reviewed_off_the_event_loop() -> None:
    authenticator = Authenticator(None)
    status, user, loop_thread = get(authenticator, "alice-token")
    assert (status, user) == (200, "alice")
    assert len(authenticator.reviewed_on) == 1
    assert authenticator.reviewed_on[0] is not loop_thread
