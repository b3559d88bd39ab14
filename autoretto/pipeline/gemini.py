"""A client for the Gemini REST API (models/{model}:generateContent).

Text comes back as JSON constrained by a response schema; images come back as base64
`inlineData` parts. The API key travels in the x-goog-api-key header only.

What an answer can mean, besides a result:
- A prompt the model will not serve (a blocked prompt, a finish reason other than STOP, an
  image request answered with text only, JSON that is not what was asked) is PromptDeclined:
  never tried again with the same words; the make rephrases once, then goes offline.
- 404 for the model is a refusal that names the setting: the model is gone or misspelt.
- 429 says which it is: a daily quota used up (no more tries today), a per-minute quota
  (waited out as RetryInfo.retryDelay asks) or a busy service (backed off, like a 503).
"""

from __future__ import annotations

import base64
import json
import re
import time
from collections.abc import Callable

from autoretto.pipeline.errors import PromptDeclined, ProviderRefused, ProviderUnavailable
from autoretto.pipeline.http import (
    MAX_RETRY_WAIT,
    PassingFailure,
    ProviderClient,
    _short,
    retry_after,
)
from autoretto.pipeline.settings import GeminiSettings

MODELS_PAGE = "https://ai.google.dev/gemini-api/docs/models"
# The finish reason of an answer that came to its natural end; every other value of
# google-genai's types.FinishReason (SAFETY, RECITATION, OTHER, MAX_TOKENS, NO_IMAGE,
# IMAGE_OTHER, IMAGE_RECITATION, IMAGE_SAFETY, ...) stops the answer short of what was asked
# (https://ai.google.dev/api/generate-content#FinishReason).
COMPLETE_FINISH_REASONS = {None, "STOP", "FINISH_REASON_UNSPECIFIED"}
QUOTA_FAILURE = "type.googleapis.com/google.rpc.QuotaFailure"
RETRY_INFO = "type.googleapis.com/google.rpc.RetryInfo"


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
        self._setting = "text_model"  # the setting whose model the request being sent names

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
            model = getattr(self.settings, self._setting)
            return (
                f'gemini does not know the model "{model}" (HTTP 404 NOT_FOUND: it was shut '
                f"down or is misspelt): set [providers.gemini] {self._setting} to a current "
                f"model ({MODELS_PAGE})"
            )
        return None

    def problem(self, status: int, body: str, headers, what: str) -> Exception:
        if status == 429:
            return self._quota(body, headers)
        found = super().problem(status, body, headers, what)
        if status == 503 and isinstance(found, PassingFailure):
            # UNAVAILABLE, "The model is overloaded": busy, tried again with backoff.
            return PassingFailure(f"gemini is busy (HTTP 503: {_short(body, 80)})", wait=found.wait)
        return found

    def _quota(self, body: str, headers) -> Exception:
        """429 RESOURCE_EXHAUSTED, read the way google-gemini/gemini-cli reads it
        (packages/core/src/utils/googleQuotaErrors.ts): a QuotaFailure whose quotaId names a
        day is used up until the quota resets; a RetryInfo.retryDelay is how long to wait;
        anything else is a busy service."""
        model = getattr(self.settings, self._setting)
        details = _error_details(body)
        for detail in details:
            if detail.get("@type") != QUOTA_FAILURE:
                continue
            for violation in detail.get("violations") or []:
                quota = str(violation.get("quotaId") or violation.get("quotaMetric") or "")
                if "PerDay" in quota or "Daily" in quota:
                    return ProviderUnavailable(
                        f"gemini's daily quota for {model} is used up (HTTP 429, {quota}); "
                        "the next run tries again after it resets"
                    )
        delay = next(
            (
                _seconds(detail.get("retryDelay"))
                for detail in details
                if detail.get("@type") == RETRY_INFO
            ),
            None,
        )
        if delay is not None and delay > MAX_RETRY_WAIT:
            return ProviderUnavailable(
                f"gemini's quota for {model} is used up for now (HTTP 429; it asks to wait "
                f"{delay:.0f} s); the next run tries again"
            )
        if delay is not None:
            return PassingFailure(
                f"gemini's per-minute quota for {model} is used up (HTTP 429; it asks to "
                f"wait {delay:.0f} s)",
                wait=delay,
            )
        return PassingFailure("gemini is busy (HTTP 429)", wait=retry_after(headers))

    def _generate(self, setting: str, body: dict, what: str, extract):
        self._setting = setting
        url = f"{self.base_url}/models/{getattr(self.settings, setting)}:generateContent"

        def attempt():
            response = self._send_once("POST", url, what=what, json=body)
            try:
                answer = response.json()
            except ValueError:
                raise self.passing("the answer was not JSON") from None
            if not isinstance(answer, dict):
                raise self.passing("the answer was not a JSON object")
            return extract(_parts(answer, what))

        return self._with_retries(attempt, what)

    def generate_json(self, prompt: str, schema: dict, *, what: str = "writing the copy") -> dict:
        """Ask the text model for one JSON object matching `schema`; return it.

        An answer that is not that object (not JSON, a required field missing) is
        PromptDeclined: the same prompt is not asked again."""
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
                raise PromptDeclined(
                    "NOT_JSON", f"gemini's answer when {what} was not the JSON asked for"
                ) from None
            if not isinstance(value, dict):
                raise PromptDeclined("NOT_JSON", f"gemini's JSON when {what} was not an object")
            missing = [key for key in schema.get("required", []) if not value.get(key)]
            if missing:
                raise PromptDeclined(
                    "INCOMPLETE", f"gemini's JSON when {what} lacked {', '.join(missing)}"
                )
            return value

        return self._generate("text_model", body, what, extract)

    def generate_image(self, prompt: str, *, aspect_ratio: str = "16:9") -> tuple[bytes, str]:
        """Ask the image model for one picture; return (bytes, mime type)."""
        what = "drawing the artwork"
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
            said = " ".join(part.get("text", "") for part in parts if isinstance(part, dict))
            raise PromptDeclined(
                "TEXT_ONLY",
                f"gemini answered with text, not an image, when {what}"
                + (f' ("{_short(said, 80)}")' if said.strip() else ""),
            )

        return self._generate("image_model", body, what, extract)


def _parts(answer: dict, what: str) -> list:
    """The parts of the first candidate. A blocked prompt or an answer cut short (any finish
    reason but STOP, partial text included) is PromptDeclined."""
    feedback = answer.get("promptFeedback") or {}
    candidates = answer.get("candidates")
    if not candidates:
        if feedback.get("blockReason"):
            reason = feedback["blockReason"]
            raise PromptDeclined(reason, f"gemini declined the prompt ({reason}) when {what}")
        raise PassingFailure("the answer held no candidates")
    first = candidates[0] if isinstance(candidates, list) else None
    if not isinstance(first, dict):
        raise PassingFailure("the answer's candidates were malformed")
    reason = first.get("finishReason")
    if reason not in COMPLETE_FINISH_REASONS:
        message = first.get("finishMessage")
        raise PromptDeclined(
            reason,
            f"gemini stopped short ({reason}) when {what}"
            + (f": {_short(message, 120)}" if isinstance(message, str) and message else ""),
        )
    parts = (first.get("content") or {}).get("parts") or []
    if not isinstance(parts, list):
        raise PassingFailure("the answer's parts were malformed")
    return parts


def _error_details(body: str) -> list[dict]:
    try:
        error = json.loads(body).get("error") or {}
    except (ValueError, AttributeError):
        return []
    details = error.get("details") if isinstance(error, dict) else None
    return [detail for detail in details or [] if isinstance(detail, dict)]


def _seconds(duration) -> float | None:
    """A protobuf Duration in JSON ("38s", "0.5s", "1.250s") in seconds."""
    match = re.fullmatch(r"(\d+(?:\.\d+)?)s", str(duration or ""))
    return float(match.group(1)) if match else None


def model_warnings(settings: GeminiSettings, today: str) -> list[str]:
    """Sentences for each Gemini model setting whose shutdown is past or within a month."""
    from autoretto.pipeline.settings import model_ends

    return [entry["message"] for entry in model_ends(settings, today) if entry["state"] != "ok"]
