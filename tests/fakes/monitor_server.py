"""A fake cron monitor on 127.0.0.1 that answers ping URLs the way healthchecks.io does.

From its Pinging API (https://healthchecks.io/docs/http_api/) and
https://healthchecks.io/docs/attaching_logs/: a check is pinged at `/<uuid>` (success),
`/<uuid>/start`, `/<uuid>/fail`, `/<uuid>/log` or `/<uuid>/<exit status 0-255>`, with HEAD, GET
or POST; a POST body is kept, its first 100,000 bytes; a good ping answers 200 with the body
"OK". Anything else (an unknown check, a suffix it does not know) answers 404 "not found".
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from tests.fakes.base import SHUTDOWN_POLL as POLL

BODY_KEPT = 100_000
CHECK = "5f3c1d2e-8a47-4b1e-9c0d-2a6b7e9f1a34"
SUFFIX = re.compile(r"^(?:|/start|/fail|/log|/(?:25[0-5]|2[0-4]\d|1?\d?\d))$")


@dataclass
class Ping:
    method: str
    kind: str  # "success", "start", "fail", "log" or the exit status
    body: str
    content_type: str | None


@dataclass
class FakeMonitor:
    server: ThreadingHTTPServer
    pings: list[Ping] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)  # paths answered 404

    @property
    def url(self) -> str:
        """The check's ping URL, as the monitor shows it to copy."""
        host, port = self.server.server_address[:2]
        return f"http://{host}:{port}/{CHECK}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def start() -> FakeMonitor:
    fake: FakeMonitor

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: object) -> None:
            pass

        def _ping(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length)[:BODY_KEPT].decode("utf-8", "replace")
            check, _, rest = self.path.lstrip("/").partition("/")
            suffix = f"/{rest}" if rest else ""
            if check != CHECK or not SUFFIX.match(suffix):
                fake.refused.append(self.path)
                return self._answer(404, b"not found")
            kind = rest or "success"
            fake.pings.append(Ping(self.command, kind, body, self.headers.get("Content-Type")))
            self._answer(200, b"OK")

        def _answer(self, status: int, body: bytes) -> None:
            self.send_response(status)
            self.send_header("Content-Type", "text/plain; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(body)

        do_GET = do_POST = do_HEAD = _ping

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    fake = FakeMonitor(server)
    threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": POLL}, daemon=True
    ).start()
    return fake
