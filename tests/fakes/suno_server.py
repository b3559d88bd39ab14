"""A local stand-in for a suno-api compatible server, scripted by the test.

with FakeSuno(audio=wav_bytes) as suno:
    suno.pending_polls = 3          # "streaming" three times before "complete"
    suno.failures = [503, 500]      # the next requests fail with these statuses first
    ... SunoSettings(base_url=suno.url) ...
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit


class FakeSuno:
    def __init__(self, audio: bytes = b"", *, api_key: str | None = None) -> None:
        self.audio = audio
        self.api_key = api_key
        self.pending_polls = 0  # polls answered "streaming" before "complete"
        self.failures: list[int] = []  # statuses to answer with before behaving
        self.refuse: int | None = None  # answer every request with this status
        self.malformed = False  # answer JSON endpoints with garbage
        self.clip_status = "complete"  # final status ("error" to fail the generation)
        self.requests: list[tuple[str, str, dict | None, dict]] = []
        self.submitted = 0
        self._polls = 0
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> FakeSuno:
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc) -> None:
        self._server.shutdown()
        self._server.server_close()

    def _clips(self, ids: list[str]) -> list[dict]:
        with self._lock:
            self._polls += 1
            ready = self._polls > self.pending_polls
        status = self.clip_status if ready else "streaming"
        return [
            {
                "id": clip_id,
                "status": status,
                "title": "Rain on Glass",
                "model_name": "chirp-v4",
                "audio_url": f"{self.url}/audio/{clip_id}.mp3" if ready else "",
                "error_message": "moderation" if status == "error" else None,
            }
            for clip_id in ids
        ]

    def _handler(self):
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:
                pass

            def _send(self, status: int, body: bytes, kind: str = "application/json") -> None:
                self.send_response(status)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def _json(self, status: int, value) -> None:
                if fake.malformed:
                    self._send(200, b"<html>502 Bad Gateway</html>", "text/html")
                else:
                    self._send(status, json.dumps(value).encode())

            def _common(self, body: dict | None) -> bool:
                parts = urlsplit(self.path)
                fake.requests.append((self.command, parts.path, body, dict(self.headers)))
                if fake.refuse:
                    self._json(fake.refuse, {"detail": "refused"})
                    return False
                if fake.failures:
                    self._send(fake.failures.pop(0), b'{"error": "busy"}')
                    return False
                if fake.api_key and self.headers.get("Authorization") != f"Bearer {fake.api_key}":
                    self._send(401, b'{"detail": "bad key"}')
                    return False
                return True

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                if not self._common(body):
                    return
                if urlsplit(self.path).path in ("/api/generate", "/api/custom_generate"):
                    fake.submitted += 1
                    number = fake.submitted
                    self._json(
                        200,
                        [
                            {"id": f"clip-{number}a", "status": "submitted"},
                            {"id": f"clip-{number}b", "status": "submitted"},
                        ],
                    )
                else:
                    self._send(404, b"{}")

            def do_GET(self) -> None:
                if not self._common(None):
                    return
                parts = urlsplit(self.path)
                if parts.path == "/api/get":
                    ids = parse_qs(parts.query).get("ids", [""])[0].split(",")
                    self._json(200, fake._clips(ids))
                elif parts.path.startswith("/audio/"):
                    self._send(200, fake.audio, "audio/mpeg")
                else:
                    self._send(404, b"{}")

        return Handler
