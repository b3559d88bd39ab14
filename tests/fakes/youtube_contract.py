"""Check a request against YouTube's own description: the discovery document shipped inside
google-api-python-client (`googleapiclient/discovery_cache/documents/youtube.v3.json`).

For the method a request names (HTTP method and path, media-upload paths included) it checks
the query parameters (known, required ones present, booleans, integers and enums well formed),
the `part` names (properties of the method's resource), and the JSON body against the
method's request schema (every field known, of its declared type, enums kept). A refusal is
given as Google's error envelope would carry it: (HTTP status, reason, message).
"""

from __future__ import annotations

import json
import re
from functools import cache
from pathlib import Path
from typing import Any

#: parameters every Google API takes (discovery `parameters` at the top) plus the upload ones
_UPLOAD_PARAMETERS = {"uploadType", "upload_id"}


@cache
def discovery() -> dict[str, Any]:
    import googleapiclient

    path = Path(googleapiclient.__file__).parent / "discovery_cache/documents/youtube.v3.json"
    return json.loads(path.read_text(encoding="utf-8"))


def _methods() -> list[tuple[str, str, dict[str, Any]]]:
    """(HTTP method, path, method description) for every method and its upload paths."""
    found = []
    for resource in discovery()["resources"].values():
        for method in resource.get("methods", {}).values():
            found.append((method["httpMethod"], "/" + method["path"], method))
            for protocol in method.get("mediaUpload", {}).get("protocols", {}).values():
                found.append((method["httpMethod"], protocol["path"], method))
    return found


def method_for(http_method: str, path: str) -> dict[str, Any] | None:
    for known_method, known_path, method in _methods():
        if known_method == http_method and known_path == path:
            return method
    return None


def _resource_schema(method: dict[str, Any]) -> dict[str, Any] | None:
    """The schema whose properties are the `part` names: the request's, or the listed item's."""
    schemas = discovery()["schemas"]
    ref = (method.get("request") or {}).get("$ref")
    if ref is None:
        listing = schemas.get((method.get("response") or {}).get("$ref", ""), {})
        ref = listing.get("properties", {}).get("items", {}).get("items", {}).get("$ref")
    return schemas.get(ref) if ref else None


def _value_problem(name: str, spec: dict[str, Any], value: str) -> str | None:
    kind = spec.get("type")
    if kind == "boolean" and value not in ("true", "false"):
        return f"Invalid boolean value: '{value}' for parameter {name}"
    if kind == "integer" and not re.fullmatch(r"-?\d+", value):
        return f"Invalid integer value: '{value}' for parameter {name}"
    if "enum" in spec and value not in spec["enum"]:
        return f"Invalid value '{value}' for parameter {name}"
    return None


def query_problem(method: dict[str, Any], query: dict[str, str]) -> tuple[int, str, str] | None:
    common = set(discovery().get("parameters", {}))
    parameters = method.get("parameters", {})
    for name, value in query.items():
        if name in common or name in _UPLOAD_PARAMETERS:
            continue
        spec = parameters.get(name)
        if spec is None:
            return 400, "badRequest", f'Invalid JSON payload received. Unknown name "{name}"'
        problem = _value_problem(name, spec, value)
        if problem:
            return 400, "invalidParameter", problem
    for name, spec in parameters.items():
        if spec.get("required") and name not in query:
            return 400, "required", f"Required parameter: {name}"
    schema = _resource_schema(method)
    if "part" in query and schema is not None:
        known = set(schema.get("properties", {}))
        for part in query["part"].split(","):
            if part.strip() not in known:
                return 400, "unknownPart", f"'{part}' is not a valid part for this method"
    return None


def body_problem(method: dict[str, Any], body: Any) -> tuple[int, str, str] | None:
    ref = (method.get("request") or {}).get("$ref")
    if ref is None or body in (None, b"", {}):
        return None
    problem = _against(discovery()["schemas"][ref], body, ref.lower())
    return None if problem is None else (400, "invalid", problem)


def _against(schema: dict[str, Any], value: Any, where: str) -> str | None:
    """The first way `value` breaks a discovery schema, in Google's words, else None."""
    if "$ref" in schema:
        return _against(discovery()["schemas"][schema["$ref"]], value, where)
    kind = schema.get("type")
    if kind == "object":
        if not isinstance(value, dict):
            return f"Invalid value at '{where}', expected an object"
        properties = schema.get("properties", {})
        extra = schema.get("additionalProperties")
        for key, item in value.items():
            spec = properties.get(key, extra)
            if spec is None:
                return (
                    f"Invalid JSON payload received. Unknown name \"{key}\" at '{where}': "
                    "Cannot find field."
                )
            problem = _against(spec, item, f"{where}.{key}")
            if problem:
                return problem
        return None
    if kind == "array":
        if not isinstance(value, list):
            return f"Invalid value at '{where}', expected a list"
        for index, item in enumerate(value):
            problem = _against(schema.get("items", {}), item, f"{where}[{index}]")
            if problem:
                return problem
        return None
    checks = {
        "string": lambda v: isinstance(v, str),
        "boolean": lambda v: isinstance(v, bool),
        "integer": lambda v: (
            (isinstance(v, int) and not isinstance(v, bool))
            or (isinstance(v, str) and re.fullmatch(r"-?\d+", v))
        ),
        "number": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
    }
    check = checks.get(kind)
    if check is not None and not check(value):
        return f"Invalid value at '{where}' ({kind}), {json.dumps(value)}"
    if "enum" in schema and value not in schema["enum"]:
        return f"Invalid value at '{where}' (TYPE_ENUM), {json.dumps(value)}"
    return None


def request_problem(
    http_method: str, path: str, query: dict[str, str], body: bytes
) -> tuple[int, str, str] | None:
    """Why YouTube would refuse this request, or None. A path the description does not
    know is not judged here (the fake answers it 404 itself)."""
    method = method_for(http_method, path)
    if method is None:
        return None
    problem = query_problem(method, query)
    if problem is not None:
        return problem
    is_json = body[:1] in (b"{", b"[")
    return body_problem(method, json.loads(body)) if is_json else None
