"""Small helpers every HTTP platform adapter needs, written once."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit


def json_body(response: Any) -> dict[str, Any]:
    """The answer's JSON object, or {} when it has none (a proxy's HTML error page, say)."""
    try:
        body = response.json()
    except ValueError:
        return {}
    return body if isinstance(body, dict) else {}


def never_connected(error: BaseException) -> bool:
    """True when the connection was refused or the name not resolved: nothing was sent."""
    text = repr(error)
    return any(
        marker in text
        for marker in ("NewConnectionError", "Connection refused", "NameResolutionError")
    )


def good_base_url(url: str) -> bool:
    """https anywhere; plain http only to this machine (the tests' fake servers)."""
    parts = urlsplit(url)
    if parts.scheme == "https" and parts.hostname:
        return True
    return parts.scheme == "http" and parts.hostname in ("127.0.0.1", "localhost", "::1")
