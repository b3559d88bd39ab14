"""The platform registry: one explicit table, in posting order (ARCHITECTURE.md §5).

A slot posts to a channel's chosen platforms in this order, whatever order the config lists
them in. TikTok and Pinterest are never on a slot and are not in this table.
"""

from __future__ import annotations

from .base import Platform
from .bluesky import BlueskyPlatform
from .facebook import FacebookPlatform
from .folder import FolderPlatform
from .instagram import InstagramPlatform
from .linkedin import LinkedInPlatform
from .threads import ThreadsPlatform
from .webhook import WebhookPlatform
from .x import XPlatform
from .youtube import YouTubePlatform

REGISTRY: dict[str, type[Platform]] = {
    "youtube": YouTubePlatform,
    "facebook": FacebookPlatform,
    "instagram": InstagramPlatform,
    "linkedin": LinkedInPlatform,
    "threads": ThreadsPlatform,
    "bluesky": BlueskyPlatform,
    "x": XPlatform,
    "webhook": WebhookPlatform,
    "folder": FolderPlatform,
}

__all__ = ["REGISTRY", "Platform"]
