"""Small helpers every HTTP platform adapter needs, written once."""

from __future__ import annotations

from urllib.parse import urlsplit


def good_base_url(url: str) -> bool:
    """https anywhere; plain http only to this machine (the tests' fake servers)."""
    parts = urlsplit(url)
    if parts.scheme == "https" and parts.hostname:
        return True
    return parts.scheme == "http" and parts.hostname in ("127.0.0.1", "localhost", "::1")
