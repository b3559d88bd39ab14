"""A fake webhook endpoint on 127.0.0.1 that records every request it receives.

It speaks the protocol of autoretto/platforms/webhook.py. Each POST takes the next scripted
behaviour (default `ok`):

- `ok`: store the post and answer 201 with its id and url;
- `status:N`: answer HTTP N without storing (Retry-After: 0 on 429/503);
- `drop`: store the post, then close the connection without answering (a lost answer);
- `hold`: store the post, then wait until `release()` before answering (so a test can kill
  the client while its request is in flight).
"""

from __future__ import annotations

import contextlib
import json
import threading
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
    metadata: dict | None = None
    video_bytes: int = 0
    authorization: str | None = None


@dataclass
class FakeWebhook:
    server: ThreadingHTTPServer
    script: deque = field(default_factory=deque)
    requests: list[Received] = field(default_factory=list)
    stored: dict[str, dict] = field(default_factory=dict)  # marker -> post
    held: threading.Event = field(default_factory=threading.Event)
    holding: threading.Event = field(default_factory=threading.Event)
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def url(self) -> str:
        host, port = self.server.server_address[:2]
        return f"http://{host}:{port}/hook"

    @property
    def publishes(self) -> list[Received]:
        """POSTs that the endpoint took (stored), whatever it answered."""
        return [r for r in self.requests if r.method == "POST" and r.metadata is not None]

    def publishes_of(self, post_id: int) -> int:
        return sum(1 for p in self.stored.values() if p["post_id"] == post_id)

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

        def do_GET(self) -> None:
            marker = parse_qs(urlparse(self.path).query).get("marker", [None])[0]
            with fake.lock:
                fake.requests.append(Received("GET", marker))
                found = fake.stored.get(marker or "")
            if found is None:
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
            marker = self.headers.get("Idempotency-Key")
            with fake.lock:
                behaviour = fake.script.popleft() if fake.script else "ok"
                received = Received(
                    "POST", marker, None, video_bytes, self.headers.get("Authorization")
                )
                fake.requests.append(received)
                if behaviour.startswith("status:"):
                    status = int(behaviour.split(":")[1])
                    retry = {"Retry_After": "0"} if status in (429, 503) else {}
                    self._answer(status, {"error": behaviour}, **retry)
                    return
                received.metadata = metadata
                post_id = f"v{len(fake.stored) + 1}"
                fake.stored[marker or post_id] = {
                    "id": post_id,
                    "url": f"https://videos.example/{post_id}",
                    "post_id": metadata["post_id"] if metadata else None,
                    "metadata": metadata,
                }
            if behaviour == "drop":
                self.close_connection = True
                self.connection.shutdown(2)
                return
            if behaviour == "hold":
                fake.holding.set()
                fake.held.wait(timeout=60)
            stored = fake.stored[marker or post_id]
            # The client may have been killed while its request was held: expected here.
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                self._answer(201, {"id": stored["id"], "url": stored["url"]})

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    fake = FakeWebhook(server)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return fake
