"""A client for a self-hosted suno-api compatible endpoint.

Submit a generation (POST /api/generate, or /api/custom_generate with the prompt as the
style tags), poll GET /api/get?ids=... until a clip's status is "complete", download its
audio_url. Each clip id is saved before polling so a resumed make polls the same clips
instead of paying for a second generation.
"""

from __future__ import annotations

import json
import logging
import os
import time
from collections.abc import Callable
from pathlib import Path

from autoretto.pipeline.errors import ProviderRefused, ProviderUnavailable
from autoretto.pipeline.http import ProviderClient
from autoretto.pipeline.settings import SunoSettings

log = logging.getLogger("autoretto.pipeline.suno")

MAX_POLL_INTERVAL = 30.0
FAILED_STATUSES = {"error", "failed"}


class SunoClient(ProviderClient):
    name = "suno"

    def __init__(
        self,
        settings: SunoSettings,
        api_key: str | None,
        *,
        sleep: Callable[[float], None] = time.sleep,
        session=None,
    ) -> None:
        if not settings.base_url:
            raise ProviderRefused(
                'audio = "suno" needs [providers.suno] base_url (your suno-api server)'
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
        return {"Authorization": f"Bearer {self._api_key}"} if self._api_key else {}

    def refusal(self, status: int, body: str) -> str | None:
        if status == 401:
            return (
                "suno refused the API key (HTTP 401): check the vault entry suno_api_key "
                f"or {self.settings.api_key_env}"
            )
        if status == 402:
            return "suno says the account has no credits left (HTTP 402): top it up"
        if status == 403:
            return "suno refused the request (HTTP 403): the account or key may not do this"
        return None

    def submit(self, prompt: str, title: str) -> list[str]:
        """Start a generation; return the clip ids."""
        body: dict = {"make_instrumental": self.settings.instrumental, "wait_audio": False}
        if self.settings.model:
            body["model"] = self.settings.model
        if self.settings.custom:
            path = "/api/custom_generate"
            body.update({"prompt": "", "tags": prompt, "title": title})
        else:
            path = "/api/generate"
            body["prompt"] = prompt
        answer = self.call_json("POST", path, json=body, what="starting a generation")
        clips = _clips(answer)
        ids = [clip["id"] for clip in clips if isinstance(clip.get("id"), str)]
        if not ids:
            raise ProviderUnavailable("suno accepted the generation but returned no clip ids")
        return ids

    def wait_for_clip(self, ids: list[str]) -> dict:
        """Poll until one of `ids` is complete with an audio_url; return that clip.

        Waits grow from poll_interval by half each time (at most 30 s); after max_wait
        seconds of waiting in total, raises ProviderUnavailable.
        """
        waited, interval = 0.0, self.settings.poll_interval
        while True:
            answer = self.call_json(
                "GET",
                "/api/get",
                params={"ids": ",".join(ids)},
                what="asking for the generation's status",
            )
            clips = {clip.get("id"): clip for clip in _clips(answer)}
            for clip_id in ids:
                clip = clips.get(clip_id) or {}
                if clip.get("status") == "complete" and clip.get("audio_url"):
                    return clip
            statuses = [str((clips.get(clip_id) or {}).get("status")) for clip_id in ids]
            if statuses and all(status in FAILED_STATUSES for status in statuses):
                detail = next(
                    (
                        clips[i].get("error_message")
                        for i in ids
                        if clips.get(i, {}).get("error_message")
                    ),
                    None,
                )
                raise ProviderUnavailable(
                    "suno could not generate the track"
                    + (f": {detail}" if detail else f" (status {statuses[0]})")
                )
            if waited >= self.settings.max_wait:
                raise ProviderUnavailable(
                    f"suno did not finish the track within {self.settings.max_wait:g} s "
                    f"(status {', '.join(statuses)}); the next run polls the same clips again"
                )
            pause = min(interval, self.settings.max_wait - waited)
            log.debug("suno clips %s are %s; waiting %.1f s", ids, statuses, pause)
            self.sleep(pause)
            waited += pause
            interval = min(interval * 1.5, MAX_POLL_INTERVAL)

    def download(self, url: str, destination: Path) -> int:
        """Save the audio at `url` to `destination` (atomically); return its size in bytes."""
        partial = destination.with_name(destination.name + ".partial")
        response = self.call("GET", url, what="downloading the audio", stream=True)
        size = 0
        with open(partial, "wb") as handle:
            for chunk in response.iter_content(chunk_size=1 << 16):
                handle.write(chunk)
                size += len(chunk)
        if size == 0:
            partial.unlink(missing_ok=True)
            raise ProviderUnavailable("suno's audio download was empty")
        os.replace(partial, destination)
        return size


def _clips(answer) -> list[dict]:
    if isinstance(answer, dict):
        for key in ("clips", "data"):
            if isinstance(answer.get(key), list):
                answer = answer[key]
                break
        else:
            answer = [answer] if "id" in answer else []
    if not isinstance(answer, list):
        raise ProviderUnavailable("suno's answer was not a list of clips")
    return [clip for clip in answer if isinstance(clip, dict)]


def fetch_track(
    settings: SunoSettings,
    api_key: str | None,
    *,
    prompt: str,
    title: str,
    workdir: Path,
    sleep: Callable[[float], None] = time.sleep,
) -> tuple[Path, dict]:
    """Generate (or resume waiting for) a track; return the downloaded file and facts."""
    client = SunoClient(settings, api_key, sleep=sleep)
    state_path = workdir / "suno.json"
    state = json.loads(state_path.read_text()) if state_path.exists() else {}
    ids = state.get("ids")
    if not ids:
        ids = client.submit(prompt, title)
        partial = state_path.with_name("suno.json.partial")
        partial.write_text(json.dumps({"ids": ids}))
        os.replace(partial, state_path)
    clip = client.wait_for_clip(ids)
    url = clip["audio_url"]
    suffix = Path(url.split("?", 1)[0]).suffix.lower()
    destination = workdir / f"suno{suffix if suffix in ('.mp3', '.wav', '.m4a') else '.mp3'}"
    client.download(url, destination)
    facts = {
        "audio": "suno",
        "clip_id": clip["id"],
        "clip_ids": ids,
        "title": clip.get("title"),
        "model": clip.get("model_name") or settings.model,
        "tags": clip.get("tags"),
    }
    return destination, {key: value for key, value in facts.items() if value is not None}
