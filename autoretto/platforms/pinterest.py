"""Pinterest (API v5): a video Pin that a person makes, never twice.

Like TikTok, Pinterest is never on a slot: `autoretto post pinterest EPISODE` lets a person
choose the board, texts, link and cover frame (`screen`, `ask_choices`); the answers, a
`PinterestChoices`, are given to the instance for that one post and saved in its handles.

A Pin (PLATFORMS.md §9):

1. `POST /v5/media` registers a video; its `media_id` is saved on the attempt at once.
2. The video goes to the returned `upload_url` as multipart/form-data with *every* field of
   `upload_parameters` (presigned fields, sent as given) and the `file` field last.
3. `GET /v5/media/{id}` is polled until `succeeded` (`failed`: a new media next try).
4. `POST /v5/pins` with the board, texts, alt text, the cover frame (whole seconds), and the
   attempt's marker at the end of the description; the moment of that call is saved before it
   is made.

Never twice: a later try (or `_find_attempt`) of a post whose create call went out lists the
board's Pins and matches the marker in their descriptions before creating again. The marker
rides in `description` because the v5 description (pinterest/api-description v5/openapi.json)
has no other free text that `PinCreate` takes and `Pin` gives back: the private `note` of
earlier descriptions is gone from both since 5.20.0.

Access: posting is off, with a plain explanation, until `[platforms.pinterest] approved = true`
(the app approved by Pinterest). An app with Trial access may create Pins only on the sandbox
host: `sandbox = true` sends every call to `sandbox_base` (Pins there are visible only to you).
Continuous refresh tokens rotate on every refresh; the new one is saved under the account lock.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from functools import partial
from pathlib import Path
from typing import Any, ClassVar
from urllib.parse import urlsplit

from .. import accounts
from ..errors import UsageError
from ..oauth import TokenEndpoint, json_body
from ..questions import (
    Ask,
    Cancelled,
    Say,
    VideoFacts,
    ask_number,
    ask_text,
    ask_yes_no,
    show_video,
)
from .base import (
    Choices,
    ContentRejected,
    EpisodeView,
    NeedsPerson,
    PassingError,
    PlatformError,
    PostRequest,
    Published,
)
from .http import ByHand, CreatesOnce, sign_in_tokens
from .signin import Attempt, Draft, Flag, Secret, SignIn
from .text import TextField, chars

log = logging.getLogger("autoretto.platforms.pinterest")

NAME = "pinterest"
TITLE = "Pinterest"
# Every scope the calls used declare (v5/openapi.json security): POST /v5/pins lists
# boards:read, boards:write, pins:read and pins:write; /v5/user_account user_accounts:read.
SCOPES = ("boards:read", "boards:write", "pins:read", "pins:write", "user_accounts:read")
PIN_URL = "https://www.pinterest.com/pin/{}/"

TITLE_MAX = 100
PIN_DESCRIPTION_MAX = 800  # PinCreate.description maxLength
MARKER_ROOM = 60  # kept free at the description's end for the attempt's marker
DESCRIPTION_MAX = PIN_DESCRIPTION_MAX - MARKER_ROOM  # what a person may write
LINK_MAX = 2048
ALT_TEXT_MAX = 500
TRIAL_CODE = 29

NOT_APPROVED = (
    "Pinterest posting is off until your Pinterest app is approved for API access: apply on "
    "developers.pinterest.com (My apps), then set approved = true in [platforms.pinterest] "
    "(with Trial access also sandbox = true)"
)
TRIAL_ONLY = (
    "this Pinterest app has Trial access, which creates Pins only in the sandbox: set "
    "sandbox = true in [platforms.pinterest] (those Pins are visible only to you) or apply "
    "for Standard access"
)


@dataclass(frozen=True)
class PinterestChoices(Choices):
    """What the person chose on the posting screen."""

    board_id: str
    title: str
    description: str = ""
    link: str = ""
    alt_text: str = ""
    cover_seconds: float = 0.0
    board_name: str = ""


@dataclass(frozen=True)
class PinterestScreen:
    """Everything the Pinterest posting screen shows before the person chooses."""

    episode_id: int
    episode_title: str
    account: str
    sandbox: bool
    boards: list[dict[str, Any]]
    video: VideoFacts
    default_title: str
    default_description: str
    default_alt_text: str
    default_cover_seconds: float
    already: str | None = None


def default_cover(duration: float | None) -> float:
    """The cover frame offered first: a third into the video (past any fade-in), in tenths."""
    if not duration or duration <= 0:
        return 0.0
    return round(duration / 3, 1)


def choice_problems(choices: PinterestChoices, *, duration: float | None = None) -> list[str]:
    """Every way `choices` break Pinterest's limits, in plain words (empty: fine)."""
    problems = []
    if not choices.board_id:
        problems.append("choose a board")
    if not choices.title.strip():
        problems.append("give the Pin a title")
    for value, limit, what in (
        (choices.title, TITLE_MAX, "title"),
        (choices.description, DESCRIPTION_MAX, "description (800, less room for the marker)"),
        (choices.link, LINK_MAX, "link"),
        (choices.alt_text, ALT_TEXT_MAX, "alt text"),
    ):
        if len(value) > limit:
            problems.append(f"the {what} is longer than Pinterest's {limit} characters")
    if choices.link and urlsplit(choices.link).scheme not in ("http", "https"):
        problems.append("the link must start with https:// (or http://)")
    if not math.isfinite(choices.cover_seconds):
        problems.append("the cover frame must be a number of seconds, e.g. 2.5")
    elif choices.cover_seconds < 0:
        problems.append("the cover frame must be at 0 seconds or later")
    elif duration is not None and choices.cover_seconds > duration:
        problems.append(f"the cover frame must be within the video's {duration:.1f} seconds")
    return problems


def marked_description(description: str, marker: str) -> str:
    """The Pin's description with the attempt's marker at its end, within 800 characters."""
    suffix = f"\n\n{marker}" if description else marker
    room = PIN_DESCRIPTION_MAX - len(suffix)
    if len(description) > room:
        description = description[: max(0, room - 1)].rstrip() + "…"
    return description + suffix


# -- the platform ----------------------------------------------------------------------------------


class PinterestPlatform(ByHand, CreatesOnce):
    name = NAME
    title = TITLE
    carousel_note = "it is posted by hand (`autoretto post pinterest`), never on a slot"
    posts_called: ClassVar[str] = "Pins"
    created_key: ClassVar[str] = "pin_id"
    choices_type: ClassVar[type | None] = PinterestChoices
    # -- comments and replies (issue 28) ---------------------------------------------------
    comments: ClassVar[str | None] = "none"
    comments_note: ClassVar[str] = (
        "Pinterest's API v5 has no endpoint for a Pin's comments (its published description, "
        "https://github.com/pinterest/api-description, lists none): answer them on Pinterest"
    )
    text_fields: ClassVar[dict[str, TextField] | None] = {
        "title": TextField("title", (("characters", chars, TITLE_MAX),)),
        "description": TextField("short", (("characters", chars, PIN_DESCRIPTION_MAX),)),
        "alt_text": TextField("artwork", (("characters", chars, ALT_TEXT_MAX),)),
    }
    # API v5 (the /v5/ paths), no announced end: listed by doctor; nothing to choose.
    api_version: ClassVar[str | None] = "v5"
    api_versions: ClassVar[dict[str, str | None]] = {"v5": None}
    api_version_source: ClassVar[str] = "https://developers.pinterest.com/docs/api/v5/"
    settings_defaults: ClassVar[dict[str, Any]] = {
        "approved": False,  # the Pinterest app is approved for API access (Trial or Standard)
        "sandbox": False,  # Trial access: every call to sandbox_base
        "api_base": "https://api.pinterest.com",
        "sandbox_base": "https://api-sandbox.pinterest.com",
        "auth_uri": "https://www.pinterest.com/oauth/",
        "token_uri": "https://api.pinterest.com/v5/oauth/token",
        "app_id": "",
        "app_secret_env": "PINTEREST_APP_SECRET",
        "redirect_uri": "http://127.0.0.1:8765/callback/",
        "continuous_refresh": True,  # ask for continuous refresh tokens (older apps must)
        "format": "vertical",
        "timeout": 60.0,
        "upload_timeout": 600.0,
        "poll_wait": 5.0,  # seconds between media status polls
        "poll_tries": 120,
        "find_pages": 3,  # pages of 100 board Pins read when looking for an attempt
    }
    address_settings = ("api_base", "sandbox_base", "auth_uri", "token_uri")
    setting_choices: ClassVar[dict[str, tuple[str, ...]]] = {"format": ("vertical", "landscape")}
    positive_settings = ("poll_tries", "find_pages")

    #: the token endpoint takes the app's id and secret as HTTP Basic; continuous refresh
    #: tokens are asked for on every refresh
    #: (https://developers.pinterest.com/docs/getting-started/authentication-and-scopes/)
    token_endpoint = TokenEndpoint(
        "app_id", "app_secret", auth="basic", flags=("continuous_refresh",)
    )

    signin: ClassVar[SignIn] = SignIn(
        help="""Connect a Pinterest account for `autoretto post pinterest`.

        Continuous refresh tokens keep it connected. With Trial access, set sandbox = true and
        connect with --sandbox-token instead (the token is read from $PINTEREST_SANDBOX_TOKEN,
        else asked for without echo).

        Example: autoretto connect pinterest --app-id 1234567
        """,
        flags=(
            Flag(
                "--app-id",
                "Your Pinterest app id. Default: app_id of [platforms.pinterest].",
            ),
            Flag(
                "--sandbox-token",
                "Paste a sandbox access token (My apps › Manage) instead of signing in.",
                kind="bool",
            ),
        ),
        id_key="app_id",
        id_missing="give your Pinterest app id (--app-id, or app_id in [platforms.pinterest]); "
        "find it on developers.pinterest.com under My apps",
        secret=Secret("App secret", env_setting="app_secret_env"),
        scopes=SCOPES,
        scope_separator=",",
        button="Give access",
        needs_browser=lambda given: not given.get("sandbox_token"),
    )

    @classmethod
    def secret_for(cls, given: dict[str, Any]) -> Secret | None:
        if given.get("sandbox_token"):
            return Secret("Sandbox access token", env="PINTEREST_SANDBOX_TOKEN")
        return cls.signin.secret

    @classmethod
    def check_sign_in(cls, attempt: Attempt) -> None:
        if attempt.given.get("sandbox_token") and not attempt.settings["sandbox"]:
            raise UsageError(
                "a sandbox token works only with sandbox = true in [platforms.pinterest]"
            )

    @classmethod
    def exchange_extra(cls, settings: dict[str, Any]) -> dict[str, str]:
        return {"continuous_refresh": "true"} if settings["continuous_refresh"] else {}

    @classmethod
    def signed_in(cls, attempt: Attempt) -> Draft:
        """The tokens (or the pasted sandbox token) and the account of /v5/user_account."""
        settings = attempt.settings
        if attempt.given.get("sandbox_token"):
            tokens: accounts.Tokens = {"access_token": attempt.client.secret, "expires_at": None}
        else:
            continuous = bool(settings["continuous_refresh"])
            tokens = sign_in_tokens(cls, attempt, continuous_refresh=continuous)
        url = cls.for_sign_in(attempt).url("/v5/user_account")
        what = "show the signed-in account"
        user = cls.sign_in_call(attempt, "GET", url, what=what, token=tokens["access_token"])
        username = str(user.get("username") or user.get("id") or "")
        return Draft(
            account_id=str(user.get("id") or username),
            name=username,
            tokens=tokens,
            meta={
                "username": username,
                "sandbox": bool(settings["sandbox"]),
                "refresh_expires_at": attempt.ends("refresh_token_expires_in"),
                "scopes": attempt.granted(),
            },
            lines=[
                f"Connected Pinterest account {username}.",
                "Pin with `autoretto post pinterest EPISODE`.",
            ],
        )

    def choice_problems(
        self, choices: Any, *, duration: float | None, creator: Any = None
    ) -> list[str]:
        return choice_problems(choices, duration=duration)

    def screen(self, view: EpisodeView, video: VideoFacts, already: str | None) -> PinterestScreen:
        """The account's boards, the video, the default texts and cover frame."""
        boards = self.list_boards()
        if not boards:
            raise UsageError("this Pinterest account has no board; make one on pinterest.com first")
        fitted = view.texts.get(self.name) or {}
        description = str(fitted.get("description") or view.description)
        alt_text = str(fitted.get("alt_text") or f"Artwork for {view.title}")
        account = self.account_row()
        return PinterestScreen(
            episode_id=view.id,
            episode_title=view.title,
            account=account.name if account else "",
            sandbox=bool(self.settings["sandbox"]),
            boards=boards,
            video=video,
            default_title=str(fitted.get("title") or view.title)[:TITLE_MAX],
            default_description=description[:PIN_DESCRIPTION_MAX],
            default_alt_text=alt_text[:ALT_TEXT_MAX],
            default_cover_seconds=default_cover(video.duration),
            already=already,
        )

    @classmethod
    def ask_choices(cls, screen: PinterestScreen, ask: Ask, say: Say) -> PinterestChoices:
        """The screen's questions; the person's choices (Cancelled when the person declines)."""
        say(f"Pinning to Pinterest as {screen.account}", style="bold")
        if screen.sandbox:
            say("Sandbox (Trial access): this Pin is visible only to you.", style="bold yellow")
        say(f'Episode {screen.episode_id}: "{screen.episode_title}"')
        show_video(screen, say)
        if screen.already:
            say(f"Note: {screen.already}", style="yellow")
        say("Which board?")
        labels = [
            board["name"] + (" (secret)" if board.get("privacy") == "SECRET" else "")
            for board in screen.boards
        ]
        board = screen.boards[ask_number(ask, say, "Board", labels)]
        text = partial(ask_text, ask, say)
        title = text("Title", screen.default_title, limit=TITLE_MAX, required=True)
        description = text(
            "Description", screen.default_description, limit=DESCRIPTION_MAX, required=False
        )
        while True:
            link = text("Link (empty: none)", "", limit=LINK_MAX, required=False)
            if not link or link.startswith(("https://", "http://")):
                break
            say("The link must start with https://", style="yellow")
        alt_text = text("Alt text", screen.default_alt_text, limit=ALT_TEXT_MAX, required=False)
        duration = screen.video.duration
        cover_prompt = f"Cover frame, seconds into the video [{screen.default_cover_seconds}]"
        while True:
            answer = ask(cover_prompt).strip()
            try:
                cover = float(answer) if answer else screen.default_cover_seconds
                if not math.isfinite(cover):  # float() takes "nan" and "inf"
                    raise ValueError(answer)
            except ValueError:
                say("Type a number of seconds, e.g. 2.5", style="yellow")
                continue
            if cover < 0 or (duration and cover > duration):
                say(f"Choose a time from 0 to {duration or 0:.1f} seconds.", style="yellow")
                continue
            break
        choices = PinterestChoices(
            board_id=board["id"],
            board_name=board["name"],
            title=title,
            description=description,
            link=link,
            alt_text=alt_text,
            cover_seconds=cover,
        )
        problems = choice_problems(choices, duration=duration)
        if problems:
            raise Cancelled("; ".join(problems))
        say(f'Board "{board["name"]}", title "{title}", cover at {cover} s.')
        if not ask_yes_no(ask, say, "Pin it now?"):
            raise Cancelled("nothing was posted")
        return choices

    def url(self, path: str) -> str:
        """The address of an API path: on the sandbox host for Trial access."""
        key = "sandbox_base" if self.settings["sandbox"] else "api_base"
        return self.settings[key].rstrip("/") + path

    # -- readiness ---------------------------------------------------------------------------------

    def not_ready_reason(self) -> str | None:
        if not self.settings["approved"]:
            return NOT_APPROVED
        if account_problem := super().not_ready_reason():
            return account_problem
        account = self.account_row()
        if bool(account.meta.get("sandbox")) != bool(self.settings["sandbox"]):
            where = "the sandbox" if account.meta.get("sandbox") else "production"
            return (
                f"the Pinterest account was connected for {where}; connect again after changing "
                "sandbox in [platforms.pinterest]"
            )
        return None

    # -- calls -------------------------------------------------------------------------------------

    def classify(self, response: Any, *, sends: bool = False) -> PlatformError:
        if json_body(response).get("code") == TRIAL_CODE:
            return NeedsPerson(f"Pinterest: {TRIAL_ONLY}")
        return super().classify(response, sends=sends)

    def list_boards(self) -> list[dict[str, Any]]:
        """The account's boards (id, name, privacy), every page."""
        return [
            {
                "id": str(board.get("id")),
                "name": str(board.get("name") or ""),
                "privacy": str(board.get("privacy") or ""),
            }
            for page in self._pages("/v5/boards", pages=20)
            for board in page
        ]

    def _pages(self, path: str, *, pages: int) -> Iterator[list[dict[str, Any]]]:
        bookmark = None
        for _ in range(pages):
            # requests leaves out the first page's bookmark (None)
            answer = self.api("GET", path, params={"page_size": 100, "bookmark": bookmark})
            yield [item for item in answer.get("items") or [] if isinstance(item, dict)]
            bookmark = answer.get("bookmark")
            if not bookmark:
                return

    # -- publish -----------------------------------------------------------------------------------

    def _publish(self, request: PostRequest) -> Published:
        if not self.settings["approved"]:
            raise NeedsPerson(NOT_APPROVED)
        return super()._publish(request)

    def _send(self, request: PostRequest, choices: PinterestChoices) -> Published:
        video = self.video_file(request.episode)
        problems = choice_problems(choices, duration=request.episode.duration)
        if problems:
            raise ContentRejected("Pinterest: " + "; ".join(problems))
        handles = self.handles(request)
        found = self.look(handles)  # an earlier try sent the create call and never heard back
        if found is not None:
            return found
        media_id = self._ready_media(request, handles, video)
        markers = [*handles.get("markers", []), request.marker]
        body = {
            "board_id": choices.board_id,
            "title": choices.title,
            "description": marked_description(choices.description, request.marker),
            "alt_text": choices.alt_text,
            "media_source": {
                "source_type": "video_id",
                "media_id": media_id,
                # an integer of seconds (PinMediaSourceVideoID.cover_image_key_frame_time)
                "cover_image_key_frame_time": int(choices.cover_seconds + 0.5),
            },
        }
        if choices.link:
            body["link"] = choices.link
        if request.episode.ai_generated:
            # PinCreate `ai_disclosures` (API 5.28): the creator's AI declarations, AI_MODIFIED
            # or SYNTHETIC_PERFORMER (https://developers.pinterest.com/docs/api/v5/pins-create/;
            # pinterest/api-description v5/changelog-5.23-to-5.28.md)
            body["ai_disclosures"] = {"values": ["AI_MODIFIED"]}

        def send() -> str:
            return str(self.api("POST", "/v5/pins", json=body, sends=True).get("id") or "")

        record = {"board_id": choices.board_id, "markers": markers, "choices": choices.to_json()}
        pin = self.create(request, handles, send, **record)
        log.info("pinterest: post %s made as Pin %s", request.post_id, pin.platform_post_id)
        return pin

    def _ready_media(self, request: PostRequest, handles: dict[str, Any], video: Path) -> str:
        """A processed media id: the earlier try's when it is still good, else a new one."""
        media_id = handles.get("media_id")
        if media_id and handles.get("media_uploaded"):
            state = str(self.api("GET", f"/v5/media/{media_id}").get("status") or "")
            if state in ("registered", "processing", "succeeded"):
                self._wait_processed(request, handles, media_id)
                return media_id
        answer = self.api("POST", "/v5/media", json={"media_type": "video"})
        media_id = str(answer.get("media_id") or "")
        upload_url = answer.get("upload_url")
        fields = answer.get("upload_parameters") or {}
        if not media_id or not upload_url:
            raise PassingError("Pinterest registered the video without an upload address")
        handles.update({"media_id": media_id, "media_uploaded": False})
        self.save(request, handles)  # the media id is on record first
        self._upload(upload_url, fields, video)
        handles["media_uploaded"] = True
        self.save(request, handles)
        request.heartbeat()
        self._wait_processed(request, handles, media_id)
        return media_id

    def _upload(self, upload_url: str, fields: dict[str, Any], video: Path) -> None:
        """POST the video as multipart/form-data: every given field as is, `file` last. The
        address carries its own signature: no token goes there. (An upload is no Pin: sending
        it again costs nothing but time.)"""
        with open(video, "rb") as body:
            response = self.call(
                "POST",
                upload_url,
                signed=False,
                check=False,
                data={str(key): str(value) for key, value in fields.items()},
                files={"file": (video.name, body, "video/mp4")},
                timeout=self.settings["upload_timeout"],
            )
        if response.status_code >= 300:
            raise PassingError(
                f"Pinterest's upload host refused the video (HTTP {response.status_code})"
            )

    def _wait_processed(self, request: PostRequest, handles: dict[str, Any], media_id: str) -> None:
        for attempt in range(int(self.settings["poll_tries"])):
            if attempt:
                self.sleep(self.settings["poll_wait"])
            state = str(self.api("GET", f"/v5/media/{media_id}").get("status") or "")
            if state == "succeeded":
                return
            if state == "failed":
                handles.pop("media_id", None)
                handles.pop("media_uploaded", None)
                self.save(request, handles)
                raise PassingError("Pinterest could not process the video; it is uploaded anew")
            request.heartbeat()
        raise PassingError("Pinterest is still processing the video; try again in a while")

    # -- finding an attempt ------------------------------------------------------------------------

    def post_url(self, post_id: str) -> str:
        return PIN_URL.format(post_id)

    def recent_posts(self, handles: dict[str, Any], since: datetime) -> Iterator[list[dict]]:
        """The Pins of the attempt's board, newest first."""
        if handles.get("board_id"):
            pages = int(self.settings["find_pages"])
            yield from self._pages(f"/v5/boards/{handles['board_id']}/pins", pages=pages)

    def is_attempt(self, post: dict[str, Any], handles: dict[str, Any]) -> bool:
        """One of the attempt's markers in the Pin's description."""
        description = str(post.get("description") or "")
        return any(marker in description for marker in handles.get("markers") or [])


__all__ = ["PinterestChoices", "PinterestPlatform", "choice_problems"]
