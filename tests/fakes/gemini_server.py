"""A local stand-in for the Gemini REST API (models/{model}:generateContent).

Text requests get `text_answer` (a dict, sent as JSON text in a part); image requests
(responseModalities IMAGE) get `image` as base64 inlineData.
"""

from __future__ import annotations

import base64
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class FakeGemini:
    def __init__(self, *, api_key: str = "test-key", image: bytes = b"") -> None:
        self.api_key = api_key
        self.image = image
        self.text_answer: dict = {
            "title": "Rain on the Window",
            "description": "A slow, warm loop for late nights.\n\nHeadphones on.",
            "tags": ["lofi", "chill", "study"],
            "short_text": "Rain on the Window, a warm loop for late nights. #lofi #chill",
        }
        self.failures: list[int] = []
        self.malformed_text = False  # the model's text part is not JSON
        self.malformed_body = False  # the HTTP body itself is not JSON
        self.blocked = False
        # answer_for(request body) -> the text answer for that request, when set
        self.answer_for = None
        self.requests: list[tuple[str, dict, dict]] = []
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}/v1beta"

    def __enter__(self) -> FakeGemini:
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc) -> None:
        self._server.shutdown()
        self._server.server_close()

    def _handler(self):
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:
                pass

            def _send(self, status: int, value) -> None:
                body = value if isinstance(value, bytes) else json.dumps(value).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                fake.requests.append((self.path, body, dict(self.headers)))
                if fake.failures:
                    self._send(
                        fake.failures.pop(0), {"error": {"code": 503, "message": "overloaded"}}
                    )
                    return
                if self.headers.get("x-goog-api-key") != fake.api_key:
                    self._send(
                        400,
                        {
                            "error": {
                                "code": 400,
                                "message": "API key not valid.",
                                "status": "INVALID_ARGUMENT",
                                "details": [{"reason": "API_KEY_INVALID"}],
                            }
                        },
                    )
                    return
                if not self.path.endswith(":generateContent"):
                    self._send(404, {"error": {"code": 404, "message": "not found"}})
                    return
                if fake.malformed_body:
                    self._send(200, b"{not json")
                    return
                if fake.blocked:
                    self._send(200, {"promptFeedback": {"blockReason": "SAFETY"}})
                    return
                config = body.get("generationConfig", {})
                if "IMAGE" in config.get("responseModalities", []):
                    part = {
                        "inlineData": {
                            "mimeType": "image/png",
                            "data": base64.b64encode(fake.image).decode(),
                        }
                    }
                else:
                    answer = fake.answer_for(body) if fake.answer_for else fake.text_answer
                    text = "not json at all" if fake.malformed_text else json.dumps(answer)
                    part = {"text": text}
                self._send(
                    200,
                    {
                        "candidates": [
                            {"content": {"role": "model", "parts": [part]}, "finishReason": "STOP"}
                        ]
                    },
                )

        return Handler
