"""Meta's documented version window, shared by the Facebook, Instagram and Threads fakes.

Meta publishes no machine-readable description of the Graph API, so its versioning rules are
written here, each with its page:

- each Graph API version is served until its "Available Until" date
  (https://developers.facebook.com/docs/graph-api/changelog/versions/);
- "once a version is no longer usable, any calls made to it will be defaulted to the next
  oldest usable version" (https://developers.facebook.com/docs/graph-api/guides/versioning);
- a version that never existed is refused. Meta's page does not give that answer's wording;
  the fake uses the legacy code 12 ("This API version is deprecated",
  https://developers.facebook.com/docs/graph-api/guides/error-handling lists the envelope), or
  the "Unknown path components" message when a test asks for that shape.
- the Threads API has the one version v1.0 (https://developers.facebook.com/docs/threads/changelog).

"Today" is the test's clock (AUTORETTO_NOW).
"""

from __future__ import annotations

from datetime import date

from tests.fakes.base import today

AVAILABLE_UNTIL: dict[str, date | None] = {
    "v20.0": date(2026, 9, 24),
    "v21.0": date(2027, 1, 21),
    "v22.0": date(2027, 5, 20),
    "v23.0": date(2027, 10, 8),
    "v24.0": date(2028, 2, 18),
    "v25.0": date(2028, 7, 29),
    "v26.0": None,
    "v27.0": None,
}
THREADS_VERSIONS: dict[str, date | None] = {"v1.0": None}


def served_version(version: str, schedule: dict[str, date | None] | None = None) -> str | None:
    """The version that actually answers a call made to `version` today: itself while it is
    served, the oldest version still served once it has expired, None when it never existed."""
    schedule = AVAILABLE_UNTIL if schedule is None else schedule
    if version not in schedule:
        return None
    day = today()
    served = [v for v, until in schedule.items() if until is None or until > day]
    if version in served:
        return version
    return min(served, key=lambda v: tuple(int(n) for n in v[1:].split(".")))


def unknown_version_error(version: str, shape: str = "code12") -> dict:
    """The error body for a version the Graph API does not know."""
    if shape == "path":
        return {
            "error": {
                "message": f"Unknown path components: /{version}/",
                "type": "OAuthException",
                "code": 2500,
                "fbtrace_id": "Afake",
            }
        }
    return {
        "error": {
            "message": f"(#12) API version {version} is not supported",
            "type": "OAuthException",
            "code": 12,
            "fbtrace_id": "Afake",
        }
    }
