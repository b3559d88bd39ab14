"""Media in a bucket (issue 26): hosts are separate homes sharing one PostgreSQL store and one
bucket (moto's server behind a relay the tests can cut). One host makes an episode, another
publishes it; the store records a file only once its upload completed."""

from __future__ import annotations

import contextlib
import hashlib
import json
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests

from tests.support import Cli, channel_toml, outbox_sidecars, run_command, write_config
from tests.test_produce import SMALL_PIPELINE


class Hosts:
    """Two homes, A and B, on one store and one bucket: `use(name)` makes one the current."""

    def __init__(self, root: Path, bucket_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
        self.root = root
        self.monkeypatch = monkeypatch
        self.bucket, _, self.prefix = bucket_url[len("s3://") :].partition("/")
        channel = channel_toml().replace("approval = false", "approval = false\nready_ahead = 0")
        extra = f'\n[media]\nurl = "{bucket_url}"\n'
        # No `journal = ...`: the journal is in the media's bucket, shared by both.
        for name in "AB":
            write_config(self.home(name), channel + SMALL_PIPELINE, extra=extra)

    def home(self, name: str) -> Path:
        return self.root / f"host-{name}"

    def use(self, name: str) -> Path:
        self.monkeypatch.setenv("AUTORETTO_HOME", str(self.home(name)))
        return self.home(name)

    def outbox(self, name: str) -> list[Path]:
        return sorted((self.home(name) / "outbox").rglob("*.mp4"))


@pytest.fixture
def hosts(tmp_path, bucket_url, postgres_server, monkeypatch, cli) -> Hosts:
    monkeypatch.setenv("AUTORETTO_DATABASE_URL", postgres_server.fresh_url())
    made = Hosts(tmp_path, bucket_url, monkeypatch)
    for name in "AB":
        made.use(name)
        code, _, err = cli("init")
        assert code == 0, err
    made.use("A")
    code, _, err = cli("run-due", "--no-make", now="2026-11-29T09:00:00Z")  # the channel is seen
    assert code == 0, err
    return made


@contextlib.contextmanager
def bucket_cut(s3_server, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The bucket unreachable for the block, whose bucket requests get one try each
    (AWS_MAX_ATTEMPTS=1, on clients made afresh in this process): the refused connection is the
    answer, and boto3's pauses before a second and a third try would change nothing but the
    time."""
    with monkeypatch.context() as patched:
        patched.setenv("AWS_MAX_ATTEMPTS", "1")
        patched.setattr("autoretto.bucket._clients", {})
        s3_server.relay.cut()
        try:
            yield
        finally:
            s3_server.relay.mend()


def records(episode_id: int) -> dict[str, dict]:
    from autoretto.ledger import files
    from autoretto.ledger.store import open_database, store_url

    db = open_database(Path("/nonexistent"), create=False, url=store_url())
    try:
        return files.of_episode(db, episode_id)
    finally:
        db.close()


def episode_keys(s3_server, hosts: Hosts, episode_id: int) -> dict[str, bytes]:
    return s3_server.objects(hosts.bucket, f"{hosts.prefix}/episodes/{episode_id}/")


def make_on_a(hosts: Hosts, cli) -> dict:
    hosts.use("A")
    (episode,) = cli.json("make", "lofi", now="2026-11-29T09:10:00Z")
    assert episode["state"] == "ready", episode["reason"]
    return episode


def test_a_video_made_on_one_host_is_published_by_another_once(hosts, cli, s3_server):
    episode = make_on_a(hosts, cli)
    objects = episode_keys(s3_server, hosts, episode["id"])
    recorded = records(episode["id"])
    names = {Path(p).name for p in [*episode["videos"].values(), episode["thumbnail"]]}
    assert set(recorded) == names
    assert set(objects) == {f"{hosts.prefix}/episodes/{episode['id']}/{name}" for name in names}
    for found in recorded.values():
        data = objects[found["key"]]  # the stored digest is what the object itself says
        assert found["sha256"] == hashlib.sha256(data).hexdigest() and found["size"] == len(data)

    home_b = hosts.use("B")
    code, out, err = cli("run-due", "--no-make", now="2026-11-29T10:05:00Z")
    assert code == 0, err + out
    assert hosts.outbox("A") == []
    (copy,) = hosts.outbox("B")
    video = Path(episode["videos"]["landscape"]).name
    assert copy.read_bytes() == objects[recorded[video]["key"]]
    assert (home_b / "media" / "cache" / "episodes" / str(episode["id"]) / video).is_file()
    assert not (home_b / "media" / "episodes" / str(episode["id"])).exists()
    (decision,) = cli.json("decisions")
    assert decision["outcome"] == "posted"
    # A later run on either host posts it no more.
    for name in "AB":
        hosts.use(name)
        code, _, err = cli("run-due", "--no-make", now="2026-11-29T10:30:00Z")
        assert code == 0, err
    assert len(hosts.outbox("A") + hosts.outbox("B")) == 1

    # Retention: once kept long enough, B's prune deletes the objects, the records and its
    # cache; A's prune its own working files.
    code, _, err = cli("prune", now="2027-01-15T10:00:00Z")
    assert code == 0, err
    assert episode_keys(s3_server, hosts, episode["id"]) == {} and records(episode["id"]) == {}
    assert not (home_b / "media" / "cache" / "episodes" / str(episode["id"])).exists()
    hosts.use("A")
    code, _, err = cli("prune", now="2027-01-15T10:00:00Z")
    assert code == 0, err
    assert not Path(episode["videos"]["landscape"]).exists()


def test_a_host_killed_mid_upload_leaves_no_record_and_another_host_finishes(hosts, cli, s3_server):
    hosts.use("A")
    code, out, err = run_command(
        "run-due", now="2026-11-29T10:05:00Z", env={"AUTORETTO_FAULT": "media_upload:kill"},
        timeout=300,
    )  # fmt: skip
    assert code == -signal.SIGKILL, err
    (making,) = cli.json("episodes")
    assert making["state"] == "making"
    assert len(episode_keys(s3_server, hosts, making["id"])) == 1  # one object is up...
    assert records(making["id"]) == {}  # ...and none is recorded
    assert cli.json("decisions") == []

    hosts.use("B")
    code, out, err = cli("run-due", now="2026-11-29T10:25:00Z")
    assert code == 0, err + out
    (episode,) = cli.json("episodes")  # resumed, not made a second time
    assert episode["id"] == making["id"] and episode["state"] == "ready"
    recorded = records(episode["id"])
    objects = episode_keys(s3_server, hosts, episode["id"])
    assert set(objects) == {found["key"] for found in recorded.values()}
    (decision,) = cli.json("decisions")
    assert decision["outcome"] == "posted"
    assert len(hosts.outbox("A") + hosts.outbox("B")) == 1


def test_discard_and_prune_delete_a_half_uploaded_episode_s_objects(hosts, cli, s3_server):
    hosts.use("A")
    code, _, err = run_command(
        "run-due", now="2026-11-29T10:05:00Z", env={"AUTORETTO_FAULT": "media_upload:kill"},
        timeout=300,
    )  # fmt: skip
    assert code == -signal.SIGKILL, err
    (making,) = cli.json("episodes")
    assert episode_keys(s3_server, hosts, making["id"])
    hosts.use("B")
    code, out, err = cli("episode", "discard", str(making["id"]), now="2026-11-29T11:30:00Z")
    assert code == 0, err
    assert "1 object from the media bucket" in out
    assert episode_keys(s3_server, hosts, making["id"]) == {}


def test_a_bucket_cut_while_b_must_fetch_keeps_the_slot_owed(hosts, cli, s3_server, monkeypatch):
    episode = make_on_a(hosts, cli)
    hosts.use("B")
    with bucket_cut(s3_server, monkeypatch):
        code, out, err = cli("run-due", "--no-make", now="2026-11-29T10:05:00Z")
    assert code == 4, out + err
    # The journal shares the bucket (its default with [media] url): the run stops at its first
    # look at it; with the journal elsewhere, at the fetch of the video. Nothing is sent either
    # way, and the slot stays owed.
    assert "tried again later" in out + err and "s3://" in out + err
    assert hosts.outbox("B") == [] and cli.json("decisions") == []
    code, out, err = cli("run-due", "--no-make", now="2026-11-29T10:25:00Z")
    assert code == 0, err + out
    (decision,) = cli.json("decisions")
    assert decision["outcome"] == "posted"
    (sidecar,) = outbox_sidecars(hosts.home("B"))
    assert sidecar["episode_id"] == episode["id"]
    assert len(hosts.outbox("A") + hosts.outbox("B")) == 1


def test_the_media_host_links_the_episode_s_own_object(hosts, cli, s3_server):
    from datetime import timedelta
    from urllib.parse import urlsplit

    from autoretto.config import load_config
    from autoretto.episodes import episode_view, get_episode
    from autoretto.ledger.store import open_database, store_url
    from autoretto.media import Media, local_episode
    from autoretto.mediahost import stored_link
    from autoretto.paths import Paths
    from autoretto.platforms import FIELDS

    episode = make_on_a(hosts, cli)
    home_b = hosts.use("B")
    config = load_config(Paths(home_b), platforms=FIELDS)
    db = open_database(config.paths.database, create=False, url=store_url(config.store_url))
    try:
        view = episode_view(local_episode(Media.of(config), db, get_episode(db, episode["id"])))
    finally:
        db.close()
    reels = view.videos["reels"]
    assert Path(reels).is_relative_to(home_b / "media" / "cache")
    stored = view.stored[reels]
    key = f"{hosts.prefix}/episodes/{episode['id']}/{Path(reels).name}"
    assert stored == f"s3://{hosts.bucket}/{key}"
    before = s3_server.objects(hosts.bucket)
    with stored_link(stored, timedelta(minutes=10)) as url:
        assert urlsplit(url).path in (f"/{hosts.bucket}/{key}", f"/{key}")
        got = requests.get(url, timeout=10)
        assert got.status_code == 200 and got.content == Path(reels).read_bytes()
    assert s3_server.objects(hosts.bucket) == before  # no copy uploaded, nothing deleted


def test_a_bad_media_url_is_one_line_naming_the_field(home, cli):
    write_config(home, channel_toml(), extra='\n[media]\nurl = "https://example.com/media"\n')
    code, _, err = cli("status")
    assert code != 0
    assert "media.url" in err and "s3://" in err and len(err.strip().splitlines()) == 1


def test_doctor_shows_the_media_bucket_and_whether_it_answers(
    home, cli, bucket_url, s3_server, monkeypatch
):
    write_config(home, channel_toml(), extra=f'\n[media]\nurl = "{bucket_url}"\n')
    cli("init")
    _, out, _ = cli("doctor", "--json")
    facts = json.loads(out)
    assert facts["media"]["url"] == bucket_url + "/" and facts["media"]["ok"] is True
    with bucket_cut(s3_server, monkeypatch):
        _, out, _ = cli("doctor", "--json")
    facts = json.loads(out)
    assert facts["media"]["ok"] is False
    assert any(p.startswith("[media] url:") for p in facts["problems"])


def test_status_and_an_idle_run_due_do_not_import_boto3(home, bucket_url):
    """Media in a bucket costs an idle run nothing: no boto3 until a file must move. (With
    the journal in the bucket too, its default, status and run-due must read the journal and
    load boto3 for that: here the journal is a file, to see the media alone.)"""
    import subprocess
    import sys

    extra = f'\n[media]\nurl = "{bucket_url}"\n'
    write_config(home, f'journal = "{home / "publish.journal"}"\n' + channel_toml(), extra=extra)
    assert Cli()("init")[0] == 0
    for args in (["status"], ["run-due", "--no-make"]):
        found = subprocess.run(
            [sys.executable, "-X", "importtime", "-m", "autoretto", *args],
            capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert found.returncode == 0, found.stderr[-2000:]
        assert "boto3" not in found.stderr and "botocore" not in found.stderr, args


def test_instagram_fetches_the_episode_s_own_object_from_a_presigned_link(
    home, tmp_path, clip, bucket_url, s3_server, monkeypatch
):
    """Instagram, through the real platform and its fake Graph API (which fetches the link as
    Meta does): the episode's video is in the media bucket, so the container's link is a
    presigned link to that object, not a copy uploaded for the attempt."""
    from dataclasses import replace
    from urllib.parse import urlsplit

    from autoretto.episodes import get_episode
    from autoretto.media import Media, object_name, upload
    from autoretto.platforms import REGISTRY
    from autoretto.platforms.instagram import InstagramPlatform
    from autoretto.posts import send_post
    from tests.fakes.instagram_server import INSTAGRAM, FakeGraph
    from tests.platforms.harness import Bench
    from tests.platforms.test_instagram import connect, free_port, settings_for

    monkeypatch.setitem(REGISTRY, "instagram", InstagramPlatform)
    monkeypatch.setenv("AUTORETTO_VAULT", "file")
    with FakeGraph(INSTAGRAM) as fake:
        extra = f'\n[media]\nurl = "{bucket_url}"\n'
        bench = Bench(
            home, "instagram", settings=settings_for(fake, free_port()) + extra, clip=clip
        )
        connect(bench, fake)
        # The host that made it uploaded its video (here: the bench's clip) and recorded it.
        made = Media(tmp_path / "host-A" / "media", bench.config.media.url)
        upload(made, bench.db, bench.episode_id, [clip])
        bucket, _, prefix = bucket_url[len("s3://") :].partition("/")
        key = f"{prefix}/{object_name(bench.episode_id, clip.name)}"
        before = s3_server.objects(bucket, f"{prefix}/episodes/")
        assert set(before) == {key}

        posting = replace(bench.posting(bench.now), media=Media.of(bench.config))
        result = send_post(
            posting, bench.platform(), get_episode(bench.db, bench.episode_id),
            publish_at=bench.now, slot="2026-11-29T10:00", slot_at="2026-11-29T10:00:00Z",
        )  # fmt: skip
        assert result.outcome == "posted", result
        (container,) = fake.containers.values()
        assert urlsplit(container.video_url).path in (f"/{bucket}/{key}", f"/{key}")
        assert fake.fetches[-1]["status"] == 200
        assert fake.fetches[-1]["bytes"] == clip.stat().st_size
        # No copy uploaded, the object kept (the journal's lines are the only new objects).
        assert s3_server.objects(bucket, f"{prefix}/episodes/") == before
        assert set(s3_server.objects(bucket)) - set(before) <= {
            k for k in s3_server.objects(bucket) if k.startswith(f"{prefix}/journal/")
        }


def test_aws_max_attempts_sets_a_bucket_request_s_tries(home, cli, bucket_url, monkeypatch):
    """boto3's own AWS_MAX_ATTEMPTS, when set, is how many tries a bucket request gets (4
    otherwise); a value that is no number of tries is one line naming the variable."""
    from autoretto.bucket import _client

    write_config(home, channel_toml(), extra=f'\n[media]\nurl = "{bucket_url}"\n')
    cli("init")
    monkeypatch.setattr("autoretto.bucket._clients", {})
    assert _client().meta.config.retries["total_max_attempts"] == 4
    monkeypatch.setattr("autoretto.bucket._clients", {})
    monkeypatch.setenv("AWS_MAX_ATTEMPTS", "1")
    assert _client().meta.config.retries["total_max_attempts"] == 1

    monkeypatch.setattr("autoretto.bucket._clients", {})
    monkeypatch.setenv("AWS_MAX_ATTEMPTS", "many")
    code, out, _ = cli("doctor", "--json")
    facts = json.loads(out)
    assert code != 0 and facts["media"]["ok"] is False
    said = "AWS_MAX_ATTEMPTS='many' is not a number of tries: set it to a whole number from 1 to 20"
    assert f"[media] url: {said}, or unset it for 4" in facts["problems"], facts["problems"]
