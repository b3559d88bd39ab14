"""The one signed-in request path every HTTP platform takes.

`HttpPlatform.call` sends one request with the account's token (refreshed once when the
platform refuses it), a timeout, TLS verified against the standard CA-bundle variables, and
no redirect followed (a token never travels on to another host). Every way it can end becomes
an answer or a PlatformError:

- No answer: what decides is whether the request may have been sent. Only a connection that
  was never made (refused, a name not resolved, a connect timeout, an address that is no
  address) sent nothing. Any other error came after the request may have gone out: for a call
  that may publish (`sends=True`) that is a lost answer (the post may be live, and it is looked
  for before anything is sent again), for any other call a passing failure (it may be repeated).
- An answer: the platform's `succeeded` says whether it is one; otherwise the status ladder
  below decides, with the platform's own rows (`statuses`) and its reading of the error body
  (`problem`, `classify`).

`AccountPlatform` adds the connected account: its tokens, refreshed under the account's lock
when due (accounts.fresh_tokens), by the platform's refresh grant (`refresh`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, ClassVar

from .. import accounts
from ..clock import from_iso, iso, now
from ..errors import AutorettoError, UsageError
from ..oauth import TokenEndpoint, json_body, refresh_grant, retry_after, tls_verify
from .base import (
    ContentRejected,
    EpisodeView,
    LimitReached,
    LostAnswer,
    NeedsPerson,
    PassingError,
    Platform,
    PlatformContext,
    PlatformError,
    PostRequest,
    Published,
    first_found,
)

if TYPE_CHECKING:
    from ..ledger.store import Store as Database

log = logging.getLogger("autoretto.platforms")

#: What an HTTP status means when the platform says nothing more precise. A platform's
#: `statuses` overrides a row; 500 stands for every 5xx; any other 4xx is a refused request.
LADDER: dict[int, str] = {
    401: "reconnect",  # the sign-in is refused: nothing more is sent from the account
    403: "needs_person",  # a permission or a role is missing
    408: "passing",
    425: "passing",
    429: "passing",  # rate limited: Retry-After honoured
    500: "lost_if_sent",  # erring: a call that may publish may have gone out all the same
}


class SignInRefused(AutorettoError):
    """A platform refused a call of a sign-in; `status` and its error `code` say how."""

    def __init__(self, message: str, *, status: int, code: str) -> None:
        super().__init__(message)
        self.status, self.code = status, code


def may_have_been_sent(error: BaseException) -> bool:
    """Could the request have reached the platform before `error` (not if never connected)?"""
    from requests.exceptions import ConnectTimeout, InvalidSchema, InvalidURL, MissingSchema

    never_made = ("NewConnectionError", "Connection refused", "NameResolutionError")
    return not (
        isinstance(error, ConnectTimeout | InvalidURL | MissingSchema | InvalidSchema)
        or any(marker in repr(error) for marker in never_made)
    )


def unanswered(title: str, error: BaseException, *, sends: bool) -> PlatformError:
    """What a request without an answer means (see the module's docstring)."""
    kind = type(error).__name__
    if sends and may_have_been_sent(error):
        return LostAnswer(f"the connection to {title} broke before it answered ({kind})")
    return PassingError(f"{title} could not be reached ({kind})")


def _request(method: str, url: str, **arguments: Any) -> Any:
    """One request, TLS verified and no redirect followed (a token never travels on)."""
    import requests

    return requests.request(method, url, verify=tls_verify(), allow_redirects=False, **arguments)


def refresh_request(title: str, method: str, url: str, **arguments: Any) -> Any:
    """One request of a token refresh: its answer, or RefreshFailed when none came (a refresh
    may be asked for again)."""
    import requests

    try:
        return _request(method, url, **arguments)
    except requests.RequestException as error:
        raise accounts.RefreshFailed(
            f"could not reach {title} to refresh the token ({type(error).__name__})"
        ) from None


def problem_of(body: dict[str, Any]) -> tuple[str, str]:
    """(code, words) of the usual error bodies: `{"error": {"code", "message"}}`, `{"error":
    "code", "message"}`, `{"code", "message"}`, `{"type", "detail"}`, `{"errors": [...]}`."""
    error = body.get("error")
    if isinstance(error, dict):
        return str(error.get("code") or error.get("type") or ""), str(error.get("message") or "")
    code = error if isinstance(error, str) else body.get("code") or ""
    words = (body.get("message") or body.get("detail") or body.get("error_description") or "") or ""
    errors = body.get("errors")
    if not words and isinstance(errors, list) and errors and isinstance(errors[0], dict):
        words = errors[0].get("message") or errors[0].get("detail") or ""
    return str(code), str(words)[:300]


class HttpPlatform(Platform):
    """A platform spoken to over HTTP: one request path, one status ladder."""

    #: rows of the status ladder that differ for this platform (see LADDER)
    statuses: ClassVar[dict[int, str]] = {}
    #: how the token goes in the Authorization header
    auth_scheme: ClassVar[str] = "Bearer"
    counts_requests: ClassVar[bool] = True  # every request goes through `call`

    def url(self, path: str) -> str:
        """The address of an API path (`api_base` + path)."""
        return self.settings["api_base"].rstrip("/") + path

    def bearer(self, rejected: str | None = None) -> str | None:
        """The token a call carries (None: none); `rejected` is one the platform just refused."""
        return None

    def headers(self) -> dict[str, str]:
        """Headers every call carries besides the token (an API version, say)."""
        return {}

    def call(
        self,
        method: str,
        url: str,
        *,
        sends: bool = False,
        token: str | None = None,
        signed: bool = True,
        check: bool = True,
        accept: tuple[int, ...] = (),
        timeout: float | None = None,
        headers: dict[str, str] | None = None,
        **arguments: Any,
    ) -> Any:
        """One request; its answer when it `succeeded` (or its status is in `accept`, or `check`
        is False), else the PlatformError it stands for. `sends`: the call may publish. `token`:
        one of its own (a service token), never refreshed; its refusal says nothing of the
        account. `signed=False`: no token at all (an upload address carrying its own signature)."""
        import requests

        timeout = timeout or self.settings["timeout"]
        for refreshed in (False, True):
            bearer = token or (self.bearer() if signed else None)
            sent = {**self.headers(), **(headers or {})} if signed else dict(headers or {})
            if bearer:
                sent["Authorization"] = f"{self.auth_scheme} {bearer}"
            try:
                response = _request(method, url, headers=sent, timeout=timeout, **arguments)
            except requests.RequestException as error:
                self.reached = self.reached or may_have_been_sent(error)
                raise unanswered(self.title, error, sends=sends) from None
            self.reached = True
            if signed and token is None and not refreshed and self.token_refused(response):
                self.bearer(rejected=bearer)
                continue
            if not check or self.succeeded(response) or response.status_code in accept:
                return response
            if token is not None and response.status_code == 401:
                said = self.said(response)
                raise PassingError(f"{self.title} refused the call's own token ({said})")
            raise self.classify(response, sends=sends)
        raise AssertionError("unreachable")

    def succeeded(self, response: Any) -> bool:
        return response.status_code < 300

    # -- the calls of a sign-in (no account yet) ---------------------------------------------

    @classmethod
    def for_sign_in(cls, attempt: Any) -> HttpPlatform:
        """An instance for the calls of a sign-in (signin.Attempt): its settings, no database."""
        return cls(PlatformContext(cls.name, attempt.settings, attempt.paths))

    @classmethod
    def sign_in_call(
        cls, attempt: Any, method: str, url: str, *, what: str, token: str | None = None,
        **arguments: Any,
    ) -> dict[str, Any]:  # fmt: skip
        """One call of a sign-in on the one request path, with the brand-new `token` (never
        refreshed; None: no token at all): its JSON body. SignInRefused says what the platform
        would not do, in its own words; no answer is an AutorettoError too."""
        platform = cls.for_sign_in(attempt)
        try:
            response = platform.call(
                method, url, token=token, signed=token is not None, check=False,
                timeout=attempt.timeout, **arguments,
            )  # fmt: skip
        except PlatformError as error:
            raise AutorettoError(f"{error.reason} to finish the sign-in") from None
        if platform.succeeded(response):
            return json_body(response)
        raise SignInRefused(
            f"{cls.title} would not {what} ({platform.said(response)})",
            status=response.status_code,
            code=platform.problem(response)[0],
        )

    def token_refused(self, response: Any) -> bool:
        """Does this answer refuse the access token (worth one refresh and one more try)?"""
        return response.status_code == 401

    def problem(self, response: Any) -> tuple[str, str]:
        """(code, words) of an error answer, as the platform writes them."""
        return problem_of(json_body(response))

    def said(self, response: Any) -> str:
        """The error answer in a few words for a reason: "code: words" when the code is a
        word, else the words, else the status."""
        code, words = self.problem(response)
        word = code.replace("_", "").replace(".", "")
        if words and word.isalnum() and not word.isdigit():
            return f"{code}: {words}"
        return words or code or f"HTTP {response.status_code}"

    def classify(self, response: Any, *, sends: bool = False) -> PlatformError:
        """The PlatformError of an error answer, by the status ladder."""
        status = response.status_code
        kind = self.statuses.get(status) or LADDER.get(status)
        if kind is None and status >= 500:
            kind = self.statuses.get(500) or LADDER[500]
        said = self.said(response)
        wait = retry_after(response)
        if kind == "lost_if_sent" and sends:
            return LostAnswer(f"{self.title} answered {status} to the post; it may have gone out")
        if kind in ("passing", "lost_if_sent"):
            doing = "is rate limiting" if status == 429 else "is erring"
            return PassingError(f"{self.title} {doing} ({said})", retry_after=wait)
        if kind == "reconnect":
            return self.reconnect(f"{self.title} refused the account ({said})")
        if kind == "needs_person":
            return NeedsPerson(f"{self.title} refused: {said}")
        if kind == "limit":
            return LimitReached(f"{self.title}: {said}")
        return ContentRejected(f"{self.title} refused the post: {said}")

    def reconnect(self, why: str) -> NeedsPerson:
        """Mark the account `reconnect` (nothing more is sent from it); the NeedsPerson to
        raise. Without a database (a sign-in, say) only the error."""
        text = f"{why}; {accounts.reconnect_hint(self.name)}"
        if self.context.db is not None:
            accounts.mark_reconnect(self.context.db, self.name, text)
        return NeedsPerson(text)


class AccountPlatform(HttpPlatform):
    """A platform that posts from an account connected by `autoretto connect NAME` (while its
    row says `connected`; else the row says in plain words why nothing is sent)."""

    #: what `autoretto connect NAME` needs besides the name, for the hint (e.g. " --handle H")
    connect_arguments: ClassVar[str] = ""
    #: refresh an access token with less than this left
    refresh_margin: ClassVar[timedelta] = accounts.REFRESH_MARGIN
    #: how the platform's token endpoint takes the app's credentials, for `refresh`
    token_endpoint: ClassVar[TokenEndpoint] = TokenEndpoint()

    def __init__(self, context: Any) -> None:
        super().__init__(context)
        self._account: accounts.Account | None = None

    @property
    def db(self) -> Database:
        if self.context.db is None:
            raise NeedsPerson(f"{self.title} needs the database to find its account")
        return self.context.db

    def account_row(self) -> accounts.Account | None:
        """The account row as it is now (None without one, or without a database)."""
        if self.context.db is None:
            return None
        return accounts.load_account(self.context.db, self.name)

    def account(self) -> accounts.Account:
        """The connected account (read once per instance); NeedsPerson when there is none."""
        if self._account is None:
            try:
                self._account = accounts.require_account(self.db, self.name, self.title)
            except AutorettoError as error:
                raise NeedsPerson(str(error)) from None
        return self._account

    def is_connected(self) -> bool:
        account = self.account_row()
        return account is not None and account.state == "connected"

    def account_key(self) -> str:
        account = self.account_row()
        return account.account_id if account is not None else ""

    def not_ready_reason(self) -> str | None:
        account = self.account_row()
        if account is None:
            return (
                f"{self.title} is not connected; run "
                f"`autoretto connect {self.name}{self.connect_arguments}` once"
            )
        if account.state != "connected":
            return account.reason or f"{self.title}: {accounts.reconnect_hint(self.name)}"
        return None

    def token_expires_at(self) -> datetime | None:
        """The sign-in's end as the account records it (`refresh_expires_at`: a refresh token
        that lasts so long; `token_expires_at`: an access token that cannot be refreshed)."""
        account = self.account_row()
        meta = account.meta if account else {}
        until = meta.get("refresh_expires_at") or meta.get("token_expires_at")
        return from_iso(until) if until else None

    # -- tokens ----------------------------------------------------------------------------

    def tokens(self, rejected: str | None = None) -> accounts.Tokens:
        """The account's tokens, the access token good for `refresh_margin`: refreshed under the
        account's lock when due (or when the platform just refused `rejected`). A sign-in
        refused for good or a vault key missing needs a person; a failed refresh is passing."""
        try:
            self.account()
            try:
                return accounts.fresh_tokens(
                    self.db,
                    self.home,
                    platform=self.name,
                    title=self.title,
                    refresh=self.refresh,
                    rejected_token=rejected,
                    margin=self.refresh_margin,
                )
            except accounts.RefreshFailed as error:
                return self.refresh_failed(error)
        except AutorettoError as error:  # reconnect, not connected, a vault key to restore
            raise NeedsPerson(str(error)) from None

    def refresh_failed(self, error: accounts.RefreshFailed) -> accounts.Tokens:
        """A refresh that failed for now is passing (a platform may post with a token still
        good for a while instead)."""
        raise PassingError(f"{self.title}: {error}", retry_after=error.retry_after)

    def refresh(self, tokens: accounts.Tokens) -> dict[str, Any]:
        """A new access token (as accounts.merge_refresh takes it): by default the OAuth refresh
        grant."""
        answer = refresh_grant(
            tokens, endpoint=self.token_endpoint, title=self.title, timeout=self.settings["timeout"]
        )
        self.refreshed(answer)
        return answer

    def refreshed(self, answer: dict[str, Any]) -> None:
        """Note on the account when a refresh token's `refresh_token_expires_in` /
        `refresh_expires_in` seconds end."""
        seconds = answer.get("refresh_token_expires_in") or answer.get("refresh_expires_in")
        account = self.account_row()
        if seconds and account is not None:
            until = now() + timedelta(seconds=int(seconds))
            accounts.update_meta(self.db, account, {"refresh_expires_at": iso(until)})

    def bearer(self, rejected: str | None = None) -> str | None:
        return str(self.tokens(rejected)["access_token"])


# --- shared by x, pinterest, tiktok ---


class CreatesOnce(AccountPlatform):
    """A platform whose post is made by one create call that carries no idempotency key.

    The moment of that call is on the attempt's record before it is made (`create`), and a
    later try, or `find_attempt`, looks among the account's posts made since (`look`) before
    anything is created again. The adapter declares only its search (`recent_posts`) and how
    to know its attempt in it (`is_attempt`).
    """

    can_find_attempts = True
    #: the handle the made post's id is kept under
    created_key: ClassVar[str] = "post_id"

    def post_url(self, post_id: str) -> str | None:
        """The address of the made post `post_id` (None: none to give)."""
        return None

    def recent_posts(self, handles: dict[str, Any], since: datetime) -> Iterator[list[dict]]:
        """Pages of the account's posts, newest first, that may hold the attempt of `handles`
        (made since `since`); each post a dict with its `id` (and `created_at` where the
        platform gives one: a page all older than `since` ends the search)."""
        raise NotImplementedError

    def is_attempt(self, post: dict[str, Any], handles: dict[str, Any]) -> bool:
        """Is `post` (one of `recent_posts`) the attempt of `handles`?"""
        raise NotImplementedError

    def api(self, method: str, path: str, **arguments: Any) -> dict[str, Any]:
        """One call of an API path on the request path (`call`); its JSON body."""
        return json_body(self.call(method, self.url(path), **arguments))

    def made(self, post_id: str) -> Published:
        return Published(post_id, self.post_url(post_id))

    def look(self, handles: dict[str, Any]) -> Published | None:
        """The post of an attempt whose create call went out, when the platform shows it."""
        if handles.get(self.created_key):
            return self.made(handles[self.created_key])
        if not handles.get("create_sent"):
            return None  # the create call is recorded before it is made: none was
        since = from_iso(handles["create_sent"]) - timedelta(minutes=5)
        found = first_found(
            self.recent_posts(handles, since),
            lambda post: self.is_attempt(post, handles),
            older=lambda page: _all_before(page, since),
        )
        return self.made(str(found["id"])) if found is not None else None

    def _find_attempt(self, request: PostRequest) -> Published | None:
        return self.look(dict(request.handles))

    def create(
        self, request: PostRequest, handles: dict[str, Any], send: Callable[[], str],
        **record: Any,
    ) -> Published:  # fmt: skip
        """Make the post: `send` is the create call (`sends=True`), returning the new post's
        id; the call's moment and `record` are saved on the attempt before it is made. An
        answer refusing the call means nothing was made (the moment is dropped again); an
        answer without an id may hide a post."""
        handles.update({**record, "create_sent": iso(self.now)})
        self.save(request, handles)
        try:
            post_id = send()
        except LostAnswer:
            raise
        except PlatformError:
            handles.pop("create_sent", None)
            self.save(request, handles)
            raise
        if not post_id:
            raise LostAnswer(f"{self.title} answered the post without an id; it may have gone out")
        handles[self.created_key] = post_id
        self.save(request, handles)
        return self.made(post_id)


class ByHand(AccountPlatform):
    """A platform a person posts to from a screen (`autoretto post NAME EPISODE`): the
    instance made for that one post gets the person's answers; without them nothing is sent."""

    #: what its posts are called, for "... are made by a person"
    posts_called: ClassVar[str] = "posts"

    def __init__(self, context: Any, *, choices: Any = None) -> None:
        super().__init__(context)
        self.choices = choices

    def unsuitable_reason(self, episode: EpisodeView) -> str | None:
        video = self.video_path(episode)
        return None if video.is_file() else f"the episode's video {video} is missing"

    def _publish(self, request: PostRequest) -> Published:
        if self.choices is None:
            raise NeedsPerson(
                f"{self.title} {self.posts_called} are made by a person: run `autoretto post "
                f"{self.name} {request.episode.id}` at a terminal"
            )
        return self.retrying(lambda: self._send(request, self.choices))

    def screen(self, view: EpisodeView, video: Any, already: str | None) -> Any:
        """What the posting screen shows before the person chooses: what the platform says
        of the account (PlatformError when it will not say), the episode `view`, its
        `video` (questions.VideoFacts), how an earlier post of it stands (`already`)."""
        raise NotImplementedError

    @classmethod
    def ask_choices(cls, screen: Any, ask: Any, say: Any) -> Any:
        """The posting screen's questions (autoretto/questions.py) over what `screen` read;
        the person's choices. Raises questions.Cancelled when the person declines."""
        raise NotImplementedError

    def _send(self, request: PostRequest, choices: Any) -> Published:
        raise NotImplementedError


def sign_in_tokens(
    platform: type[AccountPlatform], attempt: Any, *, missing: str = "; connect again",
    **keep: Any,
) -> accounts.Tokens:  # fmt: skip
    """The tokens of a sign-in's code exchange (signin.Attempt) with what refreshes them: the
    app's id and secret under the names of the platform's `token_endpoint`, the token address
    and `keep`. UsageError when no refresh token came (`missing` says what to do)."""
    if not attempt.answer.get("refresh_token"):
        raise UsageError(f"{platform.title} sent no refresh token{missing}")
    endpoint = platform.token_endpoint
    bundle = {
        endpoint.id_key: attempt.client.id,
        endpoint.secret_key: attempt.client.secret or None,
        "token_uri": attempt.settings["token_uri"],
        **keep,
    }
    return accounts.merge_refresh(bundle, attempt.answer)


def _all_before(page: list[dict[str, Any]], moment: datetime) -> bool:
    """Is every `created_at` that `page` gives earlier than `moment` (none given: no)?"""
    created = [post.get("created_at") for post in page if post.get("created_at")]
    return bool(created) and all(_before(str(text), moment) for text in created)


def _before(text: str, moment: datetime) -> bool:
    """Is the platform's timestamp `text` earlier than `moment`? One that cannot be read is not
    taken for older. Pinterest declares a Pin's `created_at` an RFC 3339 `date-time`
    (https://github.com/pinterest/api-description v5/openapi.yaml, schema Pin), which carries
    an offset, yet the fake gives it without one ("2026-11-29T10:05:30"): both are read, one
    without an offset as UTC. X's end in "Z"."""
    try:
        moment_of_text = from_iso(text)
    except ValueError:
        return False
    return moment_of_text.replace(tzinfo=moment_of_text.tzinfo or UTC) < moment
