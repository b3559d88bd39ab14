"""Meta's Graph error envelope, shared by Facebook, Instagram and Threads (PLATFORMS.md).

`{"error": {"message", "type", "code", "error_subcode", "is_transient", "error_user_title",
"error_user_msg", "fbtrace_id"}}` becomes one of the platform error values:

| code | meaning | becomes |
|---|---|---|
| 190 (OAuthException, any subcode) | token expired, revoked, password changed | NeedsPerson |
| 10, 200–299 | a permission is missing | NeedsPerson |
| 4, 17, 32, 613, 341 | throttled, app limit | LimitReached (no try spent) |
| 368 | temporary policy block | LimitReached |
| 506 | duplicate post: it may already be there | LostAnswer (looked for first) |
| 12, 2635, or a message naming an unknown version | the version is not served | NeedsPerson |
| 1, 2, or `is_transient`, or HTTP 5xx | service trouble | PassingError |
| anything else on HTTP 400 | the request or the content is wrong | ContentRejected |
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, ClassVar

from .. import accounts
from ..oauth import json_body
from .base import (
    ContentRejected,
    LimitReached,
    LostAnswer,
    NeedsPerson,
    PassingError,
    PlatformError,
)
from .http import AccountPlatform

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
GRAPH_VERSIONS: dict[str, str | None] = {
    "v20.0": "2026-09-24",
    "v21.0": "2027-01-21",
    "v22.0": "2027-05-20",
    "v23.0": "2027-10-08",
    "v24.0": "2028-02-18",
    "v25.0": "2028-07-29",
    "v26.0": None,
    "v27.0": None,
}
GRAPH_VERSIONS_SOURCE = "https://developers.facebook.com/docs/graph-api/changelog/versions/"
GRAPH_VERSION_PATTERN = r"v[0-9]+\.[0-9]+"
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
    from .base import Platform


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


def unsupported_version(error: dict[str, Any]) -> bool:
    """Does this Graph error say that the requested API version is not served?"""
    return as_int(error.get("code")) in VERSION_CODES or bool(
        _VERSION_WORDS.search(str(error.get("message") or ""))
    )


def meta_error(
    status: int,
    body: Any,
    *,
    title: str,
    platform: str,
    versioned: Platform | None = None,
) -> PlatformError | None:
    """The error value for a Graph API answer, or None when it is a success. `versioned` is
    the platform instance whose API version the call spoke (for the "version not served"
    sentence)."""
    if status < 400 and not (isinstance(body, dict) and body.get("error")):
        return None
    error, code, subcode, said = graph_problem(body, status)
    if versioned is not None and unsupported_version(error):
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
