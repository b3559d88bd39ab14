"""A local stand-in for the Gemini REST API (models/{model}:generateContent).

Requests and answers are checked against the official google-genai SDK's types (the `test`
extra): a request body must validate as the SDK's Content and GenerateContentConfig (unknown
fields refused, as the SDK's models forbid extras), and every field must be one the SDK itself
puts in the wire `generationConfig`; a request that breaks this is answered 400
INVALID_ARGUMENT as the service does. Every answer the fake sends is validated as the SDK's
GenerateContentResponse first, so the fake cannot drift from the real shape.

Facts the fake follows, with their source:
- An unknown model is 404 NOT_FOUND "models/X is not found for API version v1beta, or is not
  supported for generateContent" (the service's wording, seen in many public reports).
- 429 RESOURCE_EXHAUSTED carries google.rpc details: a QuotaFailure naming the quota
  (…PerDay… for a daily one) and a RetryInfo with `retryDelay` ("38s"), as read by
  google-gemini/gemini-cli packages/core/src/utils/googleQuotaErrors.ts.
- 503 UNAVAILABLE "The model is overloaded. Please try again later."
- Finish reasons are google-genai's types.FinishReason values; an image request may end
  NO_IMAGE / IMAGE_OTHER / IMAGE_RECITATION or come back with text only.

Text requests get `text_answer` (a dict, sent as JSON text in a part); image requests
(responseModalities IMAGE) get `image` as base64 inlineData.
"""

from __future__ import annotations

import base64
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from tests.fakes.base import SHUTDOWN_POLL as POLL

TOP_LEVEL_FIELDS = {
    "contents",
    "generationConfig",
    "safetySettings",
    "systemInstruction",
    "tools",
    "toolConfig",
    "cachedContent",
}
KNOWN_MODELS = {"gemini-3.8-flash", "gemini-3.1-flash-image", "gemini-test", "gemini-image-test"}


def _error(code: int, status: str, message: str, details: list | None = None) -> dict:
    error = {"code": code, "message": message, "status": status}
    if details:
        error["details"] = details
    return {"error": error}


def check_request(model: str, body: dict) -> str | None:
    """Why the service would refuse this generateContent body, or None when it is sound."""
    from google import genai
    from google.genai import models, types

    unknown = set(body) - TOP_LEVEL_FIELDS
    if unknown:
        name = sorted(unknown)[0]
        return f'Invalid JSON payload received. Unknown name "{name}": Cannot find field.'
    try:
        contents = [types.Content.model_validate(item) for item in body.get("contents") or []]
        config = types.GenerateContentConfig.model_validate(body.get("generationConfig") or {})
    except Exception as error:  # pydantic's ValidationError: the SDK would not build this
        return "Invalid JSON payload received. " + " ".join(str(error).splitlines()[:3])
    if not contents:
        return "* GenerateContentRequest.contents: contents is not specified"
    client = genai.Client(api_key="fake-key-for-the-sdk-converter")
    wire = models._GenerateContentParameters_to_mldev(
        client._api_client, {"model": model, "contents": contents, "config": config}
    )
    misplaced = set(body.get("generationConfig") or {}) - set(wire.get("generationConfig") or {})
    if misplaced:
        name = sorted(misplaced)[0]
        return (
            f"Invalid JSON payload received. Unknown name \"{name}\" at 'generation_config': "
            "Cannot find field."
        )
    return None


def check_answer(answer: dict) -> dict:
    """The answer, validated as google-genai's GenerateContentResponse (raises if not)."""
    from google.genai import types

    types.GenerateContentResponse.model_validate(answer)
    return answer


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
        self.known_models = set(KNOWN_MODELS)
        self.failures: list[int] = []  # 503 / 500 answers before behaving
        self.quota: list[
            str
        ] = []  # 429 answers before behaving: "day", "38s" (a retryDelay), "busy"
        self.finishes: list[str] = []  # finish reasons of the next answers (partial text kept)
        self.text_only_image = False  # image requests answered with a text part only
        self.malformed_text = False  # the model's text part is not JSON
        self.malformed_body = False  # the HTTP body itself is not JSON
        self.blocked = False
        # answer_for(request body) -> the text answer for that request, when set
        self.answer_for = None
        self.requests: list[tuple[str, dict, dict]] = []
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}/v1beta"

    def __enter__(self) -> FakeGemini:
        threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": POLL}, daemon=True
        ).start()
        return self

    def __exit__(self, *exc) -> None:
        self._server.shutdown()
        self._server.server_close()

    def _quota_error(self, kind: str, model: str) -> dict:
        if kind == "day":
            details = [
                {
                    "@type": "type.googleapis.com/google.rpc.QuotaFailure",
                    "violations": [
                        {
                            "quotaMetric": "generativelanguage.googleapis.com/"
                            "generate_content_free_tier_requests",
                            "quotaId": "GenerateRequestsPerDayPerProjectPerModel-FreeTier",
                            "quotaDimensions": {"location": "global", "model": model},
                            "quotaValue": "250",
                        }
                    ],
                },
                {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "50412s"},
            ]
        elif kind == "busy":
            details = []
        else:
            details = [
                {
                    "@type": "type.googleapis.com/google.rpc.QuotaFailure",
                    "violations": [
                        {
                            "quotaMetric": "generativelanguage.googleapis.com/"
                            "generate_content_free_tier_requests",
                            "quotaId": "GenerateRequestsPerMinutePerProjectPerModel-FreeTier",
                            "quotaValue": "10",
                        }
                    ],
                },
                {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": kind},
            ]
        message = (
            "You exceeded your current quota, please check your plan and billing details."
            if details
            else "Resource has been exhausted (e.g. check quota)."
        )
        return _error(429, "RESOURCE_EXHAUSTED", message, details)

    def _answer(self, body: dict) -> dict:
        config = body.get("generationConfig", {})
        wants_image = "IMAGE" in config.get("responseModalities", [])
        finish = self.finishes.pop(0) if self.finishes else "STOP"
        if wants_image and not self.text_only_image and finish == "STOP":
            part = {
                "inlineData": {
                    "mimeType": "image/png",
                    "data": base64.b64encode(self.image).decode(),
                }
            }
        elif wants_image:
            part = {"text": "I can't draw that, but here is a description of a rainy street."}
        else:
            answer = self.answer_for(body) if self.answer_for else self.text_answer
            text = "not json at all" if self.malformed_text else json.dumps(answer)
            if finish == "MAX_TOKENS":
                text = text[: len(text) // 2]  # the partial text of an answer cut short
            part = {"text": text}
        candidate = {
            "content": {"role": "model", "parts": [part]},
            "finishReason": finish,
            "index": 0,
        }
        if finish in ("SAFETY", "IMAGE_SAFETY", "RECITATION", "IMAGE_RECITATION", "NO_IMAGE"):
            candidate["content"] = {"role": "model"}  # a blocked answer carries no parts
        return {
            "candidates": [candidate],
            "usageMetadata": {"promptTokenCount": 40, "totalTokenCount": 300},
            "modelVersion": "fake",
        }

    def _handler(self):
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:
                pass

            def _send(self, status: int, value) -> None:
                if isinstance(value, dict) and status == 200:
                    value = check_answer(value)
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
                    status = fake.failures.pop(0)
                    if status == 503:
                        answer = _error(
                            503, "UNAVAILABLE", "The model is overloaded. Please try again later."
                        )
                    else:
                        answer = _error(status, "INTERNAL", "An internal error has occurred.")
                    self._send(status, answer)
                    return
                if self.headers.get("x-goog-api-key") != fake.api_key:
                    details = [
                        {
                            "@type": "type.googleapis.com/google.rpc.ErrorInfo",
                            "reason": "API_KEY_INVALID",
                            "domain": "googleapis.com",
                        }
                    ]
                    self._send(
                        400,
                        _error(
                            400,
                            "INVALID_ARGUMENT",
                            "API key not valid. Please pass a valid API key.",
                            details,
                        ),
                    )
                    return
                prefix = "/v1beta/models/"
                if not (self.path.startswith(prefix) and self.path.endswith(":generateContent")):
                    self._send(404, _error(404, "NOT_FOUND", "Requested entity was not found."))
                    return
                model = self.path[len(prefix) : -len(":generateContent")]
                if model not in fake.known_models:
                    self._send(
                        404,
                        _error(
                            404,
                            "NOT_FOUND",
                            f"models/{model} is not found for API version v1beta, or is not "
                            "supported for generateContent. Call ListModels to see the list of "
                            "available models and their supported methods.",
                        ),
                    )
                    return
                if fake.quota:
                    self._send(429, fake._quota_error(fake.quota.pop(0), model))
                    return
                refusal = check_request(model, body)
                if refusal:
                    self._send(400, _error(400, "INVALID_ARGUMENT", refusal))
                    return
                if fake.malformed_body:
                    self._send(200, b"{not json")
                    return
                if fake.blocked:
                    self._send(200, {"promptFeedback": {"blockReason": "SAFETY"}})
                    return
                self._send(200, fake._answer(body))

        return Handler
