"""Meta's Graph API, shared by Facebook, Instagram and Threads (PLATFORMS.md).

`meta_error` turns Graph's error envelope (PLATFORMS.md, "Common Meta conventions") into one of
the platform error values; a duplicate post (506) may already be there, so it is a lost answer,
looked for before anything is sent again.

Instagram and Threads publish a video the same way (PLATFORMS.md §3, §6): the platform fetches
it from a URL into a *container*, processes it, and one more call publishes the container.
`GraphContainerPlatform` holds that protocol once. Never twice (ARCHITECTURE.md §3):

1. The video is offered at a media host link (autoretto/mediahost.py) that lives only while the
   container is made and processed. The container id is saved on the attempt as soon as the
   platform names it, before any wait or publish.
2. Processing is polled with bounded waits (`wait_first`, then up to `polls` checks
   `wait_between` apart). ERROR or EXPIRED make a new container (at most `containers_per_try` a
   try) unless the platform says the video itself is wrong (`INVALID_*`, or a subcode that
   means "fix the file"): then the episode is rejected.
3. A container can be published once. A retry that finds a saved container asks it first:
   PUBLISHED → the earlier publish went through (the post is looked up, nothing is sent);
   FINISHED → publish it; IN_PROGRESS → wait; ERROR/EXPIRED/gone → a new container.
4. A publish whose answer is lost is settled by the container: PUBLISHED → found, otherwise a
   lost answer that the next run checks the same way before anything else.
5. `find_attempt` asks the saved container, else lists the account's recent posts and matches a
   short token derived from the attempt's marker, which ends the caption (`marker_in_caption`).

The 60-day token is its own refresh grant, refreshed under the account lock once it is a day
old, as Meta allows; a refresh that fails while the token is still good is not a failed post.
Caps: the live publishing limit is read before the call, and `daily_cap` is a cap of our own
over the last 24 hours, counted with the posts on their way (`posts_toward_cap`); a reached cap
names itself and spends no try. The token goes in the Authorization header, never in a URL that
could be logged.
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
from ..errors import AutorettoError, Problems
from ..oauth import json_body
from .base import (
    CarouselImage,
    Comment,
    CommentGone,
    ContentRejected,
    EpisodeView,
    LimitReached,
    LostAnswer,
    NeedsPerson,
    PassingError,
    PlatformError,
    PostRequest,
    Published,
    ReplyRequest,
    UsageLedger,
    carousel_view,
    find_marked,
    posts_toward_cap,
    video_to_send,
)
from .http import AccountPlatform, refresh_request
from .signin import Attempt, Draft, Flag, Secret, SignIn, choose
from .text import HASHTAG

TOKEN_SUBCODES = {
    458: "the app was removed from the account",
    459: "the account needs a checkpoint (log in on the platform)",
    460: "the password was changed",
    463: "the token expired",
    464: "the account is not confirmed",
    467: "the token is no longer valid",
}
THROTTLE_CODES = {4, 17, 32, 613, 341}

# Graph API versions: when each stops being served ("Available Until"; None: not announced).
# https://developers.facebook.com/docs/graph-api/changelog/versions/ . A call to an expired
# version is served by the oldest available one (which may change fields:
# https://developers.facebook.com/docs/graph-api/guides/versioning), so the date is what warns.
# The ended versions are listed too, so a version set by hand says when it ended.
GRAPH_VERSIONS: dict[str, str | None] = {
    "v1.0": "2015-04-30",
    "v2.0": "2016-08-08",
    "v2.1": "2016-10-31",
    "v2.2": "2017-03-27",
    "v2.3": "2017-07-10",
    "v2.4": "2017-10-09",
    "v2.5": "2018-04-12",
    "v2.6": "2018-07-13",
    "v2.7": "2018-10-05",
    "v2.8": "2019-04-18",
    "v2.9": "2019-07-22",
    "v2.10": "2019-11-07",
    "v2.11": "2020-01-28",
    "v2.12": "2020-05-05",
    "v3.0": "2020-07-28",
    "v3.1": "2020-10-27",
    "v3.2": "2021-05-04",
    "v3.3": "2021-08-03",
    "v4.0": "2021-11-02",
    "v5.0": "2022-02-03",
    "v6.0": "2022-05-05",
    "v7.0": "2022-08-04",
    "v8.0": "2022-11-01",
    "v9.0": "2023-02-23",
    "v10.0": "2023-06-08",
    "v11.0": "2023-09-14",
    "v12.0": "2024-02-08",
    "v13.0": "2024-05-28",
    "v14.0": "2024-09-17",
    "v15.0": "2024-11-20",
    "v16.0": "2025-05-14",
    "v17.0": "2025-09-12",
    "v18.0": "2026-01-26",
    "v19.0": "2026-05-21",
    "v20.0": "2026-09-24",
    "v21.0": "2027-01-21",
    "v22.0": "2027-05-20",
    "v23.0": "2027-10-08",
    "v24.0": "2028-02-18",
    "v25.0": "2028-07-29",
    "v26.0": None,
    "v27.0": None,
}
# A version Graph does not serve: Meta's legacy code 12 ("This API version is deprecated"),
# 2635 ("You are calling a deprecated version of the ... API"), or a message that says so (the
# exact wording for an unknown version is UNCONFIRMED on a Meta page; both shapes are handled).
VERSION_CODES = {12, 2635}
_VERSION_WORDS = re.compile(
    r"(unsupported|invalid|unknown|deprecated|not (a )?valid)[^.]{0,40}\bversion"
    r"|\bversion\b[^.]{0,40}(is not (supported|available|valid)|no longer|deprecated)"
    r"|unknown path components: /v[0-9]",
    re.IGNORECASE,
)

if TYPE_CHECKING:
    from ..mediahost import MediaHost, MediaHostSettings
    from ..paths import Paths
    from .base import Platform

log = logging.getLogger("autoretto.platforms.meta")


def as_int(value: Any) -> int | None:
    """A code of a Graph error as a number (None when it is none)."""
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def graph_problem(body: Any, status: int) -> tuple[dict[str, Any], int | None, int | None, str]:
    """(error object, code, subcode, words) of a Graph answer's error envelope; ({}, None,
    None, "HTTP N") when it has none."""
    error = body.get("error") if isinstance(body, dict) else None
    error = error if isinstance(error, dict) else {}
    said = str(error.get("error_user_msg") or error.get("message") or f"HTTP {status}")[:300]
    return error, as_int(error.get("code")), as_int(error.get("error_subcode")), said


def meta_error(
    status: int,
    body: Any,
    *,
    title: str,
    platform: str,
    versioned: Platform | None = None,
) -> PlatformError | None:
    """The error value for a Graph API answer, or None when it is a success. `versioned` is
    the platform whose API version the call spoke (for the "version not served" sentence)."""
    if status < 400 and not (isinstance(body, dict) and body.get("error")):
        return None
    error, code, subcode, said = graph_problem(body, status)
    unserved = code in VERSION_CODES or _VERSION_WORDS.search(str(error.get("message") or ""))
    if versioned is not None and unserved:
        from .versions import sunset_reason

        return NeedsPerson(sunset_reason(type(versioned), versioned.speaks_version, said))
    if code == 190 or status == 401:
        why = TOKEN_SUBCODES.get(subcode or 0, said)
        return NeedsPerson(
            f"{title} refused the token ({why}): reconnect with `autoretto connect {platform}`"
        )
    if code == 10 or (code is not None and 200 <= code <= 299):
        return NeedsPerson(
            f"{title} says a permission is missing ({said}): reconnect with "
            f"`autoretto connect {platform}` and grant it"
        )
    if code in THROTTLE_CODES:
        return LimitReached(f"{title} rate limit reached ({said}); trying again on a later slot")
    if code == 368:
        return LimitReached(f"{title} blocked posting for a while ({said})")
    if code == 506:
        return LostAnswer(f"{title} says this is a duplicate post: it may already be there")
    if code in (1, 2) or error.get("is_transient") or status >= 500 or status == 429:
        return PassingError(f"{title} is having trouble ({said})")
    if status == 400:
        return ContentRejected(f"{title} refused the post: {said}")
    return PassingError(f"{title} answered HTTP {status} ({said})")


def graph_body(answer: Any, title: str) -> dict[str, Any]:
    """The JSON object of a successful Graph answer (PassingError when it has none)."""
    try:
        body = answer.json()
    except ValueError:
        body = None
    if not isinstance(body, dict):
        raise PassingError(f"{title} answered HTTP {answer.status_code} without JSON")
    return body


class GraphPlatform(AccountPlatform):
    """A platform of Meta's Graph API: versioned paths, the error envelope above, and a
    refused token said in the body (code 190), not with a 401 worth a refresh."""

    # graph.facebook.com and graph.instagram.com share the Graph API's versions and dates
    api_version = "v23.0"
    api_versions = GRAPH_VERSIONS
    api_version_source = "https://developers.facebook.com/docs/graph-api/changelog/versions/"
    api_version_pattern = r"v[0-9]+\.[0-9]+"
    api_version_example = "v23.0"
    #: the setting that names the API host
    base_setting: ClassVar[str] = "api_base"
    #: a missing permission marks the account `reconnect` too (connecting again grants it)
    permission_reconnects: ClassVar[bool] = True

    def url(self, path: str) -> str:
        return f"{self.settings[self.base_setting].rstrip('/')}/{self.speaks_version}/{path}"

    def token_refused(self, response: Any) -> bool:
        return False

    def succeeded(self, response: Any) -> bool:
        return response.status_code < 400 and "error" not in json_body(response)

    def problem(self, response: Any) -> tuple[str, str]:
        body = json_body(response)
        error, code, _, said = graph_problem(body, response.status_code)
        if error:
            return str(code or ""), said
        # Instagram's token endpoint answers flat: {"error_type", "code", "error_message"}.
        return str(body.get("error_type") or ""), str(body.get("error_message") or "")[:300]

    def graph(self, method: str, path: str, *, sends: bool = False, **arguments: Any) -> dict:
        """One Graph call as the account; its JSON body."""
        return graph_body(self.call(method, self.url(path), sends=sends, **arguments), self.title)

    def checked(self, response: Any) -> dict[str, Any]:
        """The JSON body of an answer read with `check=False`, or the error it stands for."""
        if not self.succeeded(response):
            raise self.classify(response)
        return graph_body(response, self.title)

    def own_error(self, code: int | None, subcode: int | None, said: str) -> PlatformError | None:
        """An error code of this platform's own that Meta's table does not know (None: none)."""
        return None

    def classify(self, response: Any, *, sends: bool = False) -> PlatformError:
        status = response.status_code
        body = json_body(response)
        _, code, subcode, said = graph_problem(body, status)
        problem = self.own_error(code, subcode, said) or meta_error(
            status, body, title=self.title, platform=self.name, versioned=self
        )
        if problem is None:  # an error body Meta's table does not know
            problem = PassingError(f"{self.title} answered HTTP {status} ({said})")
        permission = code == 10 or (code is not None and 200 <= code <= 299)
        if code == 190 or status == 401 or (permission and self.permission_reconnects):
            # A refused token or a missing permission: nothing more is sent from the account.
            accounts.mark_reconnect(self.db, self.name, problem.reason)
        return problem


# -- the container protocol of Instagram and Threads ------------------------------------------

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


#: the settings of Instagram and Threads that are the same for both, with their defaults
CONTAINER_SETTINGS: dict[str, Any] = {
    "api_version": "",  # empty: the one the class declares
    "app_id": "",
    "redirect_uri": "https://localhost/",
    "marker_in_caption": True,
    "containers_per_try": 2,
    "timeout": 60,
    "find_limit": 50,
    "media_host": None,  # a [platforms.NAME.media_host] table, else the [media_host]
}


def marker_token(marker: str) -> str:
    """The short token that ends a caption so an attempt can be found in a listing."""
    return "ar" + hashlib.sha256(marker.encode("utf-8")).hexdigest()[:10]


def source_text(episode: EpisodeView, platform: str, *, hashtags: bool) -> str:
    """The episode's copy for `platform`: its fitted text when the pipeline made one, else the
    title and description (and its tags as hashtags where the platform likes them)."""
    fitted = episode.texts.get(platform)
    keys = ("caption", "text", "description")
    for text in [fitted.get(key) for key in keys] if isinstance(fitted, dict) else [fitted]:
        if isinstance(text, str) and text.strip():
            return text.strip()
    parts = [episode.title.strip(), episode.description.strip()]
    text = "\n\n".join(part for part in parts if part)
    if hashtags:
        present = {tag.lower() for tag in HASHTAG.findall(text)}
        extra = []
        for tag in episode.tags:
            word = "#" + re.sub(r"\W", "", str(tag))
            if len(word) > 1 and word.lower() not in present:
                present.add(word.lower())
                extra.append(word)
        if extra:
            text += "\n\n" + " ".join(extra)
    return text


def graph_signin(title: str, name: str, what: str) -> SignIn:
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
    #: the episode's render it sends (None: the one its `format` setting names)
    video_name: ClassVar[str | None] = None
    #: a carousel item container's `media_type` (issue 29; None: sent without one), and the
    #: parameter that carries a card's alt text (None: it takes none)
    carousel_item_type: ClassVar[str | None] = None
    carousel_alt_param: ClassVar[str | None] = None
    #: without a fitted text, the episode's tags end its text as hashtags
    tags_as_hashtags: ClassVar[bool] = False
    #: what `GET /me` is asked for, and what a sign-in's account is called
    me_fields: ClassVar[str] = "id,username"
    who: ClassVar[str] = "account"

    #: a long-lived token is refreshed once it is a day old, as Meta allows
    refresh_margin = LONG_LIVED - REFRESH_AGE
    address_settings = ("api_base", "auth_uri", "token_uri")
    positive_settings = ("polls", "containers_per_try", "find_limit", "comment_pages")

    @classmethod
    def sign_in_scopes(cls, settings: dict[str, Any], given: dict[str, Any]) -> list[str]:
        return list(cls.scopes)

    @classmethod
    def exchange_code(cls, attempt: Attempt, code: str) -> dict[str, Any]:
        """The code becomes a short-lived token, then a long-lived (60-day) one."""
        client = attempt.client
        body = cls.sign_in_call(
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
            raise AutorettoError(f"{cls.title} sent no token for that code; run the command again")
        long_lived = cls.sign_in_call(
            attempt,
            "GET",
            f"{attempt.settings['api_base'].rstrip('/')}/access_token",
            what="make a long-lived sign-in",
            params={
                "grant_type": cls.exchange_grant,
                "client_secret": client.secret,
                "access_token": str(body["access_token"]),
            },
        )
        if not long_lived.get("access_token"):
            raise AutorettoError(f"{cls.title} sent no long-lived token; run the command again")
        return long_lived

    @classmethod
    def signed_in(cls, attempt: Attempt) -> Draft:
        """The account that signed in (Meta's own login gives one, read from `GET /me`);
        Meta has no separate refresh token: the long-lived token is its own refresh grant."""
        token = attempt.answer["access_token"]
        me = cls.sign_in_call(
            attempt,
            "GET",
            cls.for_sign_in(attempt).url("me"),
            what=f"show the signed-in {cls.who}",
            params={"fields": cls.me_fields},
            token=token,
        )
        chosen = choose(
            [cls.account_of(me)],
            attempt.given.get("account"),
            person=attempt.person,
            title=cls.title,
        )
        expires_in = int(attempt.answer.get("expires_in") or LONG_LIVED.total_seconds())
        expires_at = iso(now() + timedelta(seconds=expires_in))
        lines = [
            f'Connected {cls.title} account "{chosen["name"]}" ({chosen["id"]}).',
            f"It lasts until {expires_at} and Autoretto renews it while it posts.",
        ]
        if attempt.settings.get("media_host") is None:
            lines.append(
                f"{cls.title} fetches videos from a link: add a [media_host] section to the "
                "config before the first post."
            )
        return Draft(
            account_id=chosen["id"],
            name=chosen["name"],
            tokens={
                "access_token": token,
                "refresh_token": token,
                "expires_at": expires_at,
                "scopes": list(cls.scopes),
            },
            meta={"username": chosen["name"], "token_expires_at": expires_at},
            lines=lines,
        )

    @classmethod
    def account_of(cls, me: dict[str, Any]) -> dict[str, str]:
        """{"id", "name"} of the account `GET /me` (its `me_fields`) describes."""
        return {"id": str(me["id"]), "name": str(me.get("username") or me["id"])}

    @classmethod
    def parse_settings(cls, table: dict[str, Any], *, path: Path, paths: Paths) -> Any:
        from ..mediahost import parse_media_host

        table = dict(table)
        media_host = table.pop("media_host", None)
        problems = Problems()  # the table's problems and its media_host's, named together
        settings = problems.keep(super().parse_settings, table, path=path, paths=paths)
        if media_host is not None:
            prefix = f"platforms.{cls.name}.media_host"
            media_host = problems.keep(parse_media_host, media_host, path=path, prefix=prefix)
        problems.raise_found()
        if media_host is not None:
            settings["media_host"] = media_host
        return settings

    # -- readiness and caps ----------------------------------------------------------------

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
        if not self.is_connected():
            return None
        cap = int(self.settings.get("daily_cap") or 0)
        if cap > 0:
            day_ago = self.now - timedelta(hours=24)
            count = posts_toward_cap(self.db, self.name, day_ago, request.post_id)
            if count >= cap:
                return (
                    f"the {self.title} cap is reached: {count} of {cap} posts in the last 24 "
                    f"hours (daily_cap of [platforms.{self.name}])"
                )
        try:
            body = self._read(self._edge(self.limit_edge), fields="quota_usage,config")
        except LimitReached as error:
            return error.reason
        except PlatformError as error:
            # The publish call enforces the limit too; not knowing it is no reason to wait.
            log.warning("%s: could not read the publishing limit: %s", self.name, error.reason)
            return None
        data = body.get("data")
        entry = data[0] if isinstance(data, list) and data else {}
        config = entry.get("config") if isinstance(entry, dict) else None
        total = config.get("quota_total") if isinstance(config, dict) else None
        used = int(entry.get("quota_usage") or 0)
        if total is not None and used >= int(total):
            return (
                f"{self.title}'s publishing limit is used: {used} of {int(total)} posts in the "
                "last 24 hours"
            )
        return None

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

    def fit_text(self, text: str, marker: str) -> str:
        raise NotImplementedError

    def _extra_fields(self) -> dict[str, str]:
        return {}

    def _edge(self, edge: str) -> str:
        return f"{self.account().account_id}/{edge}"

    def _read(self, path: str, **params: Any) -> dict[str, Any]:
        """The JSON body of `GET path?params`, passing trouble retried."""
        return self.retrying(lambda: self.graph("GET", path, params=params))

    def _media_host(self) -> MediaHost:
        from ..mediahost import open_media_host

        settings: MediaHostSettings | None = self.settings.get("media_host")
        if settings is None:
            raise NeedsPerson(self.not_ready_reason() or f"{self.title} needs a media host")
        return open_media_host(settings, self.home)

    @contextmanager
    def _hosted(self, host: MediaHost, video: Path, stored: str | None = None) -> Iterator[str]:
        """The media host's link to `video` for the length of the block; a presigned link to
        `stored` (the same file's object in the media bucket, `[media] url`) when there is one."""
        from ..mediahost import MediaHostError, stored_link

        with ExitStack() as stack:
            try:
                if stored:
                    settings: MediaHostSettings = self.settings["media_host"]
                    url = stack.enter_context(stored_link(stored, settings.ttl))
                else:
                    url = stack.enter_context(host.publish(video))
            except MediaHostError as error:
                kind = PassingError if error.passing else NeedsPerson
                raise kind(f"{self.title}: {error}") from None
            except OSError as error:
                raise PassingError(f"{self.title}: the media host failed ({error})") from None
            yield url

    def _publish(self, request: PostRequest) -> Published:
        video = video_to_send(self, request.episode, self.video_name)
        host = self._media_host()
        self.tokens()
        return self.retrying(lambda: self._attempt(request, video, host))

    def _resumed(self, request: PostRequest) -> Published | None:
        """Go on from the container an earlier try made, if it has one that can still be
        published (or was); None when a new one is wanted."""
        container = self.handles(request).get("container_id")
        if not container:
            return None
        state, detail = self._container_state(container)
        if state == "IN_PROGRESS":
            state, detail = self._wait(container, request, first=False)
        if (settled := self._settle(request, state, detail)) is not None:
            return settled
        log.info("%s: container %s is %s; making a new one", self.name, container, state)
        return None

    def _attempt(self, request: PostRequest, video: Path, host: MediaHost) -> Published:
        if (resumed := self._resumed(request)) is not None:
            return resumed
        problem: PlatformError = PassingError(f"{self.title} made no container")
        for _ in range(self.settings["containers_per_try"]):
            with self._hosted(host, video, request.episode.stored.get(str(video))) as url:
                container = self._create_container(
                    request, {"media_type": self.media_type, "video_url": url}
                )
                state, detail = self._wait(container, request, first=True)
            if (settled := self._settle(request, state, detail)) is not None:
                return settled
            problem = self._container_failure(state, detail)
            log.info("%s: container %s is %s (%s)", self.name, container, state, detail)
        raise problem

    def _settle(self, request: PostRequest, state: str, detail: str) -> Published | None:
        """Go on from a container's state: published, publish it, wait for a later slot, or
        None when a new container is wanted (a video the platform refuses raises)."""
        if state == "PUBLISHED":
            return self._published(request)
        if state == "FINISHED":
            return self._publish_container(request)
        if state == "IN_PROGRESS":
            raise PassingError(
                f"{self.title} is still processing the video; the next try checks it again",
                retry_after=LATER_SECONDS,
            )
        failure = self._container_failure(state, detail)
        if isinstance(failure, ContentRejected):
            raise failure
        handles = self.handles(request)
        handles.pop("container_id", None)
        self.save(request, handles)
        return None

    def _container_failure(self, state: str, detail: str) -> PlatformError:
        if state == "EXPIRED":
            return PassingError(f"the {self.title} container expired before it was published")
        if "INVALID_" in detail.upper() or any(code in detail for code in REJECTING_SUBCODES):
            return ContentRejected(f"{self.title} refused the video: {detail}")
        if state == "GONE":
            return PassingError(f"{self.title} no longer knows the container ({detail})")
        return PassingError(f"{self.title} could not process the video ({detail or 'no reason'})")

    def _create_container(self, request: PostRequest, media: dict[str, str]) -> str:
        """The post's container of `media` (its video's type and link, or a carousel's
        children) with the post's text and marker, kept on the handles before anything else."""
        marker = marker_token(request.marker)
        text_marker = marker if self.settings["marker_in_caption"] else ""
        episode = request.episode if request.kind == "video" else carousel_view(request.episode)
        text = source_text(episode, self.name, hashtags=self.tags_as_hashtags)
        fields = {
            **media,
            self.text_param: self.fit_text(text, text_marker),
            **self._extra_fields(),
        }
        path = self._edge(self.container_edge)
        body = self.retrying(lambda: self.graph("POST", path, data=fields))
        container = str(body.get("id") or "")
        if not container:
            raise PassingError(f"{self.title} answered without a container id")
        handles = {k: v for k, v in self.handles(request).items() if k != "media_id"}
        markers = [m for m in handles.get("markers", []) if m != marker] + [marker]
        # before any wait or publish
        self.save(request, {**handles, "container_id": container, "markers": markers})
        log.info("%s: container %s made for post %s", self.name, container, request.post_id)
        return container

    def _container_state(self, container: str) -> tuple[str, str]:
        """(state, detail) of a container; ("GONE", why) when the platform no longer has it."""
        try:
            body = self._read(container, fields=f"{self.state_field},{self.detail_field}")
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

    def _publish_container(self, request: PostRequest) -> Published:
        container = self.handles(request)["container_id"]
        try:
            body = self.graph(
                "POST", self._edge(self.publish_edge), data={"creation_id": container}, sends=True
            )
        except (PassingError, LostAnswer) as error:
            return self._after_unclear_publish(request, error)
        media_id = str(body.get("id") or "")
        if not media_id:
            return self._after_unclear_publish(
                request, LostAnswer(f"{self.title} answered the publish without an id")
            )
        self.save(request, {**self.handles(request), "media_id": media_id})
        log.info("%s: post %s published as %s", self.name, request.post_id, media_id)
        return Published(media_id, self._permalink(media_id))

    def _after_unclear_publish(self, request: PostRequest, error: PlatformError) -> Published:
        """The publish may or may not have gone through: the container says which."""
        container = self.handles(request)["container_id"]
        try:
            state, _ = self._container_state(container)
        except PlatformError:
            state = "UNKNOWN"
        if state == "PUBLISHED":
            return self._published(request)
        if state == "FINISHED" and isinstance(error, PassingError):
            raise error  # refused before publishing: safe to publish again
        raise LostAnswer(
            f"{self.title} did not confirm the publish ({error.reason}); the container "
            f"{container} is checked before anything else"
        )

    def _published(self, request: PostRequest) -> Published:
        """The container is published: the post it became."""
        handles = self.handles(request)
        if handles.get("media_id"):
            return Published(handles["media_id"], self._permalink(handles["media_id"]))
        found = self._find_by_markers(request, link=False)
        if found is None:
            raise LostAnswer(
                f"{self.title} shows the container published but the post is not listed "
                "yet; it is looked for again later"
            )
        media_id = found.platform_post_id
        self.save(request, {**handles, "media_id": media_id})  # kept before any other read
        return Published(media_id, found.url or self._permalink(media_id))

    def _permalink(self, media_id: str) -> str | None:
        try:
            return self._read(media_id, fields="permalink").get("permalink")
        except PlatformError as error:
            log.warning("%s: no permalink for %s: %s", self.name, media_id, error.reason)
            return None

    # -- carousels (issue 29) ---------------------------------------------------------------

    def _publish_carousel(self, request: PostRequest) -> Published:
        host = self._media_host()
        self.tokens()
        return self.retrying(lambda: self._carousel_attempt(request, host))

    def _carousel_attempt(self, request: PostRequest, host: MediaHost) -> Published:
        """Each card as an item container (fetched from the media host's link while it is
        made), then one CAROUSEL container of them with the post's text, published as a
        video's container is (`_settle`)."""
        if (resumed := self._resumed(request)) is not None:
            return resumed
        children = self._carousel_items(request, host)
        container = self._create_container(
            request, {"media_type": "CAROUSEL", "children": ",".join(children)}
        )
        state, detail = self._wait(container, request, first=True)
        if (settled := self._settle(request, state, detail)) is not None:
            return settled
        handles = self.handles(request)
        handles.pop("items", None)  # made again next try: they may be what failed
        self.save(request, handles)
        raise self._container_failure(state, detail)

    def _carousel_items(self, request: PostRequest, host: MediaHost) -> list[str]:
        """The item containers of the cards: the ones an earlier try made (an item is no
        post), then one for each card without one, each kept on the handles once finished."""
        handles = self.handles(request)
        items: list[str | None] = list(handles.get("items") or [None] * len(request.images))
        for index, image in enumerate(request.images):
            if items[index]:
                continue
            items[index] = self._carousel_item(request, host, image)
            self.save(request, {**self.handles(request), "items": items})
        return [str(item) for item in items]

    def _carousel_item(self, request: PostRequest, host: MediaHost, image: CarouselImage) -> str:
        typed = {"media_type": self.carousel_item_type} if self.carousel_item_type else {}
        if self.carousel_alt_param:
            typed[self.carousel_alt_param] = image.alt[:1000]
        path = self._edge(self.container_edge)
        with self._hosted(host, Path(image.path)) as url:
            fields = {**typed, "image_url": url, "is_carousel_item": "true"}
            body = self.retrying(lambda: self.graph("POST", path, data=fields))
            item = str(body.get("id") or "")
            if not item:
                raise PassingError(f"{self.title} answered a card without a container id")
            state, detail = self._wait(item, request, first=True)
        if state != "FINISHED":
            raise self._container_failure(state, detail)
        return item

    # -- finding an attempt -----------------------------------------------------------------

    def _find_by_markers(self, request: PostRequest, *, link: bool = True) -> Published | None:
        """The post among the account's newest whose text ends with an attempt's marker token
        (`link`: its permalink asked for when the listing gives none)."""
        markers = {marker_token(request.marker), *self.handles(request).get("markers", [])}
        body = self._read(
            self._edge(self.listing_edge),
            fields=f"id,{self.text_param},permalink,timestamp",
            limit=self.settings["find_limit"],
        )
        posts = [
            [item for item in body.get("data") or [] if isinstance(item, dict) and item.get("id")]
        ]
        text = self.text_param  # the token is a word of its own at the caption's end
        found = find_marked(posts, markers, lambda item: set(str(item.get(text) or "").split()))
        if found is None:
            return None
        media_id, url = str(found["id"]), found.get("permalink")
        return Published(media_id, url or (self._permalink(media_id) if link else None))

    def _find_attempt(self, request: PostRequest) -> Published | None:
        self.tokens()
        handles = self.handles(request)
        if handles.get("media_id"):
            return self._published(request)
        container = handles.get("container_id")
        if container:
            state, _ = self._container_state(container)
            if state == "PUBLISHED":
                return self._published(request)
            if state != "GONE":
                return None  # a container is published only through us, and this one is not
        return self._find_by_markers(request)


# -- comments and replies (issue 28) ---------------------------------------------------------
# Instagram and Threads read the comments under our posts and answer them through the same Graph
# conventions, written once here (`GraphComments`, mixed into each platform's class). Facebook's
# comments are its own module's.

#: Graph's answer about an object that is no longer there (a deleted comment or post): code 100
#: with subcode 33, "Object with ID '…' does not exist, cannot be loaded due to missing
#: permissions, or does not support this operation"
#: (https://developers.facebook.com/docs/graph-api/guides/error-handling)
GONE_CODE, GONE_SUBCODE = 100, 33
#: the bucket of the usage ledger that counts comment calls per account and UTC day
COMMENT_CALLS = "comment_calls"
#: how many comments one page asks for (Graph's pages hold 25 unless `limit` says more)
COMMENT_PAGE = 50


def graph_time(text: Any) -> str | None:
    """A Graph timestamp ("2026-11-29T10:05:00+0000") as ISO-8601 UTC ending in Z; None when it
    cannot be read."""
    if not isinstance(text, str) or not text:
        return None
    try:
        moment = datetime.strptime(text, "%Y-%m-%dT%H:%M:%S%z")
    except ValueError:
        try:
            moment = from_iso(text)
        except ValueError:
            return None
    return iso(moment)


def after_cursor(body: dict[str, Any]) -> str | None:
    """The `after` cursor of a Graph page (`paging.cursors.after`), else None."""
    paging = body.get("paging") if isinstance(body.get("paging"), dict) else {}
    cursors = paging.get("cursors") if isinstance(paging.get("cursors"), dict) else {}
    after = cursors.get("after")
    return str(after) if after else None


def graph_items(body: dict[str, Any]) -> list[dict[str, Any]]:
    """The objects of a Graph page's `data` that have an id."""
    data = body.get("data")
    if not isinstance(data, list):
        return []
    return [item for item in data if isinstance(item, dict) and item.get("id")]


def has_next(body: dict[str, Any]) -> bool:
    """Does a Graph page say there is a page after it (`paging.next`)?"""
    paging = body.get("paging")
    return isinstance(paging, dict) and bool(paging.get("next"))


def reached_known(times: list[str], known: str | None) -> bool:
    """Has a read from the newest comment down reached the ones read before? True when the
    page's times (ISO, in the order listed) are newest first and all older than `known`, the
    newest time the last read kept: the pages after it are older still. Listed oldest first,
    never: the new comments are at the end. (LinkedIn's reads stop the same way.)"""
    return bool(
        known and times and all(t < known for t in times) and times == sorted(times, reverse=True)
    )


def moment_cursor(cursor: str | None) -> str | None:
    """`cursor` when it is an ISO time (the newest comment a read kept), else None."""
    if not cursor:
        return None
    try:
        from_iso(cursor)
    except ValueError:
        return None
    return cursor


def same_text(one: Any, other: str) -> bool:
    """Is `one` the text `other`, whitespace at the ends aside (how a reply is recognised)?"""
    return isinstance(one, str) and one.strip() == other.strip()


class GraphComments:
    """Reading and answering comments on a Graph platform (Instagram, Threads): every call counted
    in the usage ledger before it is made (`comment_calls_per_day` per account and UTC day, a
    budget of our own below Meta's rate limit), its refusals turned into the platform errors of a
    comment: a missing permission names `comment_scope` and, unlike a refused post, leaves the
    account as it is (posting does not need it); a comment (or post) deleted meanwhile is
    CommentGone; a reply whose answer was lost or erred after it went out is a lost answer."""

    # what the mixing class provides (a GraphContainerPlatform)
    name: ClassVar[str]
    title: ClassVar[str]
    comment_scope: ClassVar[str]
    settings: Any
    db: Any
    account: Any
    call: Any
    url: Any
    succeeded: Any
    classify: Any
    own_error: Any
    retrying: Any

    def comment_call(
        self, method: str, path: str, *, sends: bool = False, **arguments: Any
    ) -> dict[str, Any]:
        """One counted Graph call of the comments (the JSON body of its answer)."""
        allowance = int(self.settings["comment_calls_per_day"])
        ledger = UsageLedger(self.name)
        if not ledger.charge(self.db, self.account().account_id, COMMENT_CALLS, 1, allowance):
            raise LimitReached(
                f"{self.title}'s comment calls for today are used ({allowance}, "
                f"comment_calls_per_day of [platforms.{self.name}]); they go on after midnight UTC"
            )
        answer = self.call(method, self.url(path), sends=sends, check=False, **arguments)
        if self.succeeded(answer):
            return graph_body(answer, self.title)
        raise self.comment_error(answer, sends=sends)

    def comment_read(self, path: str, **params: Any) -> dict:
        """A counted GET of the comments, passing trouble retried (each try counted)."""
        return self.retrying(lambda: self.comment_call("GET", path, params=params))

    def comment_error(self, answer: Any, *, sends: bool) -> PlatformError:
        """The error of a refused comment call (see the class's docstring)."""
        status = answer.status_code
        body = json_body(answer)
        _, code, subcode, said = graph_problem(body, status)
        if code == 190 or status == 401:
            return self.classify(answer, sends=sends)  # the token itself: the account's
        if code == 10 or (code is not None and 200 <= code <= 299):
            return NeedsPerson(
                f"{self.title} refused the comments ({said}): they need the "
                f"{self.comment_scope} permission; reconnect with `autoretto connect "
                f"{self.name}` and allow it"
            )
        if code == GONE_CODE and subcode == GONE_SUBCODE:
            return CommentGone(f"{self.title} no longer has it: the comment was deleted ({said})")
        own = self.own_error(code, subcode, said)  # "try again": refused, nothing made
        if own is not None:
            return own
        problem = meta_error(status, body, title=self.title, platform=self.name, versioned=self)
        if problem is None:
            problem = PassingError(f"{self.title} answered HTTP {status} ({said})")
        if sends and isinstance(problem, PassingError):
            # An erring answer to a reply may come after the reply was stored.
            return LostAnswer(f"{self.title} answered {status} to the reply; it may have gone out")
        return problem

    # -- the handles of a reply's attempt (a container's id) ---------------------------------

    def reply_handles(self, request: ReplyRequest) -> dict[str, Any]:
        """This reply attempt's handles saved so far in this run, else a copy of the ones it
        began with."""
        kept = self.__dict__.setdefault("_replies_in_flight", {})
        return kept.setdefault((request.reply_id, request.attempt), dict(request.handles))

    def save_reply(self, request: ReplyRequest, handles: dict[str, Any]) -> None:
        """Keep `handles` for the job's next try and on the attempt's record."""
        kept = self.__dict__.setdefault("_replies_in_flight", {})
        kept[(request.reply_id, request.attempt)] = handles
        request.save_handles(dict(handles))

    def is_mine(self, item: dict[str, Any]) -> bool:
        """Was this comment (a Graph object) written by the connected account?"""
        account = self.account()
        names = {account.account_id, str(account.meta.get("username") or account.name)}
        author = item.get("from") if isinstance(item.get("from"), dict) else {}
        return bool(
            item.get("is_reply_owned_by_me")
            or str(item.get("username") or "") in names
            or str(author.get("id") or "") in names
        )

    def comment_of(self, item: dict[str, Any], post_id: str, parent: str | None) -> Comment:
        """The Comment of a Graph comment object under our post `post_id`."""
        author = item.get("from") if isinstance(item.get("from"), dict) else {}
        return Comment(
            id=str(item["id"]),
            post_id=post_id,
            author=str(item.get("username") or author.get("username") or ""),
            text=str(item.get("text") or ""),
            published_at=graph_time(item.get("timestamp")),
            author_id=str(author.get("id") or ""),
            parent_id=parent,
            mine=self.is_mine(item),
        )
