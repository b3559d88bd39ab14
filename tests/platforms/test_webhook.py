"""The webhook platform against its fake endpoint, as a table of cases run by the harness."""

from __future__ import annotations

import pytest

from tests.fakes import webhook_server
from tests.platforms.harness import Bench, Case, run_case

CASES = [
    Case("happy path"),
    Case(
        "5xx twice, then taken: retried inside the job",
        arrange=lambda fake: fake.script.extend(["status:503", "status:502"]),
    ),
    Case(
        "answer lost after it was taken: looked for, never sent twice",
        arrange=lambda fake: fake.script.append("drop"),
        state="may_be_live",
        outcome="failed",
        reason_has="may be live",
        then_look=True,
    ),
    Case(
        "token refused: a person must look, no retry",
        arrange=lambda fake: fake.script.append("status:401"),
        state="needs_person",
        outcome="failed",
        publishes=0,
        reason_has="HTTP 401",
    ),
    Case(
        "content refused: the episode needs fixing",
        arrange=lambda fake: fake.script.append("status:422"),
        state="needs_person",
        outcome="failed",
        publishes=0,
        reason_has="HTTP 422",
    ),
    Case(
        "still failing after the job's tries: failed, tried again on a later slot",
        arrange=lambda fake: fake.script.extend(["status:500"] * 3),
        state="failed",
        outcome="failed",
        publishes=0,
    ),
]


@pytest.fixture
def fake():
    server = webhook_server.start()
    yield server
    server.close()


@pytest.mark.parametrize("case", CASES, ids=str)
def test_webhook_cases(home, clip, fake, case):
    bench = Bench(home, "webhook", settings=f'url = "{fake.url}"\n', clip=clip)
    run_case(bench, fake, case, lambda: len(fake.publishes))


def test_the_endpoint_gets_the_copy_and_the_marker(home, clip, fake, monkeypatch):
    monkeypatch.setenv("HOOK_TOKEN", "s3cret")
    fake.token = "s3cret"  # the endpoint refuses any other bearer token
    bench = Bench(
        home, "webhook", settings=f'url = "{fake.url}"\ntoken_env = "HOOK_TOKEN"\n', clip=clip
    )
    bench.send()
    (received,) = fake.publishes
    assert received.authorized  # it carried `Authorization: Bearer s3cret`
    assert received.metadata["title"] == "Rainy night"
    assert received.metadata["slot_at"] == "2026-11-29T10:00:00Z"
    assert received.marker == received.metadata["marker"]
    assert received.video_bytes == clip.stat().st_size
