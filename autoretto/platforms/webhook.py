"""The `webhook` platform: hand each post to an HTTP endpoint of your own.

For a NAS script, an n8n flow, a self-hosted uploader. The protocol is small and has what the
never-twice rule needs:

- publish: `POST <url>`, multipart: a `metadata` part (JSON: channel, slot, slot_at, publish_at,
  episode_id, post_id, marker, title, description, tags, ai_generated) and a `video` part;
  header `Idempotency-Key: <marker>`; `Authorization: Bearer <token>` when `token_env` names an
  environment variable holding one. The endpoint answers 200/201 with `{"id": ..., "url": ...}`.
- find an attempt: `GET <url>?marker=<marker>` answers 200 with the same object, or 404.
- errors: 408, 425, 429 and 5xx are passing (Retry-After honoured); 401 and 403 need a person;
  400, 413, 415 and 422 reject the content.

The marker is the post's identity, the same on every attempt, so an endpoint that honours
`Idempotency-Key` never makes a second copy. One that does not is asked first: an answer that
leaves it unclear whether the post was taken (a 5xx or 408/425/429 after the request went out)
is followed by `GET ?marker=` before anything is sent again, and any error once the request
went out (a dropped connection, a timeout, a broken or undecodable body) is a lost answer.
"""

from __future__ import annotations

import json
import os
from datetime import timedelta
from typing import Any, ClassVar

from ..oauth import retry_after
from .base import (
    ContentRejected,
    LostAnswer,
    NeedsPerson,
    PassingError,
    PlatformError,
    PostRequest,
    Published,
)
from .folder import post_facts
from .http import HttpPlatform
from .web import http_address

PASSING_STATUSES = {408, 425, 429}
REJECTING_STATUSES = {400, 413, 415, 422}


class WebhookPlatform(HttpPlatform):
    name = "webhook"
    title = "Webhook"
    carousel_note = "it sends a video and its metadata only"
    can_find_attempts = True
    needs_account = False
    counters = None  # nothing to read
    settings_defaults: ClassVar[dict[str, Any]] = {
        "url": "",
        "token_env": "",
        "timeout": 120,
        "format": "landscape",
    }

    @classmethod
    def setting_problems(cls, settings: dict[str, Any]) -> list[tuple[str, str]]:
        if not http_address(str(settings["url"])):
            return [("url", "give the endpoint as an http(s) URL with a host (https://HOST/PATH)")]
        return []

    @property
    def look_delay(self) -> timedelta:  # type: ignore[override]
        """An endpoint whose answer timed out may still be storing the post: it is asked once
        it had the time to finish with the request (a look sooner could miss it, and send a
        second copy)."""
        return timedelta(seconds=float(self.settings["timeout"]) + 60)

    def is_connected(self) -> bool:
        return bool(self.settings.get("url"))

    def account_key(self) -> str:
        return str(self.settings["url"])

    def bearer(self, rejected: str | None = None) -> str | None:
        variable = self.settings["token_env"]
        return os.environ.get(variable) if variable else None

    def token_refused(self, response: Any) -> bool:
        return False  # a token from the environment: nothing to refresh

    def _find_attempt(self, request: PostRequest) -> Published | None:
        answer = self.call(
            "GET", self.settings["url"], params={"marker": request.marker}, accept=(404,)
        )
        return None if answer.status_code == 404 else self._published(answer)

    def _publish(self, request: PostRequest) -> Published:
        return self.retrying(lambda: self._send(request))

    def _send(self, request: PostRequest) -> Published:
        video = self.video_file(request.episode)
        with open(video, "rb") as body:
            answer = self.call(
                "POST",
                self.settings["url"],
                sends=True,
                check=False,
                files={
                    "metadata": (None, json.dumps(post_facts(request)), "application/json"),
                    "video": (video.name, body, "video/mp4"),
                },
                headers={"Idempotency-Key": request.marker},
            )
        if answer.status_code in PASSING_STATUSES or answer.status_code >= 500:
            return self._settle(request, answer)
        if not self.succeeded(answer):
            raise self.classify(answer)
        return self._published(answer)

    def _settle(self, request: PostRequest, answer: Any) -> Published:
        """The endpoint erred after it got the request, and may still have taken the post:
        ask it before anything is sent again. Absent is a passing error (safe to retry); an
        endpoint that cannot say is a lost answer."""
        try:
            found = self._find_attempt(request)
        except PlatformError as error:
            raise LostAnswer(
                f"{self.title} answered HTTP {answer.status_code} and could not say whether it "
                f"took the post ({error.reason})"
            ) from None
        if found is not None:
            return found
        raise self.classify(answer)

    def classify(self, answer: Any, *, sends: bool = False) -> PlatformError:
        status = answer.status_code
        detail = f"{self.title} answered HTTP {status}"
        if status in PASSING_STATUSES or status >= 500:
            return PassingError(detail, retry_after=retry_after(answer))
        if status in (401, 403):
            return NeedsPerson(f"{detail}: check the token in ${self.settings['token_env']}")
        if status in REJECTING_STATUSES:
            return ContentRejected(f"{detail}: {answer.text[:200]}")
        return PassingError(detail)

    def _published(self, answer: Any) -> Published:
        try:
            body = answer.json()
            return Published(str(body["id"]), body.get("url"))
        except (ValueError, KeyError, TypeError):
            raise LostAnswer(
                f"{self.title} answered {answer.status_code} without an id; it may have taken it"
            ) from None
