"""What the platforms want a person to know that is no failed post: an API version about to end
(or ended), a YouTube upload that YouTube keeps private. `status`, the report, `doctor` and the
notifier all read `platform_warnings`; `tell_platform_warnings` tells the notifier once each.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING, Any

from ..ledger import meta
from ..ledger.accounts import connected_platforms
from ..ledger.views import posts_kept_private
from .versions import version_facts

if TYPE_CHECKING:
    from ..config import Config
    from ..ledger.store import Store as Database

#: what to do about a video YouTube keeps private (the audit form: YouTube API Services)
KEPT_PRIVATE_FIX = (
    "uploads from an API project that has not passed Google's audit stay private; apply for "
    "the audit at https://support.google.com/youtube/contact/yt_api_form, and until then make "
    "each video public in YouTube Studio"
)


def connected_versions(config: Config | None, db: Database, today: Any) -> list[dict[str, Any]]:
    """The API version and end date of each connected platform that has versions."""
    from . import MANUAL_PLATFORMS, REGISTRY, platform_class

    found = []
    for name in connected_platforms(db):
        if name in REGISTRY or name in MANUAL_PLATFORMS:
            settings = config.platforms.get(name) if config is not None else None
            facts = version_facts(platform_class(name), settings)
            if facts is not None:
                found.append(facts.to_json(today))
    return found


def platform_warnings(config: Config | None, db: Database, now: datetime) -> list[dict[str, Any]]:
    """Every platform notice for `status` and the report: `key` (stable, for telling once),
    `platform`, `level` (warning | problem) and `reason` in plain words."""
    found = [
        {
            "key": f"api_version:{facts['platform']}:{facts['version']}:{facts['state']}",
            "platform": facts["platform"],
            "level": "problem" if facts["state"] == "ended" else "warning",
            "reason": facts["reason"],
        }
        for facts in connected_versions(config, db, now.date())
        if facts["state"] != "ok"
    ]
    # Published YouTube posts whose video YouTube keeps private though public was asked.
    for post in posts_kept_private(db, "youtube"):
        kept = post["handles"].get("kept_private")
        if isinstance(kept, dict):
            found.append(
                {
                    "key": f"kept_private:{post['id']}",
                    "platform": "youtube",
                    "level": "warning",
                    "reason": f"post {post['id']} ({post['channel']}) is on YouTube at "
                    f"{post['url']} but YouTube keeps it {kept.get('privacy')}: "
                    f"{KEPT_PRIVATE_FIX}",
                }
            )
    return found


def tell_platform_warnings(
    config: Config, db: Database, now: datetime, tell: Callable[..., None], notes: list[str]
) -> None:
    """Tell the notifier each platform notice once (remembered in `meta`), and add it to the
    run's notes each time."""
    for warning in platform_warnings(config, db, now):
        notes.append(warning["reason"])
        key = f"told:{warning['key']}"
        if meta.get(db, key) is not None:
            continue
        tell("platform_warning", **{k: v for k, v in warning.items() if k != "key"})
        meta.put_if_absent(db, key, 1)
