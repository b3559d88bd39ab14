"""Instagram Reels (Instagram API with Instagram Login), and the container protocol it shares
with Threads.

Meta's Instagram and Threads APIs publish a video the same way (PLATFORMS.md §3, §6): the
platform fetches the video from a URL into a *container*, processes it, and one more call
publishes the container. `GraphContainerPlatform` holds that protocol once; `InstagramPlatform`
and `ThreadsPlatform` (threads.py) name their edges and fields and fit their own text.

Never twice (ARCHITECTURE.md §3):

1. The video is offered at a media host link (autoretto/mediahost.py) that lives only while the
   container is made and processed. The container id is saved on the attempt (`save_handles`)
   as soon as the platform names it, before any wait or publish.
2. Processing is polled with bounded waits: `wait_first` seconds, then up to `polls` checks
   `wait_between` seconds apart. ERROR or EXPIRED make a new container (at most
   `containers_per_try` a try) unless the platform says the video itself is wrong (`INVALID_*`,
   or a subcode that means "fix the file"): then the episode is rejected.
3. A container can be published once. A retry that finds a saved container asks it first:
   PUBLISHED → the earlier publish went through (the post is looked up, nothing is sent);
   FINISHED → publish it; IN_PROGRESS → wait; ERROR/EXPIRED/gone → a new container.
4. A publish whose answer is lost is settled by the container: PUBLISHED → found, otherwise a
   lost answer that the next run checks the same way before anything else.
5. `find_attempt` asks the saved container, else lists the account's recent posts and matches a
   short token derived from the attempt's marker, which ends the caption (`marker_in_caption`).

The token (a 60-day long-lived token; there is no separate refresh token) is refreshed under the
account lock once it is a day old, as Meta allows (`grant_type=ig_refresh_token` /
`th_refresh_token`); a refresh that fails while the token is still good is not a failed post.
Token errors (190 and 401) and missing permissions mark the account `reconnect`.

Caps: the live publishing limit (`content_publishing_limit` / `threads_publishing_limit`) is
read before the call; Threads adds a configured cap of its own. A reached cap names itself and
spends no try. Every request has a timeout and carries the token in the Authorization header,
never in a URL that could be logged.
"""

from __future__ import annotations

import hashlib
import logging
import re
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import replace
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from .. import accounts
from ..clock import from_iso, iso, now
from ..errors import AutorettoError
from ..oauth import json_body
from .base import (
    ContentRejected,
    EpisodeView,
    LimitReached,
    LostAnswer,
    NeedsPerson,
    PassingError,
    PlatformError,
    PostRequest,
    Published,
)
from .http import refresh_request
from .meta import (
    GRAPH_VERSION_PATTERN,
    GRAPH_VERSIONS,
    GRAPH_VERSIONS_SOURCE,
    TOKEN_SUBCODES,
    GraphPlatform,
    graph_problem,
)
from .signin import Attempt, Draft, Flag, Secret, SignIn, choose
from .text import TextField, chars, hashtag_count, mention_count

if TYPE_CHECKING:
    from ..mediahost import MediaHost, MediaHostSettings
    from ..paths import Paths

log = logging.getLogger("autoretto.platforms.instagram")

NAME = "instagram"
TITLE = "Instagram"
CAPTION_MAX_CHARS = 2200
CAPTION_MAX_HASHTAGS = 30
#: Meta's long-lived tokens last 60 days and may be refreshed once they are a day old
LONG_LIVED = timedelta(days=60)
REFRESH_AGE = timedelta(days=1)
#: a token still good for this long is used even when its refresh failed
USABLE_MARGIN = timedelta(minutes=5)
#: a processing wait that ran out is left to a later slot, not retried inside the job
LATER_SECONDS = 3600.0
#: error subcodes that mean "the account's publishing limit is reached"
LIMIT_SUBCODES = {2207042}
#: error subcodes Meta answers with HTTP 400 that mean "try again" (a new container where it
#: must be): download timeout, expired, server error, create failed, unknown upload error, and
#: "media not ready yet" (2207027) on a publish
RETRY_SUBCODES = {2207001, 2207003, 2207020, 2207027, 2207032, 2207053}
#: container error subcodes that mean the video itself must change (PLATFORMS.md §3)
REJECTING_SUBCODES = ("2207057", "2207026")
PROFESSIONAL_TYPES = {"BUSINESS", "MEDIA_CREATOR", "CREATOR"}


# -- text -------------------------------------------------------------------------------------


def marker_token(marker: str) -> str:
    """The short token that ends a caption so an attempt can be found in a listing."""
    return "ar" + hashlib.sha256(marker.encode("utf-8")).hexdigest()[:10]


_HASHTAG = re.compile(r"(?<![\w#])#\w+")


def source_text(episode: EpisodeView, platform: str, *, hashtags: bool) -> str:
    """The episode's copy for `platform`: its fitted text when the pipeline made one, else the
    title and description (and its tags as hashtags where the platform likes them)."""
    fitted = episode.texts.get(platform)
    if isinstance(fitted, str) and fitted.strip():
        return fitted.strip()
    if isinstance(fitted, dict):
        for key in ("caption", "text", "description"):
            if isinstance(fitted.get(key), str) and fitted[key].strip():
                return fitted[key].strip()
    parts = [episode.title.strip(), episode.description.strip()]
    text = "\n\n".join(part for part in parts if part)
    if hashtags:
        present = {tag.lower() for tag in _HASHTAG.findall(text)}
        extra = []
        for tag in episode.tags:
            word = "#" + re.sub(r"\W", "", str(tag))
            if len(word) > 1 and word.lower() not in present:
                present.add(word.lower())
                extra.append(word)
        if extra:
            text += "\n\n" + " ".join(extra)
    return text


def fit_caption(
    text: str,
    marker: str = "",
    *,
    limit: int = CAPTION_MAX_CHARS,
    hashtags: int = CAPTION_MAX_HASHTAGS,
) -> str:
    """An Instagram caption: at most `hashtags` hashtags (the first ones kept), at most `limit`
    characters with the marker line, cut with an ellipsis where it must be."""
    kept = 0

    def keep(found: re.Match[str]) -> str:
        nonlocal kept
        kept += 1
        return found[0] if kept <= hashtags else ""

    text = _HASHTAG.sub(keep, text)
    text = re.sub(r"[ \t]+\n", "\n", re.sub(r"[ \t]{2,}", " ", text)).strip()
    suffix = f"\n\n{marker}" if marker else ""
    room = limit - len(suffix)
    if len(text) > room:
        text = text[: room - 1].rstrip() + "…"
    return text + suffix


# -- the shared container protocol ---------------------------------------------------------


def graph_signin(title: str, name: str, variable: str, what: str) -> SignIn:
    """The sign-in of a Meta product with its own login (Instagram, Threads): the code
    becomes a short-lived token, then a 60-day one, which is its own refresh grant.
    https://developers.facebook.com/docs/instagram-platform/instagram-api-with-instagram-login/business-login
    https://developers.facebook.com/docs/threads/get-started/get-access-tokens-and-permissions"""
    return SignIn(
        help=f"""Connect {what}.

        Example: autoretto connect {name} --app-id 1234567890
        """,
        flags=(
            Flag(
                "--app-id",
                "The Meta app's id for this product. Default: app_id of the platform settings.",
            ),
            Flag(
                "--account",
                "The account to post as (id or username), when the sign-in offers several.",
            ),
        ),
        id_key="app_id",
        id_missing=f"give the Meta app's {title} app id with --app-id or app_id in "
        f"[platforms.{name}]",
        secret=Secret(f"{title} app secret (or set ${{variable}})", env_setting="app_secret_env"),
        scope_separator=",",
    )


class GraphContainerPlatform(GraphPlatform):
    """A Meta platform that publishes a video through a container fetched from a URL."""

    can_find_attempts = True
    #: protocol names, set by each platform
    container_edge: ClassVar[str]
    publish_edge: ClassVar[str]
    limit_edge: ClassVar[str]
    listing_edge: ClassVar[str]
    text_param: ClassVar[str]
    state_field: ClassVar[str]
    detail_field: ClassVar[str]
    media_type: ClassVar[str]
    refresh_grant: ClassVar[str]
    exchange_grant: ClassVar[str]
    scopes: ClassVar[tuple[str, ...]]

    #: a long-lived token is refreshed once it is a day old, as Meta allows
    refresh_margin = LONG_LIVED - REFRESH_AGE

    @classmethod
    def sign_in_scopes(cls, settings: dict[str, Any], given: dict[str, Any]) -> list[str]:
        return list(cls.scopes)

    @classmethod
    def exchange_code(cls, attempt: Attempt, code: str) -> dict[str, Any]:
        """The code becomes a short-lived token, then a long-lived (60-day) one."""
        return _long_lived(attempt, cls, _exchange_code(attempt, cls, code))

    @classmethod
    def signed_in(cls, attempt: Attempt) -> Draft:
        """The account to post as (`--account`, or a numbered prompt when there are several);
        Meta has no separate refresh token: the long-lived token is its own refresh grant."""
        settings, long_lived = attempt.settings, attempt.answer
        chosen = choose(
            cls.accounts_of(attempt, long_lived["access_token"]),
            attempt.given.get("account"),
            person=attempt.person,
            title=cls.title,
        )
        expires_in = int(long_lived.get("expires_in") or LONG_LIVED.total_seconds())
        expires_at = iso(now() + timedelta(seconds=expires_in))
        lines = [
            f'Connected {cls.title} account "{chosen["name"]}" ({chosen["id"]}).',
            f"It lasts until {expires_at} and Autoretto renews it while it posts.",
        ]
        if settings.get("media_host") is None:
            lines.append(
                f"{cls.title} fetches videos from a link: add a [media_host] section to the "
                "config before the first post."
            )
        return Draft(
            account_id=chosen["id"],
            name=chosen["name"],
            tokens={
                "access_token": long_lived["access_token"],
                "refresh_token": long_lived["access_token"],
                "expires_at": expires_at,
                "scopes": list(cls.scopes),
            },
            meta={"username": chosen["name"], "token_expires_at": expires_at},
            lines=lines,
        )

    address_settings = ("api_base", "auth_uri", "token_uri")
    positive_settings = ("polls", "containers_per_try", "find_limit")

    @classmethod
    def parse_settings(cls, table: dict[str, Any], *, path: Path, paths: Paths) -> Any:
        from ..mediahost import parse_media_host

        table = dict(table)
        media_host = table.pop("media_host", None)
        settings = super().parse_settings(table, path=path, paths=paths)
        if media_host is not None:
            settings["media_host"] = parse_media_host(
                media_host, path=path, prefix=f"platforms.{cls.name}.media_host"
            )
        return settings

    # -- readiness -------------------------------------------------------------------------

    def not_ready_reason(self) -> str | None:
        account_problem = super().not_ready_reason()
        if account_problem:
            return account_problem
        if self.settings.get("media_host") is None:
            return (
                f"{self.title} fetches the video from a link: add a [media_host] section to the "
                "config (see the README, 'The media host')"
            )
        return None

    def token_expires_at(self) -> datetime | None:
        """When the connected account's token dies unless refreshed (for `status`/`doctor`)."""
        account = self.account_row()
        if account is None:
            return None
        text = account.meta.get("token_expires_at")
        if not text and self.context.db is not None:
            try:
                text = accounts.open_tokens(self.context.db, self.home, account).get("expires_at")
            except AutorettoError:
                return None
        return from_iso(text) if text else None

    def limit_reason(self, request: PostRequest) -> str | None:
        account = self.account_row()
        if account is None or account.state != "connected":
            return None
        own = self._own_cap_reason()
        if own:
            return own
        try:
            used, total = self._live_limit()
        except LimitReached as error:
            return error.reason
        except PlatformError as error:
            # The publish call enforces the limit too; not knowing it is no reason to wait.
            log.warning("%s: could not read the publishing limit: %s", self.name, error.reason)
            return None
        if total is not None and used >= total:
            return (
                f"{self.title}'s publishing limit is used: {used} of {total} posts in the last "
                "24 hours"
            )
        return None

    def _own_cap_reason(self) -> str | None:
        cap = int(self.settings.get("daily_cap") or 0)
        if cap <= 0:
            return None
        since = iso((self.context.now or now()) - timedelta(hours=24))
        found = self.db.execute(
            "SELECT COUNT(*) FROM posts WHERE platform = ? AND state = 'published'"
            " AND published_at >= ?",
            (self.name, since),
        ).fetchone()
        count = int(found[0]) if found else 0
        if count >= cap:
            return (
                f"the {self.title} cap is reached: {count} of {cap} posts in the last 24 hours "
                f"(daily_cap of [platforms.{self.name}])"
            )
        return None

    def _live_limit(self) -> tuple[int, int | None]:
        body = self.retrying(
            lambda: self.graph(
                "GET",
                f"{self.account().account_id}/{self.limit_edge}",
                params={"fields": "quota_usage,config"},
            )
        )
        data = body.get("data")
        entry = data[0] if isinstance(data, list) and data else {}
        config = entry.get("config") if isinstance(entry, dict) else None
        total = config.get("quota_total") if isinstance(config, dict) else None
        return int(entry.get("quota_usage") or 0), int(total) if total is not None else None

    # -- tokens ---------------------------------------------------------------------------------

    def tokens(self, rejected: str | None = None) -> accounts.Tokens:
        tokens = super().tokens(rejected)
        expires_at = tokens.get("expires_at")
        account = self.account()
        if expires_at and account.meta.get("token_expires_at") != expires_at:
            accounts.update_meta(self.db, account, {"token_expires_at": expires_at})
            self._account = replace(account, meta={**account.meta, "token_expires_at": expires_at})
        return tokens

    def refresh_failed(self, error: accounts.RefreshFailed) -> accounts.Tokens:
        """The stored token when a refresh failed but the token still has time left."""
        tokens = accounts.open_tokens(self.db, self.home, self.account())
        expires_at = tokens.get("expires_at")
        if expires_at and from_iso(expires_at) - USABLE_MARGIN <= now():
            raise PassingError(f"{self.title}: {error}", retry_after=error.retry_after)
        log.warning(
            "%s: token refresh failed (%s); the current token is still good", self.name, error
        )
        return tokens

    def refresh(self, tokens: accounts.Tokens) -> dict[str, Any]:
        """Meta's refresh of a long-lived token (the token itself is the grant)."""
        expires_at = tokens.get("expires_at")
        if expires_at and from_iso(expires_at) <= now():
            raise accounts.RefreshRefused(f"the 60-day token expired on {expires_at}")
        answer = refresh_request(
            self.title,
            "GET",
            f"{self.settings['api_base'].rstrip('/')}/refresh_access_token",
            params={"grant_type": self.refresh_grant, "access_token": tokens["access_token"]},
            timeout=self.settings["timeout"],
        )
        body = json_body(answer)
        if answer.status_code == 200 and body.get("access_token"):
            # No separate refresh token: the new token is the next refresh's grant too.
            return {**body, "refresh_token": body["access_token"]}
        error, code, subcode, _ = graph_problem(body, answer.status_code)
        if code == 190 or answer.status_code == 401:
            said = TOKEN_SUBCODES.get(subcode or 0) or str(error.get("message") or "refused")[:200]
            raise accounts.RefreshRefused(said)
        raise accounts.RefreshFailed(
            f"{self.title} answered {answer.status_code} to a token refresh"
        )

    def own_error(self, code: int | None, subcode: int | None, said: str) -> PlatformError | None:
        if subcode in LIMIT_SUBCODES:
            return LimitReached(f"{self.title}'s publishing limit is reached ({said})")
        if subcode in RETRY_SUBCODES:
            return PassingError(f"{self.title} asks to try again ({said}; {subcode})")
        return None

    # -- publish ------------------------------------------------------------------------------

    def video_of(self, episode: EpisodeView) -> str | None:
        raise NotImplementedError

    def fit_text(self, text: str, marker: str) -> str:
        raise NotImplementedError

    @classmethod
    def accounts_of(cls, attempt: Attempt, token: str) -> list[dict[str, str]]:
        """The accounts a new sign-in may post as: [{"id", "username"}]."""
        raise NotImplementedError

    def _media_host(self) -> MediaHost:
        from ..mediahost import open_media_host

        settings: MediaHostSettings | None = self.settings.get("media_host")
        if settings is None:
            raise NeedsPerson(self.not_ready_reason() or f"{self.title} needs a media host")
        return open_media_host(settings, self.home)

    @contextmanager
    def _hosted(self, host: MediaHost, video: Path) -> Iterator[str]:
        """The media host's link to `video` for the length of the block."""
        from ..mediahost import MediaHostError

        with ExitStack() as stack:
            try:
                url = stack.enter_context(host.publish(video))
            except MediaHostError as error:
                kind = PassingError if error.passing else NeedsPerson
                raise kind(f"{self.title}: {error}") from None
            except OSError as error:
                raise PassingError(f"{self.title}: the media host failed ({error})") from None
            yield url

    def _publish(self, request: PostRequest) -> Published:
        path = self.video_of(request.episode)
        if not path:
            raise ContentRejected(self.unsuitable_reason(request.episode) or "no video")
        video = Path(path)
        if not video.is_file():
            raise ContentRejected(f"the episode's video {video} is missing")
        host = self._media_host()
        self.tokens()
        handles = dict(request.handles)
        return self.retrying(lambda: self._attempt(request, handles, video, host))

    def _attempt(
        self, request: PostRequest, handles: dict[str, Any], video: Path, host: MediaHost
    ) -> Published:
        container = handles.get("container_id")
        if container:
            state, detail = self._container_state(container)
            if state == "IN_PROGRESS":
                state, detail = self._wait(container, request, first=False)
            settled = self._settle(request, handles, state, detail)
            if settled is not None:
                return settled
            log.info("%s: container %s is %s; making a new one", self.name, container, state)
        problem: PlatformError = PassingError(f"{self.title} made no container")
        for _ in range(self.settings["containers_per_try"]):
            with self._hosted(host, video) as url:
                container = self._create_container(request, handles, url)
                state, detail = self._wait(container, request, first=True)
            settled = self._settle(request, handles, state, detail)
            if settled is not None:
                return settled
            problem = self._container_failure(state, detail)
            log.info("%s: container %s is %s (%s)", self.name, container, state, detail)
        raise problem

    def _settle(
        self, request: PostRequest, handles: dict[str, Any], state: str, detail: str
    ) -> Published | None:
        """Go on from a container's state: published, publish it, wait for a later slot, or
        None when a new container is wanted (a video the platform refuses raises)."""
        if state == "PUBLISHED":
            return self._published(request, handles)
        if state == "FINISHED":
            return self._publish_container(request, handles)
        if state == "IN_PROGRESS":
            raise PassingError(
                f"{self.title} is still processing the video; the next try checks it again",
                retry_after=LATER_SECONDS,
            )
        failure = self._container_failure(state, detail)
        if isinstance(failure, ContentRejected):
            raise failure
        handles.pop("container_id", None)
        request.save_handles(dict(handles))
        return None

    def _container_failure(self, state: str, detail: str) -> PlatformError:
        if state == "EXPIRED":
            return PassingError(f"the {self.title} container expired before it was published")
        if "INVALID_" in detail.upper() or any(code in detail for code in REJECTING_SUBCODES):
            return ContentRejected(f"{self.title} refused the video: {detail}")
        if state == "GONE":
            return PassingError(f"{self.title} no longer knows the container ({detail})")
        return PassingError(f"{self.title} could not process the video ({detail or 'no reason'})")

    def _create_container(self, request: PostRequest, handles: dict[str, Any], url: str) -> str:
        marker = marker_token(request.marker)
        text_marker = marker if self.settings["marker_in_caption"] else ""
        fields = {
            "media_type": self.media_type,
            "video_url": url,
            self.text_param: self.fit_text(self._source(request.episode), text_marker),
            **self._extra_fields(),
        }
        body = self.retrying(
            lambda: self.graph(
                "POST", f"{self.account().account_id}/{self.container_edge}", data=fields
            )
        )
        container = str(body.get("id") or "")
        if not container:
            raise PassingError(f"{self.title} answered without a container id")
        markers = [m for m in handles.get("markers", []) if m != marker] + [marker]
        handles.update({"container_id": container, "markers": markers})
        handles.pop("media_id", None)
        request.save_handles(dict(handles))  # before any wait or publish
        log.info("%s: container %s made for post %s", self.name, container, request.post_id)
        return container

    def _source(self, episode: EpisodeView) -> str:
        return source_text(episode, self.name, hashtags=False)

    def _extra_fields(self) -> dict[str, str]:
        return {}

    def _container_state(self, container: str) -> tuple[str, str]:
        """(state, detail) of a container; ("GONE", why) when the platform no longer has it."""
        try:
            body = self.retrying(
                lambda: self.graph(
                    "GET", container, params={"fields": f"{self.state_field},{self.detail_field}"}
                )
            )
        except ContentRejected as gone:
            return "GONE", gone.reason
        state = str(body.get(self.state_field) or "IN_PROGRESS").upper()
        return state, str(body.get(self.detail_field) or "")

    def _wait(self, container: str, request: PostRequest, *, first: bool) -> tuple[str, str]:
        """Poll the container with the platform's advised waits until it leaves IN_PROGRESS or
        the polls run out."""
        if first:
            self.sleep(float(self.settings["wait_first"]))
        state, detail = "IN_PROGRESS", ""
        for poll in range(self.settings["polls"]):
            if poll or not first:
                self.sleep(float(self.settings["wait_between"]))
            state, detail = self._container_state(container)
            request.heartbeat()
            if state != "IN_PROGRESS":
                break
        return state, detail

    def _publish_container(self, request: PostRequest, handles: dict[str, Any]) -> Published:
        container = handles["container_id"]
        try:
            body = self.graph(
                "POST",
                f"{self.account().account_id}/{self.publish_edge}",
                data={"creation_id": container},
                sends=True,
            )
        except (PassingError, LostAnswer) as error:
            return self._after_unclear_publish(request, handles, error)
        media_id = str(body.get("id") or "")
        if not media_id:
            return self._after_unclear_publish(
                request, handles, LostAnswer(f"{self.title} answered the publish without an id")
            )
        handles["media_id"] = media_id
        request.save_handles(dict(handles))
        log.info("%s: post %s published as %s", self.name, request.post_id, media_id)
        return Published(media_id, self._permalink(media_id))

    def _after_unclear_publish(
        self, request: PostRequest, handles: dict[str, Any], error: PlatformError
    ) -> Published:
        """The publish may or may not have gone through: the container says which."""
        container = handles["container_id"]
        try:
            state, _ = self._container_state(container)
        except PlatformError:
            state = "UNKNOWN"
        if state == "PUBLISHED":
            return self._published(request, handles)
        if state == "FINISHED" and isinstance(error, PassingError):
            raise error  # refused before publishing: safe to publish again
        raise LostAnswer(
            f"{self.title} did not confirm the publish ({error.reason}); the container "
            f"{container} is checked before anything else"
        )

    def _published(self, request: PostRequest, handles: dict[str, Any]) -> Published:
        """The container is published: find the post it became."""
        media_id = handles.get("media_id")
        url = None
        if not media_id:
            found = self._find_by_markers(self._markers(request, handles))
            if found is None:
                raise LostAnswer(
                    f"{self.title} shows the container published but the post is not listed "
                    "yet; it is looked for again later"
                )
            media_id, url = str(found["id"]), found.get("permalink")
            handles["media_id"] = media_id
            request.save_handles(dict(handles))
        return Published(media_id, url or self._permalink(media_id))

    def _permalink(self, media_id: str) -> str | None:
        try:
            body = self.retrying(
                lambda: self.graph("GET", media_id, params={"fields": "permalink"})
            )
        except PlatformError as error:
            log.warning("%s: no permalink for %s: %s", self.name, media_id, error.reason)
            return None
        return body.get("permalink")

    # -- finding an attempt -----------------------------------------------------------------

    @staticmethod
    def _markers(request: PostRequest, handles: dict[str, Any]) -> set[str]:
        return {marker_token(request.marker), *handles.get("markers", [])}

    def _find_by_markers(self, markers: set[str]) -> dict[str, Any] | None:
        """The newest posts of the account, searched for one ending with a marker token."""
        text_field = self.text_param
        body = self.retrying(
            lambda: self.graph(
                "GET",
                f"{self.account().account_id}/{self.listing_edge}",
                params={
                    "fields": f"id,{text_field},permalink,timestamp",
                    "limit": self.settings["find_limit"],
                },
            )
        )
        for item in body.get("data") or []:
            if not isinstance(item, dict) or not item.get("id"):
                continue
            if set(str(item.get(text_field) or "").split()) & markers:
                return item
        return None

    def _find_attempt(self, request: PostRequest) -> Published | None:
        self.tokens()
        handles = dict(request.handles)
        if handles.get("media_id"):
            return Published(handles["media_id"], self._permalink(handles["media_id"]))
        container = handles.get("container_id")
        if container:
            state, _ = self._container_state(container)
            if state == "PUBLISHED":
                return self._published(request, handles)
            if state != "GONE":
                return None  # a container is published only through us, and this one is not
        found = self._find_by_markers(self._markers(request, handles))
        if found is None:
            return None
        media_id = str(found["id"])
        return Published(media_id, found.get("permalink") or self._permalink(media_id))


class InstagramPlatform(GraphContainerPlatform):
    """Instagram Reels on a professional account: the episode's ≤ 90-second vertical edit."""

    name = NAME
    title = TITLE
    # https://developers.facebook.com/docs/instagram-platform/instagram-graph-api/reference/ig-user/media
    texts_title: ClassVar[str | None] = "Instagram Reels"
    text_fields: ClassVar[dict[str, TextField] | None] = {
        "caption": TextField(
            "description",
            (
                ("characters", chars, CAPTION_MAX_CHARS),
                ("hashtags", hashtag_count, CAPTION_MAX_HASHTAGS),
                ("@-mentions", mention_count, 20),
            ),
        ),
    }
    # graph.instagram.com follows the Graph API's versions and dates (meta.py).
    api_version: ClassVar[str | None] = "v23.0"
    api_versions: ClassVar[dict[str, str | None]] = GRAPH_VERSIONS
    api_version_source: ClassVar[str] = GRAPH_VERSIONS_SOURCE
    api_version_pattern: ClassVar[str] = GRAPH_VERSION_PATTERN
    api_version_example: ClassVar[str] = "v23.0"
    container_edge = "media"
    publish_edge = "media_publish"
    limit_edge = "content_publishing_limit"
    listing_edge = "media"
    text_param = "caption"
    state_field = "status_code"
    detail_field = "status"
    media_type = "REELS"
    refresh_grant = "ig_refresh_token"
    exchange_grant = "ig_exchange_token"
    scopes = ("instagram_business_basic", "instagram_business_content_publish")
    signin: ClassVar[SignIn] = graph_signin(
        TITLE,
        NAME,
        "INSTAGRAM_APP_SECRET",
        "an Instagram professional account (Business or Creator) for Reels",
    )
    settings_defaults: ClassVar[dict[str, Any]] = {
        "api_base": "https://graph.instagram.com",
        "api_version": "",  # the Graph API version; empty: the one declared above
        "auth_uri": "https://www.instagram.com/oauth/authorize",
        "token_uri": "https://api.instagram.com/oauth/access_token",
        "app_id": "",
        "app_secret_env": "INSTAGRAM_APP_SECRET",
        "redirect_uri": "https://localhost/",
        "share_to_feed": True,
        "marker_in_caption": True,
        "wait_first": 10,  # seconds before the first look at a new container
        "wait_between": 15,
        "polls": 40,
        "containers_per_try": 2,
        "timeout": 60,
        "find_limit": 50,
        "media_host": None,  # a [platforms.instagram.media_host] table, else the [media_host]
    }

    def unsuitable_reason(self, episode: EpisodeView) -> str | None:
        if not episode.videos.get("reels"):
            return (
                "Instagram Reels need the episode's ≤ 90-second vertical edit, and this episode "
                "has none that passed its gates"
            )
        return None

    def video_of(self, episode: EpisodeView) -> str | None:
        return episode.videos.get("reels")

    def _source(self, episode: EpisodeView) -> str:
        return source_text(episode, self.name, hashtags=True)

    def fit_text(self, text: str, marker: str) -> str:
        return fit_caption(text, marker)

    def _extra_fields(self) -> dict[str, str]:
        return {"share_to_feed": "true" if self.settings["share_to_feed"] else "false"}

    @classmethod
    def accounts_of(cls, attempt: Attempt, token: str) -> list[dict[str, str]]:
        """With Instagram Login a sign-in is one account: it must be a professional one."""
        me = cls.sign_in_call(
            attempt,
            "GET",
            cls.for_sign_in(attempt).url("me"),
            what="show the signed-in account",
            params={"fields": "user_id,username,account_type"},
            token=token,
        )
        kind = str(me.get("account_type") or "").upper()
        if kind and kind not in PROFESSIONAL_TYPES:
            raise AutorettoError(
                f'the Instagram account "{me.get("username")}" is a personal account; switch it '
                "to a professional (Business or Creator) account in the Instagram app, then "
                "connect again"
            )
        return [{"id": str(me.get("user_id") or me.get("id")), "name": str(me["username"])}]


# -- connecting (shared with Threads) ----------------------------------------------------------


def _exchange_code(attempt: Attempt, platform: type[GraphContainerPlatform], code: str) -> str:
    client, title = attempt.client, platform.title
    body = platform.sign_in_call(
        attempt,
        "POST",
        attempt.settings["token_uri"],
        what="accept the sign-in",
        data={
            "client_id": client.id,
            "client_secret": client.secret,
            "grant_type": "authorization_code",
            "redirect_uri": client.redirect_uri,
            "code": code,
        },
    )
    # Instagram has answered both flat and wrapped in a one-item `data` list.
    if isinstance(body.get("data"), list) and body["data"]:
        body = body["data"][0]
    if not body.get("access_token"):
        raise AutorettoError(f"{title} sent no token for that code; run the command again")
    return str(body["access_token"])


def _long_lived(
    attempt: Attempt, platform: type[GraphContainerPlatform], short: str
) -> dict[str, Any]:
    body = platform.sign_in_call(
        attempt,
        "GET",
        f"{attempt.settings['api_base'].rstrip('/')}/access_token",
        what="make a long-lived sign-in",
        params={
            "grant_type": platform.exchange_grant,
            "client_secret": attempt.client.secret,
            "access_token": short,
        },
    )
    if not body.get("access_token"):
        raise AutorettoError(f"{platform.title} sent no long-lived token; run the command again")
    return body
