"""A client for the Gemini REST API (models/{model}:generateContent).

Text comes back as JSON constrained by a response schema; images come back as base64
`inlineData` parts. The API key travels in the x-goog-api-key header only.
"""

from __future__ import annotations

import base64
import json
import time
from collections.abc import Callable

from autoretto.pipeline.errors import ProviderRefused
from autoretto.pipeline.http import ProviderClient
from autoretto.pipeline.settings import GeminiSettings

BLOCKING_FINISH_REASONS = {
    "SAFETY",
    "PROHIBITED_CONTENT",
    "BLOCKLIST",
    "SPII",
    "IMAGE_SAFETY",
    "IMAGE_PROHIBITED_CONTENT",
    "RECITATION",
}


class GeminiClient(ProviderClient):
    name = "gemini"

    def __init__(
        self,
        settings: GeminiSettings,
        api_key: str | None,
        *,
        sleep: Callable[[float], None] = time.sleep,
        session=None,
    ) -> None:
        if not api_key:
            raise ProviderRefused(
                "no Gemini API key: store one in the vault as gemini_api_key or set "
                f"{settings.api_key_env}"
            )
        super().__init__(
            settings.base_url,
            timeout=settings.timeout,
            attempts=settings.attempts,
            retry_wait=settings.retry_wait,
            sleep=sleep,
            session=session,
        )
        self.settings = settings
        self._api_key = api_key

    def auth_headers(self) -> dict[str, str]:
        return {"x-goog-api-key": self._api_key}

    def refusal(self, status: int, body: str) -> str | None:
        if status == 400 and ("API_KEY_INVALID" in body or "API key not valid" in body):
            return (
                "gemini refused the API key (HTTP 400 API_KEY_INVALID): check the vault "
                f"entry gemini_api_key or {self.settings.api_key_env}"
            )
        if status in (401, 403):
            return (
                f"gemini refused the API key (HTTP {status}): check the vault entry "
                f"gemini_api_key or {self.settings.api_key_env}"
            )
        if status == 404:
            return (
                "gemini does not know the model (HTTP 404): check text_model and "
                "image_model in [providers.gemini]"
            )
        return None

    def _generate(self, model: str, body: dict, what: str, extract):
        url = f"{self.base_url}/models/{model}:generateContent"

        def attempt():
            response = self._send_once("POST", url, what=what, json=body)
            try:
                answer = response.json()
            except ValueError:
                raise self.passing("the answer was not JSON") from None
            if not isinstance(answer, dict):
                raise self.passing("the answer was not a JSON object")
            return extract(_parts(answer))

        return self._with_retries(attempt, what)

    def generate_json(self, prompt: str, schema: dict, *, what: str = "writing the copy") -> dict:
        """Ask the text model for one JSON object matching `schema`; return it.

        An answer missing one of the schema's required fields is retried like a 503.
        """
        body = {
            "contents": [{"role": "user", "parts": [{"text": prompt}]}],
            "generationConfig": {
                "responseMimeType": "application/json",
                "responseSchema": schema,
                "temperature": 0.9,
            },
        }

        def extract(parts):
            text = "".join(part.get("text", "") for part in parts if isinstance(part, dict))
            try:
                value = json.loads(text)
            except ValueError:
                raise self.passing("the model's text was not the JSON asked for") from None
            if not isinstance(value, dict):
                raise self.passing("the model's JSON was not an object")
            missing = [key for key in schema.get("required", []) if not value.get(key)]
            if missing:
                raise self.passing(f"the model's JSON lacked {', '.join(missing)}")
            return value

        return self._generate(self.settings.text_model, body, what, extract)

    def generate_image(self, prompt: str, *, aspect_ratio: str = "16:9") -> tuple[bytes, str]:
        """Ask the image model for one picture; return (bytes, mime type)."""
        body = {
            "contents": [{"role": "user", "parts": [{"text": prompt}]}],
            "generationConfig": {
                "responseModalities": ["IMAGE"],
                "imageConfig": {"aspectRatio": aspect_ratio},
            },
        }

        def extract(parts):
            for part in parts:
                inline = (
                    part.get("inlineData") or part.get("inline_data")
                    if isinstance(part, dict)
                    else None
                )
                if isinstance(inline, dict) and inline.get("data"):
                    try:
                        data = base64.b64decode(inline["data"], validate=True)
                    except ValueError:
                        raise self.passing("the image data was not valid base64") from None
                    return data, str(inline.get("mimeType") or inline.get("mime_type") or "")
            raise self.passing("the answer held no image")

        return self._generate(self.settings.image_model, body, "drawing the artwork", extract)


def _parts(answer: dict) -> list:
    """The parts of the first candidate; a blocked prompt or answer is a refusal."""
    feedback = answer.get("promptFeedback") or {}
    candidates = answer.get("candidates")
    if not candidates:
        if feedback.get("blockReason"):
            raise ProviderRefused(
                f"gemini declined the prompt ({feedback['blockReason']}): change the "
                "channel's prompt"
            )
        raise _passing("the answer held no candidates")
    first = candidates[0] if isinstance(candidates, list) else None
    if not isinstance(first, dict):
        raise _passing("the answer's candidates were malformed")
    parts = (first.get("content") or {}).get("parts") or []
    reason = first.get("finishReason")
    if not parts and reason in BLOCKING_FINISH_REASONS:
        raise ProviderRefused(f"gemini declined to answer ({reason}): change the channel's prompt")
    if not isinstance(parts, list):
        raise _passing("the answer's parts were malformed")
    return parts


def _passing(message: str):
    from autoretto.pipeline.http import PassingFailure

    return PassingFailure(message)
