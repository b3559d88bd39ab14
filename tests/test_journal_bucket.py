"""The publish journal in a bucket (issue 26): several hosts share one PostgreSQL store and
one journal of write-once objects, so a restore of the database cannot roll the journal back.

Every host is a home of its own (AUTORETTO_HOME) sharing AUTORETTO_DATABASE_URL, the bucket
(moto's server, behind a relay a test can cut) and, as a shared mount would, the media folder.
A command runs as a real process (as cron starts it) where the case needs one: runs at the same
time, a run cut off or killed mid-way, and every command whose exit code and printed lines the
case reads. The others (the set-up, runs that only have to succeed and whose effects the case
reads from the fake, the bucket and the store, and the `--json` look-ups) run in this process
(`Host.here`): the same command, without a process's start, knowing no more than one would.
The platform is the webhook fake, which keeps every copy a person would see on the other side.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from autoretto.journal import SEQ_DIGITS
from tests.fakes import webhook_server
from tests.support import Cli, channel_toml, run_command, run_process, write_config

HELD, RETRY = 3, 4
#: one try per bucket request while the bucket is cut: a refused connection is the answer, and
#: boto3's pauses before a second and a third try would change nothing but the time
ONE_TRY = {"AWS_MAX_ATTEMPTS": "1"}


@pytest.fixture
def fake():
    server = webhook_server.start()
    yield server
    server.close()


@pytest.fixture
def database(postgres_server, monkeypatch) -> str:
    url = postgres_server.fresh_url()
    monkeypatch.setenv("AUTORETTO_DATABASE_URL", url)
    return url


def in_process(cli: Cli, *args: str, now: str | None, env: dict[str, str]):
    """`autoretto ARGS` in this process with `env` set for it, knowing no more of the journal
    than a process of its own would: the per-process journal (journal.bucket_journal, which
    remembers what a run learnt of the bucket) is forgotten before and after."""
    from autoretto.journal import bucket_journal

    bucket_journal.cache_clear()
    try:
        return cli(*args, now=now, env=env)
    finally:
        bucket_journal.cache_clear()


class Host:
    """One host: its own home; the store, the bucket and the media folder shared."""

    def __init__(self, home: Path) -> None:
        self.home = home
        self.cli = Cli()

    def __call__(
        self, *args: str, now: str | None = None, env: dict[str, str] | None = None
    ) -> tuple[int, str, str]:
        """`autoretto ARGS` as a real process of this host (`env`: more variables for it)."""
        return run_command(*args, now=now, env={**(env or {}), "AUTORETTO_HOME": str(self.home)})

    def here(self, *args: str, now: str | None = None) -> tuple[int, str, str]:
        """`autoretto ARGS` of this host in this process (set-up and look-ups)."""
        return in_process(self.cli, *args, now=now, env={"AUTORETTO_HOME": str(self.home)})

    def json(self, *args: str, now: str | None = None):
        code, out, err = self.here(*args, "--json", now=now)
        assert code == 0, err
        return json.loads(out)

    def start(
        self, *args: str, now: str | None = None, env: dict[str, str] | None = None
    ) -> subprocess.Popen:
        return run_process(*args, now=now, env={**(env or {}), "AUTORETTO_HOME": str(self.home)})


def config_text(journal: str, fake, platforms=("webhook",)) -> tuple[str, ...]:
    channel = channel_toml().replace(
        'platforms = ["folder"]', f"platforms = {json.dumps(platforms)}"
    )
    return (
        f'journal = "{journal}"\n',
        channel,
        f'\n[platforms.webhook]\nurl = "{fake.url}"\ntimeout = 10\n'
        '\n[retry]\nattempts = 3\nfirst_wait = "0s"\n',
    )


def two_hosts(tmp_path, clip, fake, journal: str, *, episodes=4, platforms=("webhook",)):
    """Hosts a and b, set up; host a added `episodes` episodes ("lofi 0", ...)."""
    a, b = Host(tmp_path / "host-a"), Host(tmp_path / "host-b")
    for host in (a, b):
        *blocks, extra = config_text(journal, fake, platforms)
        write_config(host.home, *blocks, extra=extra)
    code, _, err = a.here("init")
    assert code == 0, err
    os.symlink(a.home / "media", b.home / "media")  # a shared mount, as the README asks
    code, _, err = b.here("init")
    assert code == 0, err
    for number in range(episodes):
        code, _, err = a.here("episode", "add", "lofi", str(clip), "--title", f"lofi {number}")
        assert code == 0, err
    code, _, err = a.here("run-due", now="2026-11-29T09:00:00Z")
    assert code == 0, err
    return a, b


def first_slot_posted(a: Host) -> None:
    """Host a posts the 10:00 slot ("lofi 0"): the set-up of the cases that start from there."""
    code, out, err = a.here("run-due", now="2026-11-29T10:05:00Z")
    assert code == 0, (out, err)


def bucket_and_prefix(bucket_url: str) -> tuple[str, str]:
    bucket, _, prefix = bucket_url.removeprefix("s3://").partition("/")
    return bucket, f"{prefix}/journal/"


def journal_objects(s3_server, bucket_url: str) -> dict[int, dict]:
    """The journal's numbered objects, by number (the test's own look at the bucket); every
    key is a number, zero-padded, whose object holds that number's line."""
    bucket, prefix = bucket_and_prefix(bucket_url)
    found = {}
    for key, data in s3_server.objects(bucket, prefix).items():
        name = key.removeprefix(prefix)
        if name == ".created":
            continue
        assert len(name) == SEQ_DIGITS and name.isdigit(), key
        entry = json.loads(data)
        assert entry["seq"] == int(name), (key, entry)
        found[int(name)] = entry
    return found


def copies(fake) -> dict[str, int]:
    counted: dict[str, int] = {}
    for copy in fake.copies:
        title = copy["metadata"]["title"]
        counted[title] = counted.get(title, 0) + 1
    return counted


def test_two_hosts_post_in_turn_and_the_bucket_holds_every_number_once(
    tmp_path, clip, fake, database, bucket_url, s3_server
):
    a, b = two_hosts(tmp_path, clip, fake, bucket_url)
    turns = [
        (a, "2026-11-29T10:05:00Z"),
        (b, "2026-11-29T11:05:00Z"),
        (a, "2026-11-29T12:05:00Z"),
        (b, "2026-11-30T10:05:00Z"),
    ]
    for host, moment in turns:
        code, out, err = host.here("run-due", now=moment)
        assert code == 0, (out, err)
    assert copies(fake) == {f"lofi {n}": 1 for n in range(4)}

    report = b.json("journal")
    assert report["journal"] == f"{bucket_url}/journal/"
    assert report["held"] is None and report["missing"] == []
    numbers = journal_objects(s3_server, bucket_url)
    assert sorted(numbers) == list(range(1, report["database_seq"] + 1))
    assert report["journal_seq"] == report["database_seq"] >= 12  # attempt, publish, stamp x4
    kinds = [numbers[n]["kind"] for n in sorted(numbers)]
    assert kinds.count("publish") == 4 and kinds.count("attempt") == 4

    # No file journal was made on either host.
    assert not (tmp_path / "state").exists() or not list((tmp_path / "state").rglob("*.journal"))


def test_many_processes_catching_up_at_once_never_put_one_number_twice(
    tmp_path, clip, fake, database, bucket_url, s3_server
):
    """Lines the database numbered but no journal has (as a crash after the commit leaves
    them): six runs on both hosts catch up at once, each putting what it finds missing."""
    a, b = two_hosts(tmp_path, clip, fake, bucket_url, episodes=1)
    first_slot_posted(a)
    before = a.json("journal")["database_seq"]

    from autoretto.ledger import journal as numbering
    from autoretto.ledger.store import open_database, transaction

    db = open_database(tmp_path / "unused.db", create=False, url=database)
    try:
        with transaction(db):
            for number in range(24):
                moment = f"2026-11-29T10:{number % 60:02d}:00Z"
                numbering.number_entry(db, {"kind": "resumed", "at": moment})
    finally:
        db.close()

    runs = [host.start("run-due", now="2026-11-29T10:30:00Z") for host in (a, b) * 3]
    for run in runs:
        out, err = run.communicate(timeout=180)
        assert run.returncode == 0, (out, err)
    numbers = journal_objects(s3_server, bucket_url)
    assert sorted(numbers) == list(range(1, before + 25))
    assert all(numbers[n]["kind"] == "resumed" for n in range(before + 1, before + 25))
    assert a.json("journal")["journal_seq"] == before + 24


def pg(postgres_server, program: str, *args: str) -> None:
    """Debian's `program` (pg_dump, psql, pg_restore), as tests/postgres_server.py runs its own
    commands (as the postgres user when the tests run as root)."""
    command = postgres_server._as_server_user(str(postgres_server.bin / program), *args)
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    assert done.returncode == 0, (command, done.stdout, done.stderr)


def test_a_database_restored_from_an_older_dump_holds_every_host_until_one_resumes(
    tmp_path, clip, fake, database, bucket_url, s3_server, postgres_server
):
    a, b = two_hosts(tmp_path, clip, fake, bucket_url)
    first_slot_posted(a)
    dump = postgres_server.root / f"dump-{os.getpid()}-{tmp_path.name}"
    pg(postgres_server, "pg_dump", "--format=custom", f"--file={dump}", f"--dbname={database}")
    code, _, err = b.here("run-due", now="2026-11-29T11:05:00Z")  # posted after the dump
    assert code == 0, err
    assert copies(fake) == {"lofi 0": 1, "lofi 1": 1}

    # Put the older dump back: drop the database, make it afresh, restore into it.
    name = urlsplit(database).path.lstrip("/")
    server = postgres_server.url()
    pg(postgres_server, "psql", "-v", "ON_ERROR_STOP=1", f"--dbname={server}",
       "-c", f'DROP DATABASE "{name}" WITH (FORCE)', "-c", f'CREATE DATABASE "{name}"')  # fmt: skip
    pg(postgres_server, "pg_restore", "--exit-on-error", f"--dbname={database}", str(dump))

    for host, moment in ((a, "2026-11-29T12:05:00Z"), (b, "2026-11-29T12:06:00Z")):
        code, out, err = host("run-due", now=moment)
        assert code == HELD, (out, err)
        (line,) = err.splitlines()
        assert line.startswith("POSTING IS HELD: ") and "restored" in line, line
    assert copies(fake) == {"lofi 0": 1, "lofi 1": 1}  # nothing was sent

    report = b.json("journal")
    assert report["held"] and report["journal_seq"] > report["database_seq"]
    assert [e["kind"] for e in report["missing"]] == ["attempt", "publish", "stamp"]
    code, out, err = a("resume", "--checked")
    assert code == 0 and "wrote 3 journal entries back" in out, (out, err)

    for host, moment in ((b, "2026-11-29T12:10:00Z"), (a, "2026-11-30T10:05:00Z")):
        code, out, err = host.here("run-due", now=moment)
        assert code == 0, (out, err)
    assert copies(fake) == {f"lofi {n}": 1 for n in range(4)}, "a slot went out twice"
    numbers = journal_objects(s3_server, bucket_url)
    assert sorted(numbers) == list(range(1, b.json("journal")["database_seq"] + 1))


def test_a_bucket_cut_off_sends_nothing_and_the_slot_goes_out_once_it_is_back(
    tmp_path, clip, fake, database, bucket_url, s3_server
):
    a, b = two_hosts(tmp_path, clip, fake, bucket_url, episodes=2)
    first_slot_posted(a)

    s3_server.relay.cut()
    try:
        code, out, err = b("run-due", now="2026-11-29T11:05:00Z", env=ONE_TRY)
        assert code == RETRY, (out, err)
        (line,) = [text for text in out.splitlines() if text.startswith("tried again later: ")]
        assert f"the publish journal {bucket_url}/journal/ cannot be reached" in line, line
        assert "Traceback" not in err, err
        assert copies(fake) == {"lofi 0": 1}
    finally:
        s3_server.relay.mend()

    code, out, err = a.here("run-due", now="2026-11-29T11:20:00Z")
    assert code == 0, (out, err)
    assert copies(fake) == {"lofi 0": 1, "lofi 1": 1}
    decided = [d for d in a.json("decisions") if d["slot"] == "2026-11-29T11:00"]
    assert [d["outcome"] for d in decided] == ["posted"]


def test_a_bucket_cut_off_mid_run_sends_nothing_more_and_the_rest_goes_out_once(
    tmp_path, clip, fake, database, bucket_url, s3_server
):
    """The bucket goes while the webhook's post is on its way: that post is kept (its journal
    line follows on the next run), the folder's is not sent, and waits for the next run."""
    a, b = two_hosts(tmp_path, clip, fake, bucket_url, episodes=1, platforms=("webhook", "folder"))
    fake.script.append("hold")
    run = a.start("run-due", now="2026-11-29T10:05:00Z", env=ONE_TRY)
    try:
        assert fake.holding.wait(timeout=60)
        s3_server.relay.cut()
    finally:
        fake.release()
    out, err = run.communicate(timeout=180)
    try:
        assert run.returncode == RETRY, out + "\n" + err
        assert "nothing was sent" in out, out
        assert not list((a.home / "outbox").rglob("*.json"))
    finally:
        s3_server.relay.mend()

    code, out, err = b.here("run-due", now="2026-11-29T10:20:00Z")
    assert code == 0, (out, err)
    assert copies(fake) == {"lofi 0": 1}
    # Each host's `folder` outbox is its own (relative to its home): one copy in all.
    assert len([*a.home.glob("outbox/lofi/*.json"), *b.home.glob("outbox/lofi/*.json")]) == 1
    numbers = journal_objects(s3_server, bucket_url)
    assert sorted(numbers) == list(range(1, a.json("journal")["database_seq"] + 1))
    kinds = [numbers[n]["kind"] for n in sorted(numbers)]
    assert kinds.count("publish") == 2  # the webhook's line, written late, and the folder's


def test_a_damaged_object_holds_posting_naming_its_key(
    tmp_path, clip, fake, database, bucket_url, s3_server
):
    a, b = two_hosts(tmp_path, clip, fake, bucket_url, episodes=2)
    first_slot_posted(a)
    seq = a.json("journal")["database_seq"]
    bucket, prefix = bucket_and_prefix(bucket_url)
    key = f"{prefix}{seq:0{SEQ_DIGITS}d}"
    s3_server.client().put_object(Bucket=bucket, Key=key, Body=b"not json at all")

    for host, args in ((a, ["run-due"]), (b, ["journal"]), (b, ["status"])):
        code, out, err = host(*args, now="2026-11-29T11:05:00Z")
        assert code == HELD, (args, out, err)
        (line,) = [text for text in err.splitlines() if text.strip()]
        assert f"s3://{bucket}/{key} is not a JSON line" in line, line
        assert "mend or delete that object" in line and "`autoretto journal`" in line, line
    assert copies(fake) == {"lofi 0": 1}


def test_a_number_another_copy_of_the_database_took_holds_until_resume(
    tmp_path, clip, fake, database, bucket_url, s3_server
):
    """A line put under a number this database gave to another line (a restore caught in the
    middle of another host's catching up): catching up stops there, posting holds on every
    host, and `resume --checked` goes on after both."""
    a, b = two_hosts(tmp_path, clip, fake, bucket_url, episodes=2)
    first_slot_posted(a)
    seq = a.json("journal")["database_seq"]
    bucket, prefix = bucket_and_prefix(bucket_url)
    other = {"kind": "resumed", "at": "2026-11-29T10:06:00Z", "seq": seq + 1}
    s3_server.client().put_object(
        Bucket=bucket, Key=f"{prefix}{seq + 1:0{SEQ_DIGITS}d}", Body=json.dumps(other).encode()
    )
    # The database's own number seq + 1, for a line the journal does not have.
    from autoretto.ledger import journal as numbering
    from autoretto.ledger.store import open_database, transaction

    db = open_database(tmp_path / "unused.db", create=False, url=database)
    try:
        with transaction(db):
            numbering.number_entry(db, {"kind": "resumed", "at": "2026-11-29T10:07:00Z"})
    finally:
        db.close()

    for host, moment in ((a, "2026-11-29T11:05:00Z"), (b, "2026-11-29T11:06:00Z")):
        code, out, err = host("run-due", now=moment)
        assert code == HELD, (out, err)
        assert f"holds #{seq + 1} for another event" in err, err
    assert copies(fake) == {"lofi 0": 1}
    report = b.json("journal")
    assert report["conflict"] and [e["seq"] for e in report["missing"]] == [seq + 1]
    code, out, err = b.here("resume", "--checked")
    assert code == 0, (out, err)
    code, out, err = a.here("run-due", now="2026-11-29T11:10:00Z")
    assert code == 0, (out, err)
    assert copies(fake) == {"lofi 0": 1, "lofi 1": 1}
    assert journal_objects(s3_server, bucket_url)[seq + 2]["kind"] == "resumed"


def test_doctor_says_where_the_journal_lives_and_warns_of_a_file_per_host(
    tmp_path, fake, database, bucket_url
):
    a = Host(tmp_path / "host-a")
    *blocks, extra = config_text(bucket_url, fake)
    write_config(a.home, *blocks, extra=extra)
    assert a.here("init")[0] == 0
    facts = json.loads(a.here("doctor", "--json")[1])
    assert facts["journal"] == {
        "path": f"{bucket_url}/journal/",
        "kind": "bucket",
        "same_file_system": False,
    }
    assert not any("publish journal" in w for w in facts["warnings"]), facts["warnings"]
    _, out, _ = a.here("doctor")
    assert f"journal   {bucket_url}/journal/" in out, out

    # The default file journal on a shared PostgreSQL store: each host would keep its own.
    write_config(a.home, *blocks[1:], extra=extra)
    facts = json.loads(a.here("doctor", "--json")[1])
    assert facts["journal"]["kind"] == "file"
    (warning,) = [w for w in facts["warnings"] if "store is PostgreSQL" in w]
    assert 'journal = "s3://BUCKET/PREFIX"' in warning, warning


def test_a_bucket_that_ignores_conditional_puts_is_refused_in_one_line(
    tmp_path, clip, fake, database, bucket_url, monkeypatch
):
    """A journal is made only in a bucket that refuses a second conditional put on one key.
    Here the journal is pointed at a store that takes any put (a plain HTTP server answering
    200 to everything stands in for one that ignores If-None-Match)."""
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    class Yes(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def _yes(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            if self.command == "GET" and "list-type" in self.path:
                body = (
                    b'<?xml version="1.0" encoding="UTF-8"?><ListBucketResult>'
                    b"<IsTruncated>false</IsTruncated><KeyCount>0</KeyCount></ListBucketResult>"
                )
            else:
                body = b""
            status = 404 if self.command == "HEAD" else 200
            self.send_response(status)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(body)

        do_GET = do_PUT = do_HEAD = do_POST = do_DELETE = _yes

    server = ThreadingHTTPServer(("127.0.0.1", 0), Yes)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        monkeypatch.setenv("AWS_ENDPOINT_URL_S3", f"http://127.0.0.1:{server.server_address[1]}")
        # This process's boto3 clients know the moto endpoint: its set-up makes its own.
        monkeypatch.setattr("autoretto.bucket._clients", {})
        a, _ = Host(tmp_path / "host-a"), None
        *blocks, extra = config_text("s3://careless-store/autoretto", fake)
        write_config(a.home, *blocks, extra=extra)
        assert a.here("init")[0] == 0
        code, _, err = a.here("episode", "add", "lofi", str(clip), "--title", "lofi 0")
        assert code == 0, err
        assert a.here("run-due", now="2026-11-29T09:00:00Z")[0] == 0
        code, out, err = a("run-due", now="2026-11-29T10:05:00Z")
        assert code != 0, (out, err)
        assert "ignores conditional puts (If-None-Match)" in out + err, (out, err)
        assert "Traceback" not in err, err
        assert fake.copies == []
    finally:
        server.shutdown()
        server.server_close()


def test_media_in_a_bucket_keeps_the_journal_there_too(tmp_path, fake, database, bucket_url):
    a = Host(tmp_path / "host-a")
    *blocks, extra = config_text(bucket_url, fake)
    write_config(a.home, *blocks[1:], extra=extra + f'\n[media]\nurl = "{bucket_url}"\n')
    assert a.here("init")[0] == 0
    facts = json.loads(a.here("doctor", "--json")[1])
    assert facts["journal"] == {
        "path": f"{bucket_url}/journal/",
        "kind": "bucket",
        "same_file_system": False,
    }
