"""A fake webhook endpoint on 127.0.0.1 (tests/fakes/base.py) that records every request.

It speaks the protocol of autoretto/platforms/webhook.py: `POST` (operation `publish`) stores a
post and answers 201 with its id and url; `GET ?marker=` (operation `find`) answers 200 with the
post that carries that marker, or 404. Besides the shared vocabulary (`status:N` answers HTTP N
without storing, with Retry-After: 0 on 429/503 unless one is scripted; `drop`; `hold`;
`hangup`; `refuse`, a 422) a publish understands:

- `store:N`: store the post, then answer HTTP N anyway (an endpoint that took it and erred);
- `broken:chunked`: store the post, then answer 201 with a chunked body that breaks off;
- `broken:gzip`: store the post, then answer 201 with a body that claims gzip and is not;
- `slow:S`: take S seconds before storing the post (the client may time out meanwhile): an
  endpoint that stores a post only when its request finishes (`arrived` is set as the request
  is read, the moment it is in flight);
- `slow:release`: the same, until the test's `release()` (however long the test takes
  meanwhile: no fixed wait to outlast).

`script.append(...)` scripts the next publish, `get_script` the next find.

With `honour_keys` the endpoint keeps its promise on `Idempotency-Key`: a POST whose key it
already stored makes no second copy (it answers as scripted, with the first copy). Without it,
every POST it stores is one more copy: `copies` is what a person would see on the other side.
With `token` set, a request must carry `Authorization: Bearer <token>` (else 401); each request
records whether it did (`authorized`), never the header itself.
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from email.parser import BytesParser
from email.policy import default
from typing import Any

from tests.fakes.base import Call, FakeServer, Seen


class FakeWebhook(FakeServer):
    title = "Webhook"
    publish_operation = "publish"

    def __init__(self) -> None:
        super().__init__()
        self.honour_keys = False
        self.token: str | None = None
        self.stored: dict[str, dict] = {}  # marker -> its first copy
        self.copies: list[dict] = []  # every copy made, in order
        self.arrived = threading.Event()  # a publish's whole request was read (in flight now)

    @property
    def url(self) -> str:
        return super().url + "/hook"

    @property
    def get_script(self) -> deque:
        return self.script["find"]

    @property
    def publishes(self) -> list[Seen]:
        """POSTs that made a copy, whatever the endpoint answered."""
        return [r for r in self.requests if r.method == "POST" and r.metadata is not None]

    def publishes_of(self, post_id: int) -> int:
        return sum(1 for copy in self.copies if copy["post_id"] == post_id)

    def copies_of(self, title: str) -> int:
        """Copies of one episode (told apart by title, which a restore never hands out again)."""
        return sum(1 for copy in self.copies if copy["metadata"]["title"] == title)

    def visible_copies(self) -> int:
        return len(self.copies)

    def settings(self) -> str:
        return f'url = "{self.url}"\ntimeout = 10\n'

    def reset(self) -> None:
        with self.lock:
            self.script.clear()
            self.requests.clear()
            self.stored.clear()
            self.copies.clear()
            self.held.clear()
            self.holding.clear()
            self.revoked = False

    # -- the protocol ----------------------------------------------------------------------------

    def failure(self, call: Call, status: int) -> Any:
        return {"error": f"status:{status}"}

    def failure_headers(self, call: Call, status: int, retry_after: int | None) -> dict:
        if retry_after is None and status in (429, 503):
            retry_after = 0
        return super().failure_headers(call, status, retry_after)

    def refusal(self, call: Call) -> None:
        call.send(422, {"error": "the endpoint cannot take this video"})

    def _authorized(self, call: Call) -> bool:
        if self.revoked:
            return False
        return self.token is None or call.headers.get("Authorization") == f"Bearer {self.token}"

    def route(self, call: Call) -> None:
        if call.method == "GET":
            return self._find(call)
        if call.method == "POST":
            return self._publish(call)
        return call.send(405, {"error": "POST or GET"})

    def _find(self, call: Call) -> None:
        marker = call.query.get("marker")
        authorized = self._authorized(call)
        call.begin("find", method="GET", marker=marker, authorized=authorized)
        if call.refused():
            return
        if not authorized:
            return call.send(401, {"error": "unauthorized"})
        with self.lock:
            found = self.stored.get(marker or "")
        if found is None:
            return call.answer(404, {"error": "no such post"})
        call.answer(200, {"id": found["id"], "url": found["url"]})

    def _publish(self, call: Call) -> None:
        body = call.body
        message = BytesParser(policy=default).parsebytes(
            f"Content-Type: {call.content_type}\r\n\r\n".encode() + body
        )
        metadata, video_bytes = None, 0
        for part in message.iter_parts():
            name = part.get_param("name", header="content-disposition")
            if name == "metadata":
                metadata = json.loads(part.get_content())
            elif name == "video":
                video_bytes = len(part.get_payload(decode=True))
        marker = call.headers.get("Idempotency-Key") or ""
        self.arrived.set()
        behaviour = self.script.take("publish")
        if behaviour == "slow:release":
            self.wait_for_release()
        elif behaviour.startswith("slow:"):
            time.sleep(float(behaviour.split(":")[1]))
        authorized = self._authorized(call)
        with self.lock:
            received = self.record(
                "publish",
                method="POST",
                marker=marker,
                metadata=None,
                video_bytes=video_bytes,
                authorized=authorized,
            )
            call.operation, call.behaviour = "publish", behaviour
            if call.refused():
                return
            if not authorized:
                return call.send(401, {"error": "unauthorized"})
            stored = self.stored.get(marker) if self.honour_keys else None
            if stored is None:
                received.metadata = metadata
                post_id = f"v{len(self.copies) + 1}"
                stored = {
                    "id": post_id,
                    "url": f"https://videos.example/{post_id}",
                    "post_id": metadata["post_id"] if metadata else None,
                    "metadata": metadata,
                }
                self.copies.append(stored)
                self.stored.setdefault(marker or post_id, stored)
        if behaviour.startswith("store:"):
            return call.send(int(behaviour.split(":")[1]), {"error": "it broke after storing"})
        if behaviour.startswith("broken:"):
            return self._broken(call, behaviour.split(":")[1])
        call.answer(201, {"id": stored["id"], "url": stored["url"]})

    @staticmethod
    def _broken(call: Call, how: str) -> None:
        """Answer 201 and then break the body, the way a bad proxy or a crash does."""
        call.handler.close_connection = True
        if how == "chunked":
            call.send(
                201,
                raw=b"zz\r\nnot a chunk\r\n",  # a chunk size that is not hex
                headers={"Transfer-Encoding": "chunked"},
            )
        else:
            call.send(201, raw=b"this is not gzip at all", headers={"Content-Encoding": "gzip"})


def start() -> FakeWebhook:
    return FakeWebhook().start()
