"""Small helpers every HTTP platform adapter needs, written once."""

from __future__ import annotations

from urllib.parse import SplitResult, urlsplit


def _address(url: str) -> SplitResult | None:
    """The parts of `url` when it is an address with a host (and, if any, a numeric port),
    without spaces; None otherwise."""
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - a port that is no number raises
    except ValueError:  # that, or a bracketed host that is no IPv6 address
        return None
    if not parts.hostname or not all(c.isprintable() and not c.isspace() for c in url):
        return None
    return parts


def http_address(url: str) -> bool:
    """An http(s) address with a host, anywhere (a user's own endpoint, a LAN one included)."""
    parts = _address(url)
    return parts is not None and parts.scheme in ("http", "https")


def good_base_url(url: str) -> bool:
    """https anywhere; plain http only to this machine (the tests' fake servers)."""
    parts = _address(url)
    if parts is None:
        return False
    if parts.scheme == "https":
        return True
    return parts.scheme == "http" and parts.hostname in ("127.0.0.1", "localhost", "::1")
