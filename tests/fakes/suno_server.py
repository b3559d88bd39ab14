"""A local stand-in for a gcui-art/suno-api server, answering as its route handlers do.

Facts from https://github.com/gcui-art/suno-api (src/app/api/*/route.ts, src/lib/SunoApi.ts):
- The server signs in to Suno with the SUNO_COOKIE it was started with (or a request's Cookie
  header holding `__client`); it has no API key of its own, so an Authorization header is
  ignored. A cookie that no longer signs in fails inside the route as "Failed to get session
  id, you may need to update the SUNO_COOKIE", answered 500 `{"error": "Internal error: …"}`.
- Every error body is `{"error": "<text>"}`. POST /api/generate answers Suno's 402 as 402
  `{"error": <detail>}` and any other upstream status as that status with
  `{"error": "API Error: <detail>"}`; /api/custom_generate passes the status with
  `{"error": <detail>}`; GET /api/get and /api/get_limit answer every failure 500.
- The generate call answers only after the captcha is solved (often tens of seconds) and the
  clips exist from then on, whether or not the client is still waiting.
- GET /api/get?ids=a,b lists those clips; without ids it lists the account's recent clips
  (Suno's feed, newest first, `page` to go further back).
- A clip is submitted → queued → streaming → complete (the swagger's status field), or
  error with `error_message`. While streaming, `audio_url` is a live stream on audiopipe
  (`https://audiopipe.suno.ai/?item_id=<id>`, SunoAI-API/Suno-API#6); once complete it is the
  mp3 on the CDN (`https://cdn1.suno.ai/<id>.mp3`, gcui-art/suno-api#105). A failed clip's
  URL is `…/None.mp3`, which the CDN refuses (gcui-art/suno-api#146). The audio is served
  from those other hosts, so nothing of the server's credentials belongs there.
- GET /api/get_limit answers `{credits_left, period, monthly_limit, monthly_usage}`.
- The generate routes read only the fields they name (src/app/api/generate/route.ts: `prompt,
  make_instrumental, model, wait_audio`; custom_generate adds `tags, title, negative_tags`)
  and ignore any other: `Boolean(make_instrumental)`, so a misnamed `instrumental` makes a
  song with vocals, and `model || DEFAULT_MODEL` ('chirp-v3-5', src/lib/SunoApi.ts), so a
  missing model is the server's default. `generations` keeps what the server read of each
  call (`make_instrumental`, `model`, `model_sent`); a clip made with vocals has its lyrics.

with FakeSuno(audio=mp3_bytes) as suno:
    suno.pending_polls = 3          # three status answers before "complete"
    suno.failures = [503, 500]      # the next requests fail with these statuses first
    suno.submit_delay = 2.0         # the generate call takes this long (the captcha)
    ... SunoSettings(base_url=suno.url) ...
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

from tests.fakes.base import SHUTDOWN_POLL as POLL

FEED_PAGE = 20
DEFAULT_MODEL = "chirp-v3-5"  # gcui-art/suno-api src/lib/SunoApi.ts
#: what each generate route reads of its JSON body (src/app/api/*/route.ts)
GENERATE_FIELDS = ("prompt", "make_instrumental", "model", "wait_audio")
CUSTOM_FIELDS = (*GENERATE_FIELDS, "tags", "title", "negative_tags")
LYRICS = "[Verse]\nRain on the glass, the city hums low"
COOKIE_FAILURE = "Failed to get session id, you may need to update the SUNO_COOKIE"


class _Server:
    def __init__(self, handler) -> None:
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def start(self) -> None:
        threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": POLL}, daemon=True
        ).start()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


class FakeSuno:
    def __init__(
        self,
        audio: bytes = b"",
        *,
        proxy_key: str | None = None,
        created_at: str = "2026-11-29T12:00:00.000Z",
    ) -> None:
        self.audio = audio
        self.proxy_key = proxy_key  # a reverse proxy in front that wants a bearer token
        self.created_at = created_at
        self.cookie_ok = True  # False: the server's SUNO_COOKIE no longer signs in
        self.upstream_status: int | None = None  # Suno refuses the server with this status
        self.refuse_submit: int | None = None  # Suno refuses only the generate call (402: credits)
        self.lose_next_submit = False  # a proxy in front answers the next generate call 502
        self.pending_polls = 0  # status answers per clip before its final status
        self.failures: list[int] = []  # statuses to answer with before behaving
        self.malformed = False  # answer JSON routes with an HTML error page
        self.clip_status = "complete"  # final status ("error" to fail the generation)
        self.error_message = "Unable to generate: moderation"
        self.submit_delay = 0.0  # seconds the generate call takes before the clips exist
        self.credits_left = 470
        self.requests: list[tuple[str, str, dict | None, dict]] = []
        self.cdn_requests: list[tuple[str, dict]] = []
        self.submitted = 0  # generate calls that reached the server (each one is paid)
        self.feed: list[dict] = []  # every clip of the account, newest first
        self.generations: list[dict] = []  # what the server read of each generate call
        self._polls: dict[str, int] = {}
        self._lock = threading.Lock()
        self._api = _Server(self._api_handler())
        self._cdn = _Server(self._cdn_handler())
        self.url = self._api.url
        self.cdn_url = self._cdn.url

    def __enter__(self) -> FakeSuno:
        self._api.start()
        self._cdn.start()
        return self

    def __exit__(self, *exc) -> None:
        self._api.stop()
        self._cdn.stop()

    # -- the account's clips ----------------------------------------------------------------
    def _generate(self, body: dict, custom: bool) -> list[dict]:
        read = {key: body.get(key) for key in (CUSTOM_FIELDS if custom else GENERATE_FIELDS)}
        instrumental = bool(read["make_instrumental"])
        model = read["model"] or DEFAULT_MODEL
        with self._lock:
            self.generations.append(
                {
                    "make_instrumental": instrumental,
                    "model": model,
                    "model_sent": bool(read["model"]),
                    "ignored": sorted(set(body) - set(read)),
                }
            )
            number = len(self.feed) // 2 + 1
            clips = []
            for letter in "ab":
                clip = {
                    "id": f"clip-{number}{letter}",
                    "title": body.get("title", "") if custom else "",
                    "image_url": None,
                    "lyric": "" if instrumental else LYRICS,
                    "audio_url": "",
                    "video_url": "",
                    "created_at": self.created_at,
                    "model_name": model,
                    "status": "submitted",
                    "gpt_description_prompt": "" if custom else body.get("prompt", ""),
                    "prompt": body.get("prompt", "") if custom else "",
                    "type": "gen",
                    "tags": read["tags"] if custom else None,
                    "negative_tags": read["negative_tags"] if custom else None,
                    "duration": None,
                }
                clips.append(clip)
            self.feed[:0] = clips[::-1]  # newest first
            return [dict(clip) for clip in clips]

    def _status_of(self, clip: dict, *, poll: bool) -> dict:
        """The clip as /api/get shows it; a poll by id moves it along."""
        with self._lock:
            count = self._polls.get(clip["id"], 0) + (1 if poll else 0)
            self._polls[clip["id"]] = count
        shown = {key: value for key, value in clip.items() if key != "negative_tags"}
        if count <= self.pending_polls:
            status = "submitted" if count <= 1 else "streaming"
            if self.pending_polls >= 4 and 1 < count <= self.pending_polls // 2:
                status = "queued"
        else:
            status = self.clip_status
        shown["status"] = status
        shown["error_message"] = self.error_message if status == "error" else None
        if status == "streaming":
            shown["audio_url"] = f"{self.cdn_url}/?item_id={clip['id']}"
        elif status == "complete":
            shown["audio_url"] = f"{self.cdn_url}/{clip['id']}.mp3"
            shown["title"] = shown["title"] or "Rain on Glass"
            shown["duration"] = 8.0
        elif status == "error":
            shown["audio_url"] = f"{self.cdn_url}/None.mp3"
        if status in ("streaming", "complete") and not clip["tags"]:
            shown["tags"] = "lofi, chill"
        return shown

    # -- the server ----------------------------------------------------------------------
    def _api_handler(self):
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:
                pass

            def _send(self, status: int, body: bytes, kind: str = "application/json") -> None:
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", kind)
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up waiting; what was done stays done

            def _json(self, status: int, value) -> None:
                if fake.malformed:
                    self._send(200, b"<html>502 Bad Gateway</html>", "text/html")
                else:
                    self._send(status, json.dumps(value).encode())

            def _error(self, status: int, text: str) -> None:
                self._send(status, json.dumps({"error": text}).encode())

            def _gate(self, body: dict | None) -> bool:
                parts = urlsplit(self.path)
                fake.requests.append((self.command, parts.path, body, dict(self.headers)))
                if fake.failures:
                    self._error(fake.failures.pop(0), "Internal error: busy")
                    return False
                if fake.proxy_key and self.headers.get("Authorization") != (
                    f"Bearer {fake.proxy_key}"
                ):
                    self._send(401, b"Unauthorized", "text/plain")
                    return False
                return True

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length)
                try:
                    body = json.loads(raw or b"{}")
                except ValueError:
                    body = None
                if not self._gate(body):
                    return
                route = urlsplit(self.path).path
                if route not in ("/api/generate", "/api/custom_generate"):
                    self._send(404, b"<html>404: This page could not be found.</html>", "text/html")
                    return
                if fake.lose_next_submit:
                    fake.lose_next_submit = False  # never reached the server: nothing made
                    self._send(502, b"<html>502 Bad Gateway</html>", "text/html")
                    return
                custom = route == "/api/custom_generate"
                prefix = "Error: " if custom else "Internal error: "
                if body is None:
                    self._error(500, prefix + "Unexpected token in JSON")
                    return
                if not fake.cookie_ok:
                    self._error(500, prefix + COOKIE_FAILURE)
                    return
                if fake.upstream_status or fake.refuse_submit:
                    status = fake.upstream_status or fake.refuse_submit
                    detail = "Insufficient credits" if status == 402 else "Unauthorized"
                    plain = custom or status == 402
                    self._error(status, detail if plain else f"API Error: {detail}")
                    return
                with fake._lock:
                    fake.submitted += 1
                if fake.submit_delay:
                    time.sleep(fake.submit_delay)  # the captcha; the clips come after it
                self._json(200, fake._generate(body, custom))

            def do_GET(self) -> None:
                if not self._gate(None):
                    return
                parts = urlsplit(self.path)
                query = parse_qs(parts.query)
                if parts.path not in ("/api/get", "/api/get_limit"):
                    self._send(404, b"<html>404: This page could not be found.</html>", "text/html")
                    return
                if not fake.cookie_ok or fake.upstream_status:
                    if parts.path == "/api/get":
                        self._error(500, "Internal server error")
                    elif not fake.cookie_ok:
                        self._error(500, f"Internal server error. Error: {COOKIE_FAILURE}")
                    else:
                        code = fake.upstream_status
                        self._error(
                            500,
                            f"Internal server error. AxiosError: Request failed with status code "
                            f"{code}",
                        )
                    return
                if parts.path == "/api/get_limit":
                    self._json(
                        200,
                        {
                            "credits_left": fake.credits_left,
                            "period": "month",
                            "monthly_limit": 500,
                            "monthly_usage": 500 - fake.credits_left,
                        },
                    )
                    return
                ids = [i for i in query.get("ids", [""])[0].split(",") if i]
                with fake._lock:
                    feed = list(fake.feed)
                if ids:
                    known = {clip["id"]: clip for clip in feed}
                    found = [fake._status_of(known[i], poll=True) for i in ids if i in known]
                else:
                    page = int(query.get("page", ["0"])[0] or 0)
                    window = feed[page * FEED_PAGE : (page + 1) * FEED_PAGE]
                    found = [fake._status_of(clip, poll=False) for clip in window]
                self._json(200, found)

        return Handler

    def _cdn_handler(self):
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:
                pass

            def do_GET(self) -> None:
                fake.cdn_requests.append((self.path, dict(self.headers)))
                parts = urlsplit(self.path)
                if parts.path == "/" and "item_id" in parse_qs(parts.query):
                    body, status = fake.audio[: len(fake.audio) // 3], 200  # a stream, unfinished
                elif parts.path.endswith(".mp3") and parts.path != "/None.mp3":
                    body, status = fake.audio, 200
                else:
                    body, status = b"<Error><Code>AccessDenied</Code></Error>", 403
                self.send_response(status)
                self.send_header("Content-Type", "audio/mpeg" if status == 200 else "text/xml")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        return Handler
