"""API versions as data: which version each platform speaks and when it stops being served.

A versioned platform declares them on its class (`api_version`, `api_versions`,
`api_version_source`: see base.py); `[platforms.NAME] api_version` overrides the version.
`doctor` and `status` read `version_facts` (30 days ahead is a warning, a past date a problem);
a platform that answers "this version no longer exists" gives `sunset_reason`'s sentence as a
needs-person failure, never a passing retry.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, timedelta
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .base import Platform

#: how long before a version's end `doctor`, `status` and the notifier start to say so
WARN_AHEAD = timedelta(days=30)


@dataclass(frozen=True)
class VersionFacts:
    """The API version a platform speaks for this home, and when it stops being served."""

    platform: str
    title: str
    version: str
    ends: date | None  # None: the platform has announced no end
    estimated: bool  # True when `ends` follows the platform's rule, not a published date
    source: str  # the page the schedule comes from
    overridden: bool  # set by `[platforms.NAME] api_version`

    def state(self, today: date) -> str:
        """`ended` (the end date is past), `ending` (within 30 days) or `ok`."""
        if self.ends is None or self.ends - today > WARN_AHEAD:
            return "ok"
        return "ended" if today >= self.ends else "ending"

    def reason(self, today: date) -> str | None:
        """What a person should read about this version today; None when all is well."""
        state = self.state(today)
        if self.ends is None or state == "ok":
            return None
        when = _end_words(self.ends, self.estimated)
        fix = fix_words(self.platform)
        if state == "ended":
            return f"{self.title} stopped serving API version {self.version} on {when}: {fix}"
        return (
            f"{self.title} stops serving API version {self.version} on {when} "
            f"(in {(self.ends - today).days} days): {fix}"
        )

    def to_json(self, today: date) -> dict[str, Any]:
        return {
            "platform": self.platform,
            "version": self.version,
            "ends": self.ends.isoformat() if self.ends else None,
            "estimated": self.estimated,
            "state": self.state(today),
            "source": self.source,
            "overridden": self.overridden,
            "reason": self.reason(today),
        }


def _end_words(ends: date, estimated: bool) -> str:
    return f"{ends.isoformat()} (estimated)" if estimated else ends.isoformat()


def fix_words(platform: str) -> str:
    return (
        "upgrade Autoretto, or set api_version under "
        f"[platforms.{platform}] to a version the platform still serves"
    )


def version_facts(cls: type[Platform], settings: Any) -> VersionFacts | None:
    """The version `cls` speaks with these settings (a parsed table, a dict, or None);
    None for a platform without API versions."""
    if cls.api_version is None:
        return None
    version = cls.version_from(settings)
    ends, estimated = cls.version_ends(version)
    return VersionFacts(
        platform=cls.name,
        title=cls.title,
        version=version,
        ends=ends,
        estimated=estimated,
        source=cls.api_version_source,
        overridden=version != cls.api_version,
    )


def sunset_reason(cls: type[Platform], version: str, said: str) -> str:
    """The needs-person sentence for a platform's "this version no longer exists" answer:
    which version, since when, and what to do."""
    ends, estimated = cls.version_ends(version)
    since = f"since {_end_words(ends, estimated)}" if ends else "as of now"
    return (
        f"{cls.title} no longer serves API version {version} ({since}; it answered: {said}): "
        f"{fix_words(cls.name)}"
    )
