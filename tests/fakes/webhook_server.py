"""A fake webhook endpoint on 127.0.0.1 that records every request it receives.

It speaks the protocol of autoretto/platforms/webhook.py. Each POST takes the next scripted
behaviour (default `ok`):

- `ok`: store the post and answer 201 with its id and url;
- `status:N`: answer HTTP N without storing (Retry-After: 0 on 429/503);
- `store:N`: store the post, then answer HTTP N anyway (an endpoint that took it and erred);
- `broken:chunked`: store the post, then answer 201 with a chunked body that breaks off;
- `broken:gzip`: store the post, then answer 201 with a body that claims gzip and is not;
- `drop`: store the post, then close the connection without answering (a lost answer);
- `slow:S`: take S seconds before storing the post (the client may time out meanwhile);
- `hold`: store the post, then wait until `release()` before answering (so a test can kill
  the client while its request is in flight).

Each GET takes the next of `get_script` (default `ok`: answer from what is stored), or
`status:N` / `drop` like a POST.

With `honour_keys` the endpoint keeps its promise on `Idempotency-Key`: a POST whose key it
already stored makes no second copy (it answers as scripted, with the first copy). Without it,
every POST it stores is one more copy: `copies` is what a person would see on the other side.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from email.parser import BytesParser
from email.policy import default
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse


@dataclass
class Received:
    method: str
    marker: str | None
    metadata: dict | None = None  # set when this POST made a copy
    video_bytes: int = 0
    authorization: str | None = None


@dataclass
class FakeWebhook:
    server: ThreadingHTTPServer
    script: deque = field(default_factory=deque)
    get_script: deque = field(default_factory=deque)
    honour_keys: bool = False
    requests: list[Received] = field(default_factory=list)
    stored: dict[str, dict] = field(default_factory=dict)  # marker -> its first copy
    copies: list[dict] = field(default_factory=list)  # every copy made, in order
    held: threading.Event = field(default_factory=threading.Event)
    holding: threading.Event = field(default_factory=threading.Event)
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def url(self) -> str:
        host, port = self.server.server_address[:2]
        return f"http://{host}:{port}/hook"

    @property
    def publishes(self) -> list[Received]:
        """POSTs that made a copy, whatever the endpoint answered."""
        return [r for r in self.requests if r.method == "POST" and r.metadata is not None]

    def publishes_of(self, post_id: int) -> int:
        return sum(1 for copy in self.copies if copy["post_id"] == post_id)

    def copies_of(self, title: str) -> int:
        """Copies of one episode (told apart by title, which a restore never hands out again)."""
        return sum(1 for copy in self.copies if copy["metadata"]["title"] == title)

    def reset(self) -> None:
        with self.lock:
            self.script.clear()
            self.get_script.clear()
            self.requests.clear()
            self.stored.clear()
            self.copies.clear()
            self.held.clear()
            self.holding.clear()

    def release(self) -> None:
        self.held.set()

    def close(self) -> None:
        self.held.set()
        self.server.shutdown()
        self.server.server_close()


def start() -> FakeWebhook:
    fake: FakeWebhook

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: object) -> None:  # quiet
            pass

        def _answer(self, status: int, body: dict | None = None, **headers: str) -> None:
            data = json.dumps(body or {}).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for name, value in headers.items():
                self.send_header(name.replace("_", "-"), value)
            self.end_headers()
            self.wfile.write(data)

        def _drop(self) -> None:
            self.close_connection = True
            self.connection.shutdown(2)

        def _broken(self, how: str) -> None:
            """Answer 201 and then break the body, the way a bad proxy or a crash does."""
            self.close_connection = True
            self.send_response(201)
            self.send_header("Content-Type", "application/json")
            if how == "chunked":
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                self.wfile.write(b"zz\r\nnot a chunk\r\n")  # a chunk size that is not hex
            else:
                garbage = b"this is not gzip at all"
                self.send_header("Content-Encoding", "gzip")
                self.send_header("Content-Length", str(len(garbage)))
                self.end_headers()
                self.wfile.write(garbage)
            self.wfile.flush()

        def do_GET(self) -> None:
            marker = parse_qs(urlparse(self.path).query).get("marker", [None])[0]
            with fake.lock:
                fake.requests.append(Received("GET", marker))
                behaviour = fake.get_script.popleft() if fake.get_script else "ok"
                found = fake.stored.get(marker or "")
            if behaviour == "drop":
                self._drop()
            elif behaviour.startswith("status:"):
                self._answer(int(behaviour.split(":")[1]), {"error": behaviour})
            elif found is None:
                self._answer(404, {"error": "no such post"})
            else:
                self._answer(200, {"id": found["id"], "url": found["url"]})

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", 0))
            body = self.rfile.read(length)
            message = BytesParser(policy=default).parsebytes(
                f"Content-Type: {self.headers['Content-Type']}\r\n\r\n".encode() + body
            )
            metadata, video_bytes = None, 0
            for part in message.iter_parts():
                name = part.get_param("name", header="content-disposition")
                if name == "metadata":
                    metadata = json.loads(part.get_content())
                elif name == "video":
                    video_bytes = len(part.get_payload(decode=True))
            marker = self.headers.get("Idempotency-Key") or ""
            with fake.lock:
                behaviour = fake.script.popleft() if fake.script else "ok"
            if behaviour.startswith("slow:"):
                time.sleep(float(behaviour.split(":")[1]))
            with fake.lock:
                received = Received(
                    "POST", marker, None, video_bytes, self.headers.get("Authorization")
                )
                fake.requests.append(received)
                if behaviour.startswith("status:"):
                    status = int(behaviour.split(":")[1])
                    retry = {"Retry_After": "0"} if status in (429, 503) else {}
                    self._answer(status, {"error": behaviour}, **retry)
                    return
                stored = fake.stored.get(marker) if fake.honour_keys else None
                if stored is None:
                    received.metadata = metadata
                    post_id = f"v{len(fake.copies) + 1}"
                    stored = {
                        "id": post_id,
                        "url": f"https://videos.example/{post_id}",
                        "post_id": metadata["post_id"] if metadata else None,
                        "metadata": metadata,
                    }
                    fake.copies.append(stored)
                    fake.stored.setdefault(marker or post_id, stored)
            if behaviour.startswith("store:"):
                self._answer(int(behaviour.split(":")[1]), {"error": "it broke after storing"})
                return
            if behaviour.startswith("broken:"):
                self._broken(behaviour.split(":")[1])
                return
            if behaviour == "drop":
                self._drop()
                return
            if behaviour == "hold":
                fake.holding.set()
                fake.held.wait(timeout=60)
            # The client may have been killed while its request was held: expected here.
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                self._answer(201, {"id": stored["id"], "url": stored["url"]})

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    fake = FakeWebhook(server)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return fake
