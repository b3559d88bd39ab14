"""The media host: a link that serves one video to one fetcher, for one attempt, and dies."""

from __future__ import annotations

import os
import socket
import stat
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import requests

from autoretto.errors import ConfigError
from autoretto.mediahost import (
    MediaHostError,
    MediaHostSettings,
    S3MediaHost,
    SelfMediaHost,
    byte_range,
    open_media_host,
    parse_media_host,
)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class Clock:
    def __init__(self) -> None:
        self.at = datetime(2026, 11, 29, 10, 0, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.at


@pytest.fixture
def video(tmp_path: Path) -> Path:
    path = tmp_path / "Rainy night (final).mp4"
    path.write_bytes(os.urandom(300_000))
    return path


@pytest.fixture
def clock() -> Clock:
    return Clock()


def self_host(home: Path, clock: Clock, **changes) -> SelfMediaHost:
    port = free_port()
    raw = {"kind": "self", "bind": f"127.0.0.1:{port}", "public_url": f"http://127.0.0.1:{port}"}
    settings = parse_media_host({**raw, **changes}, path="autoretto.toml")
    host = open_media_host(settings, home, clock=clock)
    assert isinstance(host, SelfMediaHost)
    return host


# -- config --------------------------------------------------------------------------------


def test_a_self_host_table_is_parsed_with_defaults() -> None:
    settings = parse_media_host(
        {"kind": "self", "public_url": "https://media.example.com/"}, path="autoretto.toml"
    )
    assert settings == MediaHostSettings(
        kind="self", expires_minutes=30, public_url="https://media.example.com"
    )
    assert settings.bind == "127.0.0.1:8787" and settings.ttl == timedelta(minutes=30)


def test_an_s3_table_is_parsed_with_a_short_expiry() -> None:
    settings = parse_media_host(
        {"kind": "s3", "bucket": "my-media", "endpoint_url": "https://s3.example.com"},
        path="autoretto.toml",
    )
    assert settings.kind == "s3" and settings.expires_minutes == 10
    assert settings.prefix == "autoretto/"


@pytest.mark.parametrize(
    ("raw", "field", "words"),
    [
        ({}, "media_host.kind", '"self"'),
        ({"kind": "ftp"}, "media_host.kind", '"s3"'),
        ({"kind": "self", "public_url": "https://m.example"}, None, None),
        ({"kind": "self"}, "media_host.public_url", "reverse proxy"),
        ({"kind": "self", "public_url": "m.example"}, "media_host.public_url", "public base"),
        (
            {"kind": "self", "public_url": "https://m.example", "bind": "8787"},
            "media_host.bind",
            "ADDRESS:PORT",
        ),
        (
            {"kind": "self", "public_url": "https://m.example", "bind": "0.0.0.0:99999"},
            "media_host.bind",
            "port",
        ),
        (
            {"kind": "self", "public_url": "https://m.example", "expires_minutes": 0},
            "media_host.expires_minutes",
            "minutes",
        ),
        (
            {"kind": "self", "public_url": "https://m.example", "bucket": "x"},
            "media_host.bucket",
            "unknown key",
        ),
        ({"kind": "s3"}, "media_host.bucket", "bucket's name"),
        (
            {"kind": "s3", "bucket": "my-media", "access_key_env": "KEY"},
            "media_host.secret_key_env",
            "both",
        ),
    ],
)
def test_a_bad_media_host_table_names_its_field(raw, field, words) -> None:
    if field is None:
        parse_media_host(raw, path="autoretto.toml")
        return
    with pytest.raises(ConfigError) as error:
        parse_media_host(raw, path="autoretto.toml")
    assert error.value.field == field
    assert words in error.value.detail


def test_byte_ranges() -> None:
    assert byte_range(None, 100) is None
    assert byte_range("bytes=0-9", 100) == (0, 10)
    assert byte_range("bytes=90-", 100) == (90, 100)
    assert byte_range("bytes=-10", 100) == (90, 100)
    assert byte_range("bytes=0-999", 100) == (0, 100)
    assert byte_range("bytes=0-1,5-9", 100) is None  # several ranges: the whole file
    assert byte_range("bytes=100-", 100) == "unsatisfiable"
    assert byte_range("bytes=-0", 100) == "unsatisfiable"


# -- the self host -----------------------------------------------------------------------------


def test_the_file_is_served_once_then_the_link_is_dead(home, video, clock) -> None:
    host = self_host(home, clock)
    with host.publish(video) as url:
        assert url.startswith(host.settings.public_url + "/m/")
        assert "Rainy" not in url and "final" not in url  # the local name does not leak
        head = requests.head(url, timeout=5)
        assert head.status_code == 200
        assert int(head.headers["Content-Length"]) == video.stat().st_size
        got = requests.get(url, timeout=5)
        assert got.status_code == 200 and got.content == video.read_bytes()
        assert got.headers["Content-Type"] == "video/mp4"
        assert requests.get(url, timeout=5).status_code == 404, "fetched once: torn down"
    with pytest.raises(requests.ConnectionError):
        requests.get(url, timeout=5)
    assert [(f.method, f.status) for f in host.fetches] == [
        ("HEAD", 200),
        ("GET", 200),
        ("GET", 404),
    ]


def test_byte_ranges_are_served_and_count_toward_a_full_fetch(home, video, clock) -> None:
    host = self_host(home, clock)
    data = video.read_bytes()
    with host.publish(video) as url:
        first = requests.get(url, headers={"Range": "bytes=0-99999"}, timeout=5)
        assert first.status_code == 206 and first.content == data[:100_000]
        assert first.headers["Content-Range"] == f"bytes 0-99999/{len(data)}"
        tail = requests.get(url, headers={"Range": "bytes=-1000"}, timeout=5)
        assert tail.status_code == 206 and tail.content == data[-1000:]
        refused = requests.get(url, headers={"Range": f"bytes={len(data)}-"}, timeout=5)
        assert refused.status_code == 416
        rest = requests.get(url, headers={"Range": "bytes=100000-"}, timeout=5)
        assert rest.status_code == 206 and rest.content == data[100_000:]
        assert requests.get(url, timeout=5).status_code == 404, "every byte went out: torn down"


def test_max_fetches_allows_a_second_fetcher(home, video, clock) -> None:
    host = self_host(home, clock, max_fetches=2)
    with host.publish(video) as url:
        assert requests.get(url, timeout=5).status_code == 200
        assert requests.get(url, timeout=5).status_code == 200
        assert requests.get(url, timeout=5).status_code == 404


def test_a_bad_signature_or_another_path_is_refused(home, video, clock) -> None:
    host = self_host(home, clock)
    with host.publish(video) as url:
        base, signature, name = url.rsplit("/", 2)
        forged = f"{base}/{'0' * len(signature)}/{name}"
        assert requests.get(forged, timeout=5).status_code == 403
        other_name = f"{base}/{signature}/other.mp4"
        assert requests.get(other_name, timeout=5).status_code == 403
        root = host.settings.public_url
        assert requests.get(root + "/", timeout=5).status_code == 404
        assert requests.get(root + "/m/1/2/3", timeout=5).status_code == 404
        assert requests.post(url, timeout=5).status_code == 501
        assert requests.get(url, timeout=5).status_code == 200, "the real link still works"


def test_an_expired_link_is_refused(home, video, clock) -> None:
    host = self_host(home, clock, expires_minutes=30)
    with host.publish(video) as url:
        clock.at += timedelta(minutes=30, seconds=1)
        assert requests.get(url, timeout=5).status_code == 403
        assert not any(f.sent for f in host.fetches)


def test_a_link_signed_by_another_key_is_refused(home, tmp_path, video, clock) -> None:
    host = self_host(home, clock)
    stranger = SelfMediaHost(host.settings, tmp_path / "other-home", clock=clock)
    with host.publish(video) as url:
        expires, token, _, name = url.split("/m/", 1)[1].split("/")
        other_key = stranger._key()
        signature = stranger.sign(other_key, int(expires), token, name)
        forged = f"{host.settings.public_url}/m/{expires}/{token}/{signature}/{name}"
        assert requests.get(forged, timeout=5).status_code == 403


def test_the_signing_key_is_made_private_and_kept(home, video, clock) -> None:
    host = self_host(home, clock)
    with host.publish(video):
        pass
    key_file = home / "media-host.key"
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    first = key_file.read_bytes()
    with host.publish(video):
        pass
    assert key_file.read_bytes() == first
    key_file.chmod(0o644)
    with pytest.raises(MediaHostError, match="chmod 600"), host.publish(video):
        pass


def test_a_busy_port_is_a_passing_error(home, video, clock) -> None:
    host = self_host(home, clock)
    _, port = host.settings.bind.rsplit(":", 1)
    with socket.socket() as squatter:
        squatter.bind(("127.0.0.1", int(port)))
        squatter.listen()
        with pytest.raises(MediaHostError) as error, host.publish(video):
            pass
    assert error.value.passing and "cannot listen" in str(error.value)


def test_the_link_dies_when_the_attempt_fails(home, video, clock) -> None:
    host = self_host(home, clock)
    with pytest.raises(RuntimeError), host.publish(video) as url:
        raise RuntimeError("the platform refused")
    with pytest.raises(requests.ConnectionError):
        requests.get(url, timeout=5)


# -- s3 ----------------------------------------------------------------------------------------


def test_s3_without_boto3_says_how_to_install_it(monkeypatch, video) -> None:
    monkeypatch.setitem(sys.modules, "boto3", None)
    host = S3MediaHost(parse_media_host({"kind": "s3", "bucket": "my-media"}, path="x.toml"))
    with pytest.raises(MediaHostError) as error, host.publish(video):
        pass
    assert "pip install 'autoretto[s3]'" in str(error.value) and not error.value.passing


@pytest.fixture
def s3_endpoint(monkeypatch):
    pytest.importorskip("boto3")
    server_module = pytest.importorskip("moto.server")
    server = server_module.ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    monkeypatch.setenv("MEDIA_KEY", "test-key")
    monkeypatch.setenv("MEDIA_SECRET", "test-secret")
    yield f"http://{host}:{port}"
    server.stop()


def test_s3_uploads_presigns_and_deletes(s3_endpoint, video) -> None:
    import boto3

    settings = parse_media_host(
        {
            "kind": "s3",
            "bucket": "my-media",
            "endpoint_url": s3_endpoint,
            "region": "us-east-1",
            "access_key_env": "MEDIA_KEY",
            "secret_key_env": "MEDIA_SECRET",
            "expires_minutes": 5,
        },
        path="autoretto.toml",
    )
    admin = boto3.client(
        "s3",
        endpoint_url=s3_endpoint,
        region_name="us-east-1",
        aws_access_key_id="test-key",
        aws_secret_access_key="test-secret",
    )
    admin.create_bucket(Bucket="my-media")
    host = open_media_host(settings, Path("/nonexistent"))
    with host.publish(video) as url:
        assert "Expires=" in url or "X-Amz-Expires=300" in url
        got = requests.get(url, timeout=10)
        assert got.status_code == 200 and got.content == video.read_bytes()
        (listed,) = admin.list_objects_v2(Bucket="my-media")["Contents"]
        assert listed["Key"].startswith("autoretto/") and "Rainy" not in listed["Key"]
    assert admin.list_objects_v2(Bucket="my-media").get("KeyCount") == 0
    assert requests.get(url, timeout=10).status_code == 404


def test_s3_with_a_missing_bucket_needs_a_person(s3_endpoint, video) -> None:
    settings = parse_media_host(
        {
            "kind": "s3",
            "bucket": "not-there",
            "endpoint_url": s3_endpoint,
            "region": "us-east-1",
            "access_key_env": "MEDIA_KEY",
            "secret_key_env": "MEDIA_SECRET",
        },
        path="autoretto.toml",
    )
    with (
        pytest.raises(MediaHostError) as error,
        open_media_host(settings, Path("/")).publish(video),
    ):
        pass
    assert not error.value.passing and "NoSuchBucket" in str(error.value)


BAD_EXPIRIES = ["²", "٣٣٣٣", "1" * 5000, "-1", " 1", "1e9"]


def raw_request(url: str, request: bytes) -> bytes:
    """Send `request` as it is (no client would send these) and return the whole answer."""
    address = url.split("//", 1)[1].split("/", 1)[0]
    host, port = address.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=5) as connection:
        connection.sendall(request)
        answer = b""
        while chunk := connection.recv(65536):
            answer += chunk
            if b"\r\n\r\n" in answer and b"Connection: close" not in answer:
                break
    return answer


MALFORMED = [
    # the expiry field of a link: not ASCII digits, or too many of them to be a time
    *(f"GET /m/{bad}/{{token}}/{{signature}}/{{name}} HTTP/1.1" for bad in BAD_EXPIRIES),
    "GARBAGE",  # no method, no path, no version
    "GET / HTTP/one",
    "GET /m/1/2/3/4/5 HTTP/1.1 extra words",
]


@pytest.mark.parametrize("request_line", MALFORMED)
def test_a_malformed_request_is_a_400_and_a_log_line_never_a_traceback(
    home, video, clock, caplog, capfd, request_line
) -> None:
    host = self_host(home, clock)
    with host.publish(video) as url:
        _, token, signature, name = url.split("/m/", 1)[1].split("/")
        line = request_line.format(token=token, signature=signature, name=name).encode()
        with caplog.at_level("WARNING", logger="autoretto.mediahost"):
            answer = raw_request(url, line + b"\r\nHost: x\r\nConnection: close\r\n\r\n")
        status = answer.split(b"\r\n", 1)[0]
        assert status.startswith(b"HTTP/1.") and b" 400 " in status, answer
        assert requests.get(url, timeout=5).status_code == 200, "the real link still works"
    refusals = [r.getMessage() for r in caplog.records if "malformed" in r.getMessage()]
    assert len(refusals) == 1, caplog.records
    assert token not in refusals[0] and signature not in refusals[0]  # the link is never logged
    captured = capfd.readouterr()
    assert "Traceback" not in captured.err + captured.out
