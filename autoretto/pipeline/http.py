"""What every provider client shares: timeouts, retries of passing errors, plain refusals.

A response is sorted into one of three outcomes: a result, a refusal only a person can fix
(ProviderRefused, never retried) or a passing failure (retried with exponential backoff
by tenacity, then ProviderUnavailable). A passing failure may say how long to wait (a
Retry-After header, Gemini's RetryInfo); that wait is kept instead of the backoff. A subclass
may also end the tries at once with ProviderUnavailable (a quota used up for the day). API
keys never appear in logs or messages.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from urllib.parse import urlsplit

from autoretto.pipeline.errors import ProviderRefused, ProviderUnavailable

log = logging.getLogger("autoretto.pipeline.http")

PASSING_STATUSES = frozenset({408, 409, 425, 429, 500, 502, 503, 504})
MAX_RETRY_WAIT = 60.0


class PassingFailure(Exception):
    """Internal: a failure worth retrying; becomes ProviderUnavailable when retries run out.

    `wait` is the pause the service asked for before the next try, in seconds (None: back off).
    """

    def __init__(self, message: str, *, wait: float | None = None) -> None:
        super().__init__(message)
        self.wait = wait


class ProviderClient:
    """Base of the provider clients. Subclasses set `name` and may refine `refusal`."""

    name = "provider"

    def __init__(
        self,
        base_url: str,
        *,
        timeout: float,
        attempts: int,
        retry_wait: float,
        sleep: Callable[[float], None] = time.sleep,
        session=None,
    ) -> None:
        import requests

        self.base_url = base_url.rstrip("/")
        self.timeout = timeout
        self.attempts = attempts
        self.retry_wait = retry_wait
        self.sleep = sleep
        self.session = session or requests.Session()

    # -- for subclasses -------------------------------------------------------------
    def auth_headers(self) -> dict[str, str]:
        return {}

    def refusal(self, status: int, body: str) -> str | None:
        """Plain words when `status`/`body` means a person must act, else None."""
        if status in (401, 403):
            return f"{self.name} refused the API key (HTTP {status}); check the key"
        if status == 402:
            return f"{self.name} says the account is out of credits (HTTP 402)"
        return None

    def problem(self, status: int, body: str, headers, what: str) -> Exception:
        """The error an answer of `status` (>= 400) stands for: ProviderRefused (a person must
        act), PassingFailure (tried again) or ProviderUnavailable (no more tries now)."""
        refusal = self.refusal(status, body)
        if refusal:
            return ProviderRefused(refusal)
        if status in PASSING_STATUSES or status >= 500:
            return PassingFailure(f"HTTP {status}", wait=retry_after(headers))
        return ProviderRefused(
            f"{self.name} rejected the request when {what} (HTTP {status}): {_short(body)}"
        )

    # -- the template ---------------------------------------------------------------
    def call(self, method: str, url: str, *, what: str, **kwargs):
        """Send one request (retrying passing failures); return the `requests.Response`.

        `url` may be a path under base_url or an absolute URL. Credentials are sent only
        to base_url's host. `what` completes "... when <what>" in error messages.
        """
        url = self._absolute(url)
        return self._with_retries(lambda: self._send_once(method, url, what=what, **kwargs), what)

    def call_json(self, method: str, url: str, *, what: str, **kwargs):
        """`call` and decode a JSON body; a garbled body counts as a passing failure."""
        url = self._absolute(url)

        def attempt():
            response = self._send_once(method, url, what=what, **kwargs)
            try:
                return response.json()
            except ValueError:
                snippet = response.text[:60].replace("\n", " ")
                raise PassingFailure(f"the answer was not JSON ({snippet!r})") from None

        return self._with_retries(attempt, what)

    def passing(self, message: str, *, wait: float | None = None) -> PassingFailure:
        """For subclasses: a passing failure found in an answer (retried like a 503)."""
        return PassingFailure(message, wait=wait)

    def _absolute(self, url: str) -> str:
        return url if url.startswith(("http://", "https://")) else self.base_url + url

    def _with_retries(self, attempt, what: str):
        import tenacity

        backoff = tenacity.wait_exponential(multiplier=self.retry_wait, max=MAX_RETRY_WAIT)

        def wait(retry_state) -> float:
            failure = retry_state.outcome.exception()
            if isinstance(failure, PassingFailure) and failure.wait is not None:
                return failure.wait
            return backoff(retry_state)

        retrying = tenacity.Retrying(
            stop=tenacity.stop_after_attempt(self.attempts),
            wait=wait,
            retry=tenacity.retry_if_exception_type(PassingFailure),
            sleep=self.sleep,
            reraise=True,
        )
        try:
            return retrying(attempt)
        except PassingFailure as failure:
            raise ProviderUnavailable(
                f"{self.name} is not answering properly when {what} "
                f"(gave up after {self.attempts} tries): {failure}"
            ) from None

    def _send_once(
        self, method: str, url: str, *, what: str, timeout: float | None = None, **kwargs
    ):
        import requests

        timeout = self.timeout if timeout is None else timeout
        headers = dict(kwargs.pop("headers", {}) or {})
        if _same_host(url, self.base_url):
            headers.update(self.auth_headers())
        log.debug("%s %s (%s)", method, _without_query(url), what)
        try:
            response = self.session.request(method, url, headers=headers, timeout=timeout, **kwargs)
        except requests.Timeout:
            raise PassingFailure(f"no answer within {timeout:g} s") from None
        except requests.ConnectionError:
            raise PassingFailure(f"cannot connect to {_host(url)}") from None
        except requests.RequestException as error:
            raise PassingFailure(type(error).__name__) from None
        status = response.status_code
        if status < 400:
            return response
        raise self.problem(status, response.text[:4000], response.headers, what)


def retry_after(headers) -> float | None:
    """Seconds a Retry-After header asks for (RFC 9110 10.2.3, the delay-seconds form), capped
    at MAX_RETRY_WAIT; None when there is none or it is a date."""
    value = (headers or {}).get("Retry-After")
    try:
        return min(max(float(value), 0.0), MAX_RETRY_WAIT) if value is not None else None
    except ValueError:
        return None


def _host(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.hostname}" + (f":{parts.port}" if parts.port else "")


def _same_host(url: str, base: str) -> bool:
    return _host(url) == _host(base)


def _without_query(url: str) -> str:
    return url.split("?", 1)[0]


def _short(text: str, limit: int = 200) -> str:
    import json

    try:
        data = json.loads(text)
        error = data.get("error") if isinstance(data, dict) else None
        message = error.get("message") if isinstance(error, dict) else error
        if isinstance(message, str):  # Google's {"error": {"message"}}, gcui's {"error": "…"}
            text = message
        elif isinstance(data, dict) and isinstance(data.get("detail"), str):
            text = data["detail"]
    except (ValueError, AttributeError):
        pass
    text = " ".join(text.split())
    return text[:limit] + ("…" if len(text) > limit else "")
