"""autoretto/bucket.py against a real S3 endpoint (moto's server on 127.0.0.1)."""

from __future__ import annotations

import pytest

from autoretto import bucket as buckets
from autoretto.bucket import Bucket, BucketError, parse_url


def test_a_bucket_url_is_parsed_or_refused_with_what_would_fix_it():
    assert parse_url("s3://my-media/a/b/") == buckets.BucketPlace("my-media", "a/b/")
    assert parse_url("s3://my-media") == buckets.BucketPlace("my-media", "")
    for wrong in ("http://x/y", "s3://A_B/x", "s3://ok-name/a//b", "s3://ok-name/../x"):
        with pytest.raises(ValueError):
            parse_url(wrong)


def test_a_conditional_put_takes_a_name_once(bucket_url, s3_server):
    store = Bucket(bucket_url)
    store.check_conditional_puts()
    assert store.put_new("journal/1", b"first") is True
    assert store.put_new("journal/1", b"second") is False
    assert store.read("journal/1") == b"first"
    assert store.read("journal/2") is None
    place = parse_url(bucket_url)
    assert s3_server.objects(place.bucket) == {"autoretto/journal/1": b"first"}


def test_files_go_up_whole_and_come_back_with_their_digest(bucket_url, tmp_path):
    store = Bucket(bucket_url).under("episodes/7")
    video = tmp_path / "video.mp4"
    video.write_bytes(b"\x00" * 100_000)
    store.put_file("video.mp4", video, content_type="video/mp4", digest="abc")
    assert store.facts("video.mp4") == {"size": 100_000, "metadata": {"sha256": "abc"}}
    assert store.facts("other.mp4") is None
    back = tmp_path / "back" / "video.mp4"
    store.download("video.mp4", back)
    assert back.read_bytes() == video.read_bytes()
    assert list(store.names()) == ["video.mp4"]
    assert store.delete(["video.mp4", "never-there"]) == 2
    assert list(store.names()) == []


def test_a_cut_endpoint_is_one_line_that_says_it_passes(bucket_url, s3_server):
    store = Bucket(bucket_url)
    s3_server.relay.cut()
    try:
        with pytest.raises(BucketError) as caught:
            store.put_new("journal/1", b"x")
    finally:
        s3_server.relay.mend()
    assert caught.value.passing
    assert "\n" not in str(caught.value) and bucket_url in str(caught.value)
    assert store.put_new("journal/1", b"x") is True


def test_a_missing_bucket_is_for_a_person(bucket_url):
    store = Bucket("s3://no-such-bucket-here/x")
    with pytest.raises(BucketError) as caught:
        store.read("anything")
    assert not caught.value.passing and "NoSuchBucket" in str(caught.value)
