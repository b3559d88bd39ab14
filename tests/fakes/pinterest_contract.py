"""What Pinterest's own v5 description says about the calls Autoretto makes, for the fake.

The facts are read off pinterest/api-description `v5/openapi.json` (release 5.23.0, commit
c05b189, 2025-12-11) and written here as JSON Schema: the request bodies (`PinCreate` with
`PinMediaSourceVideoID`, `MediaUploadCreate`), the fields a `Pin` answer has, and the OAuth
scopes each operation declares. `pinterest-api-sdk` would have given generated models, but it
pins urllib3 and six to old versions (a downgrade for everything else here), and the models of
its newest generated client still have the `note` field that 5.20.0 removed, so the
description is the reference.

API 5.28 added `ai_disclosures` to `PinCreate` and `Pin` (pinterest/api-description
v5/changelog-5.23-to-5.28.md, commit 068b515; its schema `AiDisclosures`: `values`, a list of
`AiDisclosureItem`, AI_MODIFIED or SYNTHETIC_PERFORMER, as the SDKs generated from 5.28 have
it): that field alone is added here to the 5.23 facts; 5.28's other changes to these calls,
if any, are not written here.

The description puts no `additionalProperties: false` on its bodies; the fake is stricter and
refuses a field the description does not have (Pinterest's wording for that answer is not
documented), so a field that is gone (`note`) is caught instead of silently dropped.
"""

from __future__ import annotations

from typing import Any

DESCRIPTION = (
    "pinterest/api-description v5/openapi.json, release 5.23.0 (c05b189), with 5.28's "
    "ai_disclosures (v5/changelog-5.23-to-5.28.md, 068b515)"
)

_DIGITS = {"type": "string", "pattern": r"^\d+$"}


def _text(limit: int | None = None) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": ["string", "null"]}
    if limit:
        schema["maxLength"] = limit
    return schema


PIN_MEDIA_SOURCE_VIDEO_ID: dict[str, Any] = {
    "type": "object",
    "properties": {
        "source_type": {"enum": ["video_id"]},
        "media_id": _DIGITS,
        "cover_image_url": {"type": "string"},
        "cover_image_content_type": {"enum": ["image/jpeg", "image/png"]},
        "cover_image_data": {"type": "string"},
        "cover_image_key_frame_time": {"type": "integer", "minimum": 0},
        "is_standard": {"type": "boolean"},
    },
    "required": ["media_id", "source_type"],
    "additionalProperties": False,
}

#: `AiDisclosures` (5.28): https://developers.pinterest.com/docs/api/v5/pins-create/
AI_DISCLOSURES: dict[str, Any] = {
    "type": "object",
    "properties": {
        "values": {
            "type": "array",
            "items": {"enum": ["AI_MODIFIED", "SYNTHETIC_PERFORMER"]},
        },
    },
    "additionalProperties": False,
}

PIN_CREATE: dict[str, Any] = {
    "type": "object",
    "properties": {
        "ai_disclosures": AI_DISCLOSURES,
        "alt_text": _text(500),
        "board_id": _DIGITS,
        "board_section_id": {"type": ["string", "null"], "pattern": r"^\d+$"},
        "description": _text(800),
        "dominant_color": _text(),
        "link": _text(2048),
        "media_source": PIN_MEDIA_SOURCE_VIDEO_ID,
        "parent_pin_id": {"type": ["string", "null"], "pattern": r"^\d+$"},
        "sponsor_id": {"type": ["string", "null"], "pattern": r"^\d+$"},
        "title": _text(100),
    },
    "additionalProperties": False,
}

MEDIA_UPLOAD_CREATE: dict[str, Any] = {
    "type": "object",
    "properties": {"media_type": {"enum": ["video"]}},
    "required": ["media_type"],
    "additionalProperties": False,
}

#: the properties of the `Pin` schema: what an answer carries (nothing else)
PIN_FIELDS = (
    "ai_disclosures",
    "alt_text",
    "board_id",
    "board_owner",
    "board_section_id",
    "created_at",
    "creative_type",
    "description",
    "dominant_color",
    "has_been_promoted",
    "id",
    "is_owner",
    "is_standard",
    "link",
    "media",
    "parent_pin_id",
    "pin_metrics",
    "title",
)

#: (method, path pattern) -> the scopes its `pinterest_oauth2` security requirement lists
SCOPES: dict[tuple[str, str], frozenset[str]] = {
    ("POST", "/v5/pins"): frozenset({"boards:read", "boards:write", "pins:read", "pins:write"}),
    ("POST", "/v5/media"): frozenset({"pins:read", "pins:write"}),
    ("GET", "/v5/media/{media_id}"): frozenset({"pins:read"}),
    ("GET", "/v5/boards/{board_id}/pins"): frozenset({"boards:read", "pins:read"}),
    ("GET", "/v5/boards"): frozenset({"boards:read"}),
    ("GET", "/v5/user_account"): frozenset({"user_accounts:read"}),
}


def body_problem(schema: dict[str, Any], body: Any) -> str | None:
    """The first way `body` breaks `schema`, in words, else None."""
    from jsonschema import Draft202012Validator

    errors = sorted(Draft202012Validator(schema).iter_errors(body), key=lambda e: list(e.path))
    if not errors:
        return None
    error = errors[0]
    where = ".".join(str(part) for part in error.path) or "body"
    return f"{where}: {error.message}"


def scopes_for(method: str, path: str) -> frozenset[str] | None:
    """The scopes the description declares for this call, None for a call it does not list."""
    for (known_method, pattern), scopes in SCOPES.items():
        if known_method != method:
            continue
        wanted = pattern.split("/")
        given = path.split("/")
        if len(wanted) == len(given) and all(
            w.startswith("{") or w == g for w, g in zip(wanted, given, strict=True)
        ):
            return scopes
    return None


def as_pin(stored: dict[str, Any]) -> dict[str, Any]:
    """A stored Pin as the API returns it: only the fields the `Pin` schema has."""
    return {key: stored[key] for key in PIN_FIELDS if key in stored}
