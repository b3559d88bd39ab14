"""Several hosts on one PostgreSQL store and one bucket (issue 26), end to end.

Every host is a home of its own with its own AUTORETTO_HOST_ID (so the hosts are apart for
the liveness rule too: none can ask after another's pid, and a dead one is taken over only
once its beat has stood still across two sightings); they share AUTORETTO_DATABASE_URL and
`[media] url` (the media and, with no `journal` set, the journal in the bucket: moto's server
behind a relay). The platform is the webhook fake, which keeps every copy a person would see on
the other side and answers a look-up by marker. Every case counts copies there: 0 duplicates,
0 slots lost inside their window.

The runs that race and the run that is killed are real processes; the rest (the set-up, the
other host's runs that take over, whose effects the case reads from the fake and the store, and
the `--json` look-ups) run in this process (`Host.here`, as tests/test_journal_bucket.py's):
the same commands without a process's start, knowing no more than a process of its own would.
"""

from __future__ import annotations

import json
import signal
from pathlib import Path

import pytest

from tests.fakes import webhook_server
from tests.support import Cli, channel_toml, run_command, run_process, write_config
from tests.test_journal_bucket import copies, in_process
from tests.test_produce import SMALL_PIPELINE

HOSTS = ("a", "b", "c")


@pytest.fixture
def fake():
    server = webhook_server.start()
    yield server
    server.close()


class Host:
    def __init__(self, home: Path, name: str) -> None:
        self.home, self.name = home, name
        self.cli = Cli()

    @property
    def env(self) -> dict[str, str]:
        return {"AUTORETTO_HOME": str(self.home), "AUTORETTO_HOST_ID": f"host-{self.name}"}

    def __call__(self, *args: str, now: str | None = None, env: dict | None = None):
        return run_command(*args, now=now, env={**self.env, **(env or {})}, timeout=300)

    def here(self, *args: str, now: str | None = None):
        """`autoretto ARGS` of this host in this process (set-up and look-ups)."""
        return in_process(self.cli, *args, now=now, env=self.env)

    def json(self, *args: str, now: str | None = None):
        code, out, err = self.here(*args, "--json", now=now)
        assert code == 0, err
        return json.loads(out)

    def start(self, *args: str, now: str | None = None):
        return run_process(*args, now=now, env=self.env)


def fleet(tmp_path, postgres_server, bucket_url, fake, monkeypatch, *, channels=("lofi",),
          pipeline: bool = False) -> list[Host]:  # fmt: skip
    monkeypatch.setenv("AUTORETTO_DATABASE_URL", postgres_server.fresh_url())
    blocks = []
    for name in channels:
        block = channel_toml(name).replace('platforms = ["folder"]', 'platforms = ["webhook"]')
        if pipeline:
            block = block.replace("approval = false", "approval = false\nready_ahead = 0")
            block += SMALL_PIPELINE  # the table of the channel just above it
        blocks.append(block)
    extra = (
        f'\n[platforms.webhook]\nurl = "{fake.url}"\ntimeout = 10\n'
        f'\n[media]\nurl = "{bucket_url}"\n'
    )
    hosts = [Host(tmp_path / f"host-{name}", name) for name in HOSTS]
    for host in hosts:
        write_config(host.home, *blocks, extra=extra)
        code, _, err = host.here("init")
        assert code == 0, err
    code, _, err = hosts[0].here("run-due", "--no-make", now="2026-11-29T09:00:00Z")
    assert code == 0, err
    return hosts


def posted_slots(host: Host) -> dict[tuple[str, str], str]:
    return {(d["channel"], d["slot"]): d["outcome"] for d in host.json("decisions")}


def test_three_hosts_racing_on_every_slot_post_each_once(
    tmp_path, clip, postgres_server, bucket_url, s3_server, fake, monkeypatch
):
    channels = ("lofi", "jazz", "rain")
    hosts = fleet(tmp_path, postgres_server, bucket_url, fake, monkeypatch, channels=channels)
    for name in channels:  # made on host a, in the bucket; any host may post them
        for number in range(2):
            title = f"{name} {number}"
            code, _, err = hosts[0].here("episode", "add", name, str(clip), "--title", title)
            assert code == 0, err
    for moment in ("2026-11-29T10:05:00Z", "2026-11-29T11:05:00Z"):
        runs = [host.start("run-due", "--no-wait", now=moment) for host in hosts for _ in (1, 2)]
        results = [run.communicate(timeout=300) for run in runs]
        assert [run.returncode for run in runs] == [0] * len(runs), results
    assert copies(fake) == {f"{name} {number}": 1 for name in channels for number in range(2)}
    decided = posted_slots(hosts[1])
    assert decided == {
        (name, f"2026-11-29T{hour}:00"): "posted" for name in channels for hour in (10, 11)
    }
    # The journal in the bucket holds every number once, 1..N, whichever host took it.
    bucket, _, prefix = bucket_url.removeprefix("s3://").partition("/")
    numbers = sorted(
        int(key.rsplit("/", 1)[1])
        for key in s3_server.objects(bucket, f"{prefix}/journal/")
        if not key.endswith(".created")
    )
    assert numbers == list(range(1, len(numbers) + 1)) and len(numbers) >= 6


@pytest.mark.parametrize(
    "point",
    [
        "after_claim",
        "before_send",
        "after_send",
        "before_journal",
        "journal_append",
        "after_publish_recorded",
        "before_stamp",
    ],
)
def test_a_host_killed_at_a_fault_point_is_taken_over_and_the_slot_posted_once(
    point, tmp_path, clip, postgres_server, bucket_url, fake, monkeypatch
):
    hosts = fleet(tmp_path, postgres_server, bucket_url, fake, monkeypatch)
    a, b = hosts[0], hosts[1]
    code, _, err = a.here("episode", "add", "lofi", str(clip), "--title", "lofi 0")
    assert code == 0, err
    code, out, err = a(
        "run-due", "--no-wait", now="2026-11-29T10:05:00Z", env={"AUTORETTO_FAULT": f"{point}:kill"}
    )
    assert code == -signal.SIGKILL, (out, err)
    # Host b, on another machine, cannot ask after a's process: it sees a's beat, then takes
    # over only once that beat has stood still for stale_after (15 minutes) by its own clock.
    for moment in ("2026-11-29T10:06:00Z", "2026-11-29T10:22:00Z", "2026-11-29T10:40:00Z"):
        code, out, err = b.here("run-due", "--no-wait", now=moment)
        assert code in (0, 4), (moment, out, err)
    assert copies(fake) == {"lofi 0": 1}
    assert posted_slots(b) == {("lofi", "2026-11-29T10:00"): "posted"}
    assert b.json("status", now="2026-11-29T10:41:00Z")["held"] is None


def test_a_host_killed_mid_make_is_taken_over_by_another_that_makes_and_posts_once(
    tmp_path, postgres_server, bucket_url, fake, monkeypatch
):
    hosts = fleet(tmp_path, postgres_server, bucket_url, fake, monkeypatch, pipeline=True)
    a, b = hosts[0], hosts[1]
    code, out, err = a(
        "run-due", "--no-wait", now="2026-11-29T10:05:00Z",
        env={"AUTORETTO_FAULT": "make_render:kill"},
    )  # fmt: skip
    assert code == -signal.SIGKILL, (out, err)
    for moment in ("2026-11-29T10:06:00Z", "2026-11-29T10:22:00Z", "2026-11-29T10:40:00Z"):
        code, out, err = b.here("run-due", "--no-wait", now=moment)
        assert code in (0, 4), (moment, out, err)
    assert sum(copies(fake).values()) == 1
    assert posted_slots(b) == {("lofi", "2026-11-29T10:00"): "posted"}
