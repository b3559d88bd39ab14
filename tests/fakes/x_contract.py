"""Check the X fake's requests against X's OpenAPI description, through `xdk`, X's own SDK,
whose request models are generated from that description (`xdk.schemas`).

A body is validated strictly (types as declared, enums kept, required fields present) and a
field the model does not declare is refused too: X's v2 endpoints answer an unknown field
with 400 (e.g. `command` sent to `/2/media/upload/initialize`, PLATFORMS.md §5). The answer is
X's problem envelope (`title`, `detail`, `type`, `errors`).
"""

from __future__ import annotations

from typing import Any

INVALID_REQUEST = "https://api.x.com/2/problems/invalid-request"


def _models() -> dict[str, Any]:
    from xdk import schemas

    return {
        "initialize": schemas.InitializeMediaUploadRequest,
        "create": schemas.CreatePostsRequest,
    }


def _unknown(model: Any, body: dict[str, Any], where: str = "") -> str | None:
    """The first field of `body` that `model` (a pydantic model) does not declare."""
    fields = model.model_fields
    for key, value in body.items():
        if key not in fields:
            return f"{where}{key}"
        annotation = fields[key].annotation
        inner = getattr(annotation, "__args__", (annotation,))
        nested = next((a for a in inner if hasattr(a, "model_fields")), None)
        if nested is not None and isinstance(value, dict):
            found = _unknown(nested, value, f"{where}{key}.")
            if found:
                return found
    return None


def body_problem(kind: str, body: Any) -> str | None:
    """Why X's description refuses this JSON body for `kind` (initialize | create), else None."""
    from pydantic import ValidationError

    model = _models()[kind]
    if not isinstance(body, dict):
        return "the body must be a JSON object"
    unknown = _unknown(model, body)
    if unknown:
        return f"`{unknown}` is not a field of this request"
    try:
        model.model_validate(body, strict=True)
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        return f"`{where}`: {first['msg']}"
    return None


def segment_problem(fields: dict[str, Any]) -> str | None:
    """Append's multipart fields by `AppendMediaUploadRequest`: `media` and an integer
    `segment_index` (0 to 999)."""
    from xdk import schemas

    declared = set(schemas.AppendMediaUploadRequest.model_fields)
    extra = sorted(set(fields) - declared)
    if extra:
        return f"`{extra[0]}` is not a field of this request"
    missing = sorted(declared - set(fields))
    if missing:
        return f"`{missing[0]}` is required"
    index = fields["segment_index"]
    text = index.decode() if isinstance(index, bytes) else str(index)
    if not text.isdigit() or int(text) > 999:
        return "`segment_index` must be an integer from 0 to 999"
    return None
