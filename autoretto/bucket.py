"""An S3-compatible bucket: where the media and the publish journal live when Autoretto runs on
several hosts (`[media] url = "s3://bucket/prefix"`).

One small face over boto3 (imported only here, and only when a bucket is used): put a file,
put bytes only if the key is still free (a conditional put, `If-None-Match: *`), read, list,
delete, sign a GET link. Every failure becomes one BucketError line that names the bucket and
says whether waiting helps (`passing`): an endpoint that does not answer passes, a refused
credential or a missing bucket is for a person.

Where the endpoint, the region and the credentials come from is boto3's own business, the way
boto3 finds them (https://docs.aws.amazon.com/boto3/latest/guide/credentials.html): the
`AWS_ACCESS_KEY_ID`/`AWS_SECRET_ACCESS_KEY` variables, `~/.aws/credentials`, an instance role;
`AWS_ENDPOINT_URL_S3` (or `AWS_ENDPOINT_URL`) for a bucket that is not on AWS itself, such as
MinIO, Garage or Ceph (https://docs.aws.amazon.com/sdkref/latest/guide/feature-ss-endpoints.html);
`AWS_DEFAULT_REGION` or the profile's region.

Conditional writes: S3 refuses a PutObject with `If-None-Match: *` on a key that exists with
412 Precondition Failed (https://docs.aws.amazon.com/AmazonS3/latest/userguide/conditional-writes.html),
and 409 ConditionalRequestConflict while another conditional write to the same key is in flight:
both mean "someone else has this key". A store that ignores the header would let two hosts take
one journal number; `check_conditional_puts` asks it once, with a probe key.
"""

from __future__ import annotations

import os
import re
import secrets
from collections.abc import Iterable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

from .errors import AutorettoError

SCHEME = "s3://"
EXTRA_HINT = "pip install 'autoretto[s3]'"
#: seconds: how long one request may take before the bucket counts as unreachable for now
CONNECT_TIMEOUT = 10
READ_TIMEOUT = 120

#: S3 error codes a person must fix (the others pass, given time)
#: (https://docs.aws.amazon.com/AmazonS3/latest/API/ErrorResponses.html#ErrorCodeList)
PERSON_CODES = frozenset(
    {
        "AccessDenied",
        "NoSuchBucket",
        "InvalidAccessKeyId",
        "SignatureDoesNotMatch",
        "AllAccessDisabled",
        "InvalidBucketName",
        "AuthorizationHeaderMalformed",
        "PermanentRedirect",
    }
)
#: the answers to a conditional put on a key that is taken
_TAKEN_CODES = frozenset({"PreconditionFailed", "ConditionalRequestConflict"})
_TAKEN_STATUS = frozenset({409, 412})


class BucketError(AutorettoError):
    """The bucket could not do what was asked; `passing` when waiting may help."""

    def __init__(self, message: str, *, passing: bool = True) -> None:
        super().__init__(message)
        self.passing = passing


def is_bucket_url(value: str | None) -> bool:
    return bool(value) and str(value).startswith(SCHEME)


@dataclass(frozen=True)
class BucketPlace:
    """`s3://bucket/prefix`, parsed: the prefix is "" or ends with "/"."""

    bucket: str
    prefix: str

    @property
    def url(self) -> str:
        return f"{SCHEME}{self.bucket}/{self.prefix}"

    def under(self, folder: str) -> BucketPlace:
        return BucketPlace(self.bucket, f"{self.prefix}{folder.strip('/')}/")


def parse_url(value: str) -> BucketPlace:
    """`s3://bucket/prefix` as a BucketPlace; ValueError says what a usable one looks like.
    Bucket names: https://docs.aws.amazon.com/AmazonS3/latest/userguide/bucketnamingrules.html"""
    if not isinstance(value, str) or not value.startswith(SCHEME):
        raise ValueError('write it as "s3://BUCKET/PREFIX", e.g. "s3://my-autoretto/media"')
    bucket, _, prefix = value[len(SCHEME) :].partition("/")
    if not re.fullmatch(r"[a-z0-9][a-z0-9.\-]{1,61}[a-z0-9]", bucket):
        raise ValueError(
            f"{bucket!r} is not a bucket name (3-63 lowercase letters, digits, dots, dashes)"
        )
    prefix = prefix.strip("/")
    if any(part in ("", ".", "..") for part in prefix.split("/")) and prefix:
        raise ValueError(f"the prefix {prefix!r} has an empty, '.' or '..' part")
    if not all(character.isprintable() for character in prefix):
        raise ValueError("the prefix has a character that cannot be printed")
    return BucketPlace(bucket, f"{prefix}/" if prefix else "")


_clients: dict[tuple[int, tuple[tuple[str, str], ...]], Any] = {}

#: the SDKs' own setting for how many tries a request gets, the first included
#: (https://docs.aws.amazon.com/sdkref/latest/guide/feature-retry-behavior.html)
MAX_ATTEMPTS_VARIABLE = "AWS_MAX_ATTEMPTS"
#: tries when it is not set: the first and 3 retries (botocore's `max_attempts` counts retries)
MAX_ATTEMPTS = 4


def max_attempts() -> int:
    """How many tries one bucket request gets, the first included: AWS_MAX_ATTEMPTS when it is
    set (1 gives up on an endpoint that does not answer at once, without boto3's pauses between
    tries), else 4."""
    value = os.environ.get(MAX_ATTEMPTS_VARIABLE, "").strip()
    if not value:
        return MAX_ATTEMPTS
    if not value.isdigit() or not 1 <= int(value) <= 20:
        raise BucketError(
            f"{MAX_ATTEMPTS_VARIABLE}={value!r} is not a number of tries: set it to a whole "
            f"number from 1 to 20, or unset it for {MAX_ATTEMPTS}",
            passing=False,
        )
    return int(value)


def _client(options: tuple[tuple[str, str], ...] = ()) -> Any:
    """One boto3 S3 client per process (they are thread-safe and costly to make: ~0.1 s), for
    each set of explicit `options` (endpoint_url, region_name, keys: the `[media_host]` table's;
    none: boto3 finds them itself)."""
    try:  # first, even for a client made already: boto3 may have gone (a test takes it away)
        import boto3
        from botocore.config import Config
    except ImportError:
        raise BucketError(f"media in a bucket needs boto3: {EXTRA_HINT}", passing=False) from None
    found = _clients.get((os.getpid(), options))
    if found is not None:
        return found
    client = boto3.client(
        "s3",
        config=Config(
            connect_timeout=CONNECT_TIMEOUT,
            read_timeout=READ_TIMEOUT,
            retries={"total_max_attempts": max_attempts(), "mode": "standard"},
        ),
        **dict(options),
    )
    for made in [made for made in _clients if made[0] != os.getpid()]:
        del _clients[made]  # a forked child makes its own
    _clients[(os.getpid(), options)] = client
    return client


class Bucket:
    """Objects under one `s3://bucket/prefix`, named relative to the prefix."""

    def __init__(self, place: BucketPlace | str, *, options: dict[str, str] | None = None) -> None:
        """`options`: boto3 client arguments given explicitly (endpoint_url, region_name,
        aws_access_key_id, aws_secret_access_key), over what boto3 finds itself."""
        self.place = parse_url(place) if isinstance(place, str) else place
        self.options = tuple(sorted((options or {}).items()))

    def __repr__(self) -> str:
        return f"Bucket({self.place.url!r})"

    @cached_property
    def client(self) -> Any:
        return _client(self.options)

    def key(self, name: str) -> str:
        return f"{self.place.prefix}{name}"

    def url_of(self, name: str) -> str:
        """`s3://bucket/prefix/name`."""
        return f"{SCHEME}{self.place.bucket}/{self.key(name)}"

    def under(self, folder: str) -> Bucket:
        return Bucket(self.place.under(folder), options=dict(self.options))

    @contextmanager
    def translated(self, doing: str) -> Iterator[None]:
        """Any boto3 failure inside as one BucketError line naming the bucket."""
        try:
            from boto3.exceptions import Boto3Error
            from botocore.exceptions import BotoCoreError, ClientError, NoCredentialsError
        except ImportError:
            raise BucketError(
                f"media in a bucket needs boto3: {EXTRA_HINT}", passing=False
            ) from None
        where = self.place.url
        try:
            try:
                yield
            except Boto3Error as error:
                # upload_file wraps the ClientError it met (S3UploadFailedError): read that one
                if isinstance(error.__context__, ClientError):
                    raise error.__context__ from None
                raise BucketError(f"could not {doing} {where} ({error})") from None
        except NoCredentialsError:
            raise BucketError(
                f"could not {doing} {where}: no credentials (set AWS_ACCESS_KEY_ID and "
                "AWS_SECRET_ACCESS_KEY, or a profile, for the cron job)",
                passing=False,
            ) from None
        except ClientError as error:
            code = str(error.response.get("Error", {}).get("Code", "")) or "error"
            raise BucketError(
                f"could not {doing} {where} ({code})", passing=code not in PERSON_CODES
            ) from None
        except (BotoCoreError, OSError) as error:
            raise BucketError(
                f"could not {doing} {where} ({type(error).__name__}: the endpoint did not "
                "answer; it is tried again later)"
            ) from None

    # -- writing ----------------------------------------------------------------------------

    def put_file(
        self,
        name: str,
        path: Path,
        *,
        content_type: str | None = None,
        digest: str | None = None,
    ) -> None:
        """Upload `path` as `name` (multipart above boto3's threshold). Returns once S3 has
        the whole object: a reader never sees part of it (PutObject and
        CompleteMultipartUpload are atomic)."""
        extra: dict[str, Any] = {}
        if content_type:
            extra["ContentType"] = content_type
        if digest:
            extra["Metadata"] = {"sha256": digest}
        with self.translated(f"upload {name} to"):
            self.client.upload_file(str(path), self.place.bucket, self.key(name), ExtraArgs=extra)

    def put_new(self, name: str, data: bytes) -> bool:
        """Write `data` as `name` only if no object has that name yet (a conditional put).
        True when this call created it; False when the key was already taken."""
        from botocore.exceptions import ClientError

        with self.translated(f"write {name} in"):
            try:
                self.client.put_object(
                    Bucket=self.place.bucket, Key=self.key(name), Body=data, IfNoneMatch="*"
                )
            except ClientError as error:
                code = str(error.response.get("Error", {}).get("Code", ""))
                status = error.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
                if code in _TAKEN_CODES or status in _TAKEN_STATUS:
                    return False
                raise
        return True

    def delete(self, names: Iterable[str]) -> int:
        """Delete `names` (1,000 per request, S3's limit for DeleteObjects). Returns how many
        were asked for; a name that is already gone counts as deleted."""
        keys = [self.key(name) for name in names]
        for start in range(0, len(keys), 1000):
            batch = [{"Key": key} for key in keys[start : start + 1000]]
            with self.translated("delete objects in"):
                answer = self.client.delete_objects(
                    Bucket=self.place.bucket, Delete={"Objects": batch, "Quiet": True}
                )
            errors = answer.get("Errors") or []
            if errors:
                first = errors[0]
                raise BucketError(
                    f"could not delete {first.get('Key')} in {self.place.url} "
                    f"({first.get('Code', 'error')})",
                    passing=first.get("Code") not in PERSON_CODES,
                )
        return len(keys)

    # -- reading ----------------------------------------------------------------------------

    def read(self, name: str) -> bytes | None:
        """The object's bytes, or None when there is none."""
        from botocore.exceptions import ClientError

        with self.translated(f"read {name} in"):
            try:
                answer = self.client.get_object(Bucket=self.place.bucket, Key=self.key(name))
            except ClientError as error:
                if str(error.response.get("Error", {}).get("Code", "")) in ("NoSuchKey", "404"):
                    return None
                raise
            return answer["Body"].read()

    def facts(self, name: str) -> dict[str, Any] | None:
        """Size and metadata of `name` (a HEAD), or None when there is no such object."""
        from botocore.exceptions import ClientError

        with self.translated(f"look at {name} in"):
            try:
                answer = self.client.head_object(Bucket=self.place.bucket, Key=self.key(name))
            except ClientError as error:
                status = error.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
                if status == 404:
                    return None
                raise
        return {
            "size": int(answer.get("ContentLength") or 0),
            "metadata": dict(answer.get("Metadata") or {}),
        }

    def download(self, name: str, path: Path) -> None:
        """Download `name` to `path`, whole or not at all (a partial file is renamed into
        place only once complete)."""
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_name(f".{path.name}.{secrets.token_hex(4)}.partial")
        try:
            with self.translated(f"download {name} from"):
                self.client.download_file(self.place.bucket, self.key(name), str(partial))
            os.replace(partial, path)
        finally:
            partial.unlink(missing_ok=True)

    def names(self, folder: str = "", *, start_after: str | None = None) -> Iterator[str]:
        """The names under `folder` (relative to the prefix), in key order, page by page."""
        paginator = self.client.get_paginator("list_objects_v2")
        options: dict[str, Any] = {"Bucket": self.place.bucket, "Prefix": self.key(folder)}
        if start_after is not None:
            options["StartAfter"] = self.key(start_after)
        cut = len(self.place.prefix)
        with self.translated("list"):
            for page in paginator.paginate(**options):
                for item in page.get("Contents") or []:
                    yield item["Key"][cut:]

    def signed_url(self, name: str, seconds: int) -> str:
        """A presigned GET link to `name`, valid for `seconds` (at most 7 days, SigV4's limit:
        https://docs.aws.amazon.com/AmazonS3/latest/userguide/ShareObjectPreSignedURL.html)."""
        with self.translated(f"sign a link to {name} in"):
            return self.client.generate_presigned_url(
                "get_object",
                Params={"Bucket": self.place.bucket, "Key": self.key(name)},
                ExpiresIn=max(1, min(int(seconds), 7 * 24 * 3600)),
            )

    def check_conditional_puts(self) -> None:
        """BucketError unless the store refuses a second conditional put on one key (a store
        that ignores `If-None-Match` cannot keep the journal)."""
        probe = f".autoretto-probe-{secrets.token_hex(8)}"
        try:
            if not self.put_new(probe, b"1"):
                raise BucketError(f"{self.place.url} refused a put on a new key", passing=False)
            if self.put_new(probe, b"2"):
                raise BucketError(
                    f"{self.place.url} ignores conditional puts (If-None-Match): it cannot keep "
                    "the publish journal; use a store that supports them (AWS S3 does)",
                    passing=False,
                )
        finally:
            with suppress(BucketError):
                self.delete([probe])
