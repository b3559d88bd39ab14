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

# every version the table lists, the ended ones too (a call to one is served by the oldest
# version still served)
AVAILABLE_UNTIL: dict[str, date | None] = {
    "v1.0": date(2015, 4, 30),
    "v2.0": date(2016, 8, 8),
    "v2.1": date(2016, 10, 31),
    "v2.2": date(2017, 3, 27),
    "v2.3": date(2017, 7, 10),
    "v2.4": date(2017, 10, 9),
    "v2.5": date(2018, 4, 12),
    "v2.6": date(2018, 7, 13),
    "v2.7": date(2018, 10, 5),
    "v2.8": date(2019, 4, 18),
    "v2.9": date(2019, 7, 22),
    "v2.10": date(2019, 11, 7),
    "v2.11": date(2020, 1, 28),
    "v2.12": date(2020, 5, 5),
    "v3.0": date(2020, 7, 28),
    "v3.1": date(2020, 10, 27),
    "v3.2": date(2021, 5, 4),
    "v3.3": date(2021, 8, 3),
    "v4.0": date(2021, 11, 2),
    "v5.0": date(2022, 2, 3),
    "v6.0": date(2022, 5, 5),
    "v7.0": date(2022, 8, 4),
    "v8.0": date(2022, 11, 1),
    "v9.0": date(2023, 2, 23),
    "v10.0": date(2023, 6, 8),
    "v11.0": date(2023, 9, 14),
    "v12.0": date(2024, 2, 8),
    "v13.0": date(2024, 5, 28),
    "v14.0": date(2024, 9, 17),
    "v15.0": date(2024, 11, 20),
    "v16.0": date(2025, 5, 14),
    "v17.0": date(2025, 9, 12),
    "v18.0": date(2026, 1, 26),
    "v19.0": date(2026, 5, 21),
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
