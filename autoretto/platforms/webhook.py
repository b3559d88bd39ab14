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
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, ClassVar

from ..clock import iso
from ..errors import ConfigError
from .base import (
    ContentRejected,
    LostAnswer,
    NeedsPerson,
    PassingError,
    Platform,
    PostRequest,
    Published,
)

PASSING_STATUSES = {408, 425, 429}
REJECTING_STATUSES = {400, 413, 415, 422}


class WebhookPlatform(Platform):
    name = "webhook"
    title = "Webhook"
    can_find_attempts = True
    needs_account = False
    settings_defaults: ClassVar[dict[str, Any]] = {
        "url": "",
        "token_env": "",
        "timeout": 120,
        "format": "landscape",
    }

    @classmethod
    def parse_settings(cls, table: dict[str, Any], *, path: Path, paths: Any) -> Any:
        settings = super().parse_settings(table, path=path, paths=paths)
        if not settings["url"].startswith(("http://", "https://")):
            raise ConfigError(
                path, "give the endpoint as an http(s) URL", field="platforms.webhook.url"
            )
        return settings

    def is_connected(self) -> bool:
        return bool(self.settings.get("url"))

    def _headers(self) -> dict[str, str]:
        variable = self.settings["token_env"]
        token = os.environ.get(variable) if variable else None
        return {"Authorization": f"Bearer {token}"} if token else {}

    def _find_attempt(self, request: PostRequest) -> Published | None:
        import requests

        try:
            answer = requests.get(
                self.settings["url"],
                params={"marker": request.marker},
                headers=self._headers(),
                timeout=self.settings["timeout"],
            )
        except requests.RequestException as error:
            raise PassingError(f"{self.title} did not answer: {type(error).__name__}") from None
        if answer.status_code == 404:
            return None
        self._raise_for_status(answer)
        return self._published(answer)

    def _publish(self, request: PostRequest) -> Published:
        return self.retrying(lambda: self._send(request))

    def _send(self, request: PostRequest) -> Published:
        import requests

        episode = request.episode
        video = Path(episode.videos.get(self.settings["format"]) or episode.main_video)
        if not video.is_file():
            raise ContentRejected(f"the episode's video {video} is missing")
        metadata = {
            "channel": request.channel,
            "slot": request.slot,
            "slot_at": request.slot_at,
            "publish_at": iso(request.publish_at),
            "episode_id": episode.id,
            "post_id": request.post_id,
            "marker": request.marker,
            "title": episode.title,
            "description": episode.description,
            "tags": list(episode.tags),
            "ai_generated": episode.ai_generated,
        }
        headers = {"Idempotency-Key": request.marker, **self._headers()}
        try:
            with open(video, "rb") as body:
                answer = requests.post(
                    self.settings["url"],
                    files={
                        "metadata": (None, json.dumps(metadata), "application/json"),
                        "video": (video.name, body, "video/mp4"),
                    },
                    headers=headers,
                    timeout=self.settings["timeout"],
                )
        except (requests.ConnectTimeout, requests.exceptions.InvalidURL) as error:
            raise PassingError(
                f"{self.title} could not be reached ({type(error).__name__})"
            ) from None
        except requests.ConnectionError as error:
            if _never_connected(error):
                raise PassingError(
                    f"{self.title} could not be reached ({type(error).__name__})"
                ) from None
            raise LostAnswer(f"the connection to {self.title} broke before it answered") from None
        except requests.Timeout:
            raise LostAnswer(f"{self.title} took too long to answer") from None
        self._raise_for_status(answer)
        return self._published(answer)

    def _raise_for_status(self, answer: Any) -> None:
        status = answer.status_code
        if status < 300:
            return
        detail = f"{self.title} answered HTTP {status}"
        if status in PASSING_STATUSES or status >= 500:
            raise PassingError(detail, retry_after=_retry_after(answer))
        if status in (401, 403):
            raise NeedsPerson(f"{detail}: check the token in ${self.settings['token_env']}")
        if status in REJECTING_STATUSES:
            raise ContentRejected(f"{detail}: {answer.text[:200]}")
        raise PassingError(detail)

    def _published(self, answer: Any) -> Published:
        try:
            body = answer.json()
            return Published(str(body["id"]), body.get("url"))
        except (ValueError, KeyError, TypeError):
            raise LostAnswer(
                f"{self.title} answered {answer.status_code} without an id; it may have taken it"
            ) from None


def _never_connected(error: BaseException) -> bool:
    """True when the connection was refused or not resolved: nothing was sent."""
    text = repr(error)
    return any(
        marker in text
        for marker in ("NewConnectionError", "Connection refused", "NameResolutionError")
    )


def _retry_after(answer: Any) -> float | None:
    value = answer.headers.get("Retry-After")
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None
