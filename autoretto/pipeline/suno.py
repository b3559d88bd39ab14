"""A client for a self-hosted gcui-art/suno-api server (https://github.com/gcui-art/suno-api).

That server signs in to Suno with the SUNO_COOKIE it was started with and has no API key of
its own (src/lib/SunoApi.ts, `sunoApi()`: the request's Cookie header when it holds `__client`,
else the SUNO_COOKIE variable). A bearer key is sent only when one is set, for a proxy in front.

A generation (POST /api/generate, or /api/custom_generate with the prompt as the style tags)
answers only once the server has solved Suno's hCaptcha, and the server goes on generating
after a client gave up. So a generation is paid at most once per make attempt:
- the account's recent clips are noted and a `submitting` note saved before the POST;
- the POST waits `submit_timeout` and is never retried;
- an answer that did not come (a timeout, a 5xx, a crash) is looked for among the recent clips
  (GET /api/get without ids) before anything is submitted again, in this run and the next; a
  submit not found `LOST_AFTER` later made nothing;
- the clip ids are saved in suno.json as soon as they are known, and a resumed make polls them.
A generation whose clips all end in `error` is given up with its reason; one unfinished
`hung_after` seconds after its submit is given up as hung. A new one is then submitted, at most
once per run and counted against `daily_generations`; after `max_generations` for one episode
the make stops until a person changes the prompt or discards the episode.
"""

from __future__ import annotations

import json
import logging
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path

from autoretto import clock
from autoretto.pipeline.errors import ProviderRefused, ProviderUnavailable
from autoretto.pipeline.http import PassingFailure, ProviderClient
from autoretto.pipeline.settings import SunoSettings

log = logging.getLogger("autoretto.pipeline.suno")

MAX_POLL_INTERVAL = 30.0
FAILED_STATUSES = {"error", "failed"}
FEED_PAGES = 3  # pages of recent clips looked through for a lost submit (20 clips a page)
# Well past the server's own waits for one submit (the create page 60 s, then 2Captcha's
# solving, tried three times; src/lib/SunoApi.ts getCaptcha): a lost submit whose clips are not
# among the recent ones by then made none.
LOST_AFTER = timedelta(minutes=15)
# What gcui's routes put in a 500 when Suno refused the server's sign-in: the error text of
# `sunoApi()` and getAuthToken, or the upstream axios error (src/app/api/get_limit/route.ts).
COOKIE_WORDS = ("SUNO_COOKIE", "provide a cookie", "status code 401")
# "Each generated audio consumes 5 credits" and a generation makes two clips
# (src/app/docs/swagger-suno-api.json, /api/get_limit).
CREDITS_PER_GENERATION = 10
COOKIE_REFUSAL = (
    "the suno-api server cannot sign in to Suno{status}: it uses the SUNO_COOKIE it was started "
    "with and has no API key of its own; sign in at suno.com, copy the Cookie header into the "
    "server's SUNO_COOKIE and restart it"
)

CountGeneration = Callable[[str, int], bool]


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
        if any(words in body for words in COOKIE_WORDS):
            return COOKIE_REFUSAL.format(status=f" (HTTP {status})")
        if status == 401:
            proxy = (
                f", or a proxy in front of it refused {self.settings.api_key_env}"
                if self._api_key
                else ""
            )
            return COOKIE_REFUSAL.format(status=" (HTTP 401)") + proxy
        if status == 402:
            return "suno says the account has no credits left (HTTP 402): top it up"
        if status == 403:
            return "suno refused the request (HTTP 403): the account may not do this"
        return None

    # -- one request each ----------------------------------------------------------------
    def submit(self, prompt: str, title: str) -> list[str]:
        """Start one paid generation; return its clip ids. Sent once, never retried: raises
        LostSubmit when the answer did not come back (the server may still be generating)."""
        body: dict = {
            "make_instrumental": self.settings.instrumental,
            "model": self.settings.model,
            "wait_audio": False,
        }
        if self.settings.custom:
            path = "/api/custom_generate"
            body.update({"prompt": "", "tags": prompt, "title": title})
        else:
            path = "/api/generate"
            body["prompt"] = prompt
        try:
            response = self._send_once(
                "POST",
                self.base_url + path,
                what="starting a generation",
                timeout=self.settings.submit_timeout,
                json=body,
            )
            answer = response.json()
        except PassingFailure as failure:
            raise LostSubmit(str(failure)) from None
        except ValueError:
            raise LostSubmit("the answer was not JSON") from None
        ids = [clip["id"] for clip in _clips(answer) if isinstance(clip.get("id"), str)]
        if not ids:
            raise LostSubmit("the answer held no clip ids")
        return ids

    def clips(self, ids: list[str]) -> dict[str, dict]:
        """The clips `ids` as the server shows them now, by id."""
        answer = self.call_json(
            "GET",
            "/api/get",
            params={"ids": ",".join(ids)},
            what="asking for the generation's status",
        )
        return {clip.get("id"): clip for clip in _clips(answer)}

    def recent_clips(self) -> list[dict]:
        """The account's most recent clips (the first FEED_PAGES pages of its feed), each once."""
        found: dict[str, dict] = {}
        for page in range(FEED_PAGES):
            answer = self.call_json(
                "GET",
                "/api/get",
                params={"page": str(page)} if page else None,
                what="listing the account's recent clips",
            )
            clips = _clips(answer)
            for clip in clips:
                found.setdefault(str(clip.get("id")), clip)
            if not clips:
                break
        return list(found.values())

    def credits(self) -> dict:
        """GET /api/get_limit: {credits_left, period, monthly_limit, monthly_usage}."""
        answer = self.call_json("GET", "/api/get_limit", what="asking for the credits left")
        if not isinstance(answer, dict) or "credits_left" not in answer:
            raise ProviderUnavailable("suno's answer about the credits had no credits_left")
        return answer

    def download(self, url: str, destination: Path) -> int:
        """Save the audio at `url` to `destination` (atomically); return its size in bytes.

        The audio is on Suno's CDN, another host: no credential goes along."""
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


class LostSubmit(Exception):
    """Internal: a generate call whose answer did not come back."""


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


@dataclass
class _Journal:
    """suno.json in the episode's folder: every generation of this episode and a submit under
    way. Saved atomically after every change."""

    path: Path
    generations: list[dict] = field(default_factory=list)
    submitting: dict | None = None

    @classmethod
    def load(cls, path: Path, now: datetime) -> _Journal:
        data = json.loads(path.read_text()) if path.exists() else {}
        generations = data.get("generations")
        if generations is None and data.get("ids"):  # written by an older version
            generations = [{"ids": data["ids"], "submitted_at": clock.iso(now)}]
        return cls(path, list(generations or []), data.get("submitting"))

    def save(self) -> None:
        partial = self.path.with_name(self.path.name + ".partial")
        partial.write_text(
            json.dumps({"generations": self.generations, "submitting": self.submitting}, indent=1)
        )
        os.replace(partial, self.path)

    def pending(self) -> dict | None:
        last = self.generations[-1] if self.generations else None
        return last if last is not None and not last.get("outcome") else None

    def known_ids(self) -> set[str]:
        return {clip_id for generation in self.generations for clip_id in generation["ids"]}

    def give_up(self, generation: dict, outcome: str, reason: str) -> None:
        generation.update({"outcome": outcome, "reason": reason})
        self.save()
        log.warning("suno generation %s given up (%s): %s", generation["ids"], outcome, reason)

    def last_reason(self) -> str:
        return next((g["reason"] for g in reversed(self.generations) if g.get("reason")), "")


class _Clock:
    """The moment a run has reached: its start plus what it waited (the sleeps, or the real
    time when that is more), so an injected sleep in tests moves time on too."""

    def __init__(self, sleep: Callable[[float], None]) -> None:
        self.sleep_function = sleep
        self.start, self.started, self.waited = clock.now(), time.monotonic(), 0.0

    def sleep(self, seconds: float) -> None:
        self.sleep_function(seconds)
        self.waited += seconds

    def now(self) -> datetime:
        elapsed = max(self.waited, time.monotonic() - self.started)
        return self.start + timedelta(seconds=elapsed)

    def since(self, moment: str) -> float:
        return (self.now() - clock.from_iso(moment)).total_seconds()


def fetch_track(
    settings: SunoSettings,
    api_key: str | None,
    *,
    prompt: str,
    title: str,
    workdir: Path,
    sleep: Callable[[float], None] = time.sleep,
    count_generation: CountGeneration | None = None,
) -> tuple[Path, dict]:
    """Generate (or resume waiting for) a track; return the downloaded file and its facts.

    `count_generation(provider, daily_cap)` counts a paid generation before it is submitted
    and returns False when the day's cap is reached. Raises ProviderUnavailable when the
    track is not there yet (the next run goes on), ProviderRefused when a person must act."""
    client = SunoClient(settings, api_key, sleep=sleep)
    moment = _Clock(sleep)
    journal = _Journal.load(workdir / "suno.json", moment.now())
    submitted = False
    while True:
        generation = journal.pending()
        if generation is None and journal.submitting is not None:
            generation = _find_lost_submit(client, journal, moment, prompt, title)
        if generation is None:
            if submitted:
                raise ProviderUnavailable(
                    f"suno could not make the track ({journal.last_reason()}); a new "
                    "generation is submitted on the next run"
                )
            generation = _submit(client, journal, moment, prompt, title, count_generation)
            submitted = True
            if generation is None:
                continue
        outcome, found = _wait_for_clip(client, generation, moment)
        if outcome == "complete":
            return _download(client, found, journal, workdir)
        journal.give_up(generation, outcome, found["reason"])


def _submit(
    client: SunoClient,
    journal: _Journal,
    moment: _Clock,
    prompt: str,
    title: str,
    count_generation: CountGeneration | None,
) -> dict | None:
    settings = client.settings
    used, episode = len(journal.generations), journal.path.parent.name
    if used >= settings.max_generations:
        raise ProviderRefused(
            f"suno did not make this episode's track in {used} generations (last: "
            f"{journal.last_reason()}); change the channel's prompt, raise [providers.suno] "
            f"max_generations, or drop it with `autoretto episode discard {episode}`"
        )
    left = client.credits().get("credits_left")
    if isinstance(left, (int, float)) and left < CREDITS_PER_GENERATION:
        raise ProviderUnavailable(
            f"the Suno account has {left:g} credits left and a generation costs "
            f"{CREDITS_PER_GENERATION}; it is submitted once the credits are back"
        )
    before = [clip.get("id") for clip in client.recent_clips()]
    if count_generation is not None and not count_generation("suno", settings.daily_generations):
        raise ProviderUnavailable(
            f"the day's {settings.daily_generations} Suno generations are used "
            "([providers.suno] daily_generations); the next is submitted tomorrow (UTC)"
        )
    journal.submitting = {"at": clock.iso(moment.now()), "before": before}
    journal.save()
    try:
        ids = client.submit(prompt, title)
    except LostSubmit as lost:
        log.warning("suno's answer to the generation was lost (%s); looking for it", lost)
        return _find_lost_submit(client, journal, moment, prompt, title)
    except ProviderRefused:
        journal.submitting = None  # refused before Suno generated anything
        journal.save()
        raise
    return _record(journal, ids, journal.submitting["at"])


def _record(journal: _Journal, ids: list[str], submitted_at: str) -> dict:
    generation = {"ids": ids, "submitted_at": submitted_at}
    journal.generations.append(generation)
    journal.submitting = None
    journal.save()
    return generation


def _find_lost_submit(
    client: SunoClient, journal: _Journal, moment: _Clock, prompt: str, title: str
) -> dict | None:
    """Look among the account's recent clips for what a submit whose answer was lost made,
    polling until it shows, the run's wait is spent, or LOST_AFTER has passed since it.
    Returns the generation found; None when nothing came of it (a new one may be submitted);
    raises ProviderUnavailable when it may still come (the next run looks again)."""
    settings, note = client.settings, journal.submitting
    before, known = set(note.get("before") or ()), journal.known_ids()
    interval = settings.poll_interval
    while True:
        new = [
            clip
            for clip in client.recent_clips()
            if clip.get("id") not in before
            and clip.get("id") not in known
            and _same_request(clip, settings, prompt, title)
        ]
        if new:
            ids = [clip["id"] for clip in reversed(new)]  # the feed is newest first
            log.info("found the lost submit's clips %s", ids)
            return _record(journal, ids, note["at"])
        age = moment.since(note["at"])
        if age >= LOST_AFTER.total_seconds():
            reason = "its answer was lost and no clip of it appeared"
            journal.generations.append(
                {"ids": [], "submitted_at": note["at"], "outcome": "lost", "reason": reason}
            )
            journal.submitting = None
            journal.save()
            return None
        if moment.waited >= settings.max_wait:
            raise ProviderUnavailable(
                "suno's answer to the generation was lost and its clips are not among the "
                "account's recent ones yet; the next run looks for them again before "
                "submitting anything"
            )
        pause = min(interval, settings.max_wait - moment.waited)
        moment.sleep(pause)
        interval = min(interval * 1.5, MAX_POLL_INTERVAL)


def _same_request(clip: dict, settings: SunoSettings, prompt: str, title: str) -> bool:
    if settings.custom:
        return clip.get("title") == title and clip.get("tags") == prompt
    return clip.get("gpt_description_prompt") == prompt


def _wait_for_clip(client: SunoClient, generation: dict, moment: _Clock) -> tuple[str, dict]:
    """Poll until one clip of `generation` is complete: ("complete", clip). ("failed", {reason})
    when every clip ended in error, ("hung", {reason}) once hung_after has passed since its
    submit; raises ProviderUnavailable when this run's max_wait is spent first.

    Waits grow from poll_interval by half each time, at most 30 s."""
    settings, ids = client.settings, generation["ids"]
    interval, this_run = settings.poll_interval, moment.waited
    while True:
        clips = client.clips(ids)
        for clip_id in ids:
            clip = clips.get(clip_id) or {}
            # While `streaming` the audio_url is a live stream that is not the whole track.
            if clip.get("status") == "complete" and clip.get("audio_url"):
                return "complete", clip
        statuses = [str((clips.get(clip_id) or {}).get("status")) for clip_id in ids]
        if statuses and all(status in FAILED_STATUSES for status in statuses):
            detail = next(
                (clips[i]["error_message"] for i in ids if clips.get(i, {}).get("error_message")),
                f"status {statuses[0]}",
            )
            return "failed", {"reason": detail}
        age = moment.since(generation["submitted_at"])
        if age >= settings.hung_after:
            shown = ", ".join(sorted(set(statuses)))
            return "hung", {"reason": f"still {shown} {_span(age)} after its submit"}
        waited = moment.waited - this_run
        if waited >= settings.max_wait:
            raise ProviderUnavailable(
                f"suno did not finish the track within {settings.max_wait:g} s "
                f"(status {', '.join(statuses)}); the next run polls the same clips again"
            )
        pause = min(interval, settings.max_wait - waited, settings.hung_after - age)
        log.debug("suno clips %s are %s; waiting %.1f s", ids, statuses, pause)
        moment.sleep(max(pause, 0.0))
        interval = min(interval * 1.5, MAX_POLL_INTERVAL)


def _download(
    client: SunoClient, clip: dict, journal: _Journal, workdir: Path
) -> tuple[Path, dict]:
    url = clip["audio_url"]
    suffix = Path(url.split("?", 1)[0]).suffix.lower()
    destination = workdir / f"suno{suffix if suffix in ('.mp3', '.wav', '.m4a') else '.mp3'}"
    client.download(url, destination)
    generation = journal.generations[-1]
    facts = {
        "audio": "suno",
        "clip_id": clip["id"],
        "clip_ids": generation["ids"],
        "generations": len(journal.generations),
        "title": clip.get("title") or None,
        "model": clip.get("model_name") or client.settings.model,
        "tags": clip.get("tags"),
    }
    return destination, {key: value for key, value in facts.items() if value is not None}


def _span(seconds: float) -> str:
    return f"{seconds / 60:.0f} minutes" if seconds >= 120 else f"{seconds:.0f} s"


def credits_left(settings: SunoSettings, api_key: str | None) -> dict:
    """What `doctor` shows for Suno: the server's answer to /api/get_limit."""
    return SunoClient(settings, api_key).credits()
