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


# -- comments and replies (issue 28) -------------------------------------------------------------

#: the SDK's names of the recent search's parameters -> their names on the wire; X's pages call
#: the post fields `tweet.fields` (https://docs.x.com/x-api/posts/search/integrate/overview),
#: the SDK sends `post.fields`: both are taken
_WIRE = {
    "post_fields": ("tweet.fields", "post.fields"),
    "user_fields": ("user.fields",),
    "media_fields": ("media.fields",),
    "poll_fields": ("poll.fields",),
    "place_fields": ("place.fields",),
}


def _search_parameters() -> dict[str, Any]:
    """wire name -> the set of words it may list (None: any value), from the signature of
    `xdk.posts.client.PostsClient.search_recent` (generated from X's OpenAPI description)."""
    import inspect
    import typing

    from xdk.posts.client import PostsClient

    found: dict[str, Any] = {}
    # The module's annotations are texts (postponed) naming typing's words it never imports.
    names = {"Optional": typing.Optional, "List": list, "Literal": typing.Literal}
    for name, parameter in inspect.signature(PostsClient.search_recent).parameters.items():
        if name == "self":
            continue
        words = None
        annotation = parameter.annotation
        if isinstance(annotation, str):
            annotation = eval(annotation, names) if "Literal" in annotation else None
        for inner in typing.get_args(annotation):
            for item in typing.get_args(inner) or (inner,):
                literal = typing.get_args(item)
                if literal and all(isinstance(word, str) for word in literal):
                    words = set(literal)
        for wire in _WIRE.get(name, (name,)):
            found[wire] = words
    return found


def search_problem(query: dict[str, str]) -> str | None:
    """Why X's description refuses this GET /2/tweets/search/recent query, else None: a
    parameter it does not declare, a listed word it does not know, no `query`, `max_results`
    outside 10..100, or both of a pair the SDK allows one of."""
    declared = _search_parameters()
    for name, value in query.items():
        if name not in declared:
            return f"The query parameter [{name}] is not one of [{', '.join(sorted(declared))}]"
        words = declared[name]
        if words is not None:
            unknown = [word for word in value.split(",") if word not in words]
            if unknown:
                return (
                    f"The `{name}` query parameter value [{unknown[0]}] is not one of the allowed"
                )
    if not query.get("query"):
        return "The `query` query parameter can not be empty"
    size = query.get("max_results")
    if size is not None and not (size.isdigit() and 10 <= int(size) <= 100):
        return f"The `max_results` query parameter value [{size}] is not between 10 and 100"
    for first, second in (("start_time", "since_id"), ("end_time", "until_id")):
        if first in query and second in query:
            return f"At most one of `{first}`, `{second}` may be provided"
    if "next_token" in query and "pagination_token" in query:
        return "At most one of `pagination_token`, `next_token` may be provided"
    return None
