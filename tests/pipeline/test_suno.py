"""The Suno client against a local fake of the gcui-art/suno-api server."""

import json
import time

import pytest

from autoretto.pipeline.errors import ProviderRefused, ProviderUnavailable
from autoretto.pipeline.settings import SunoSettings
from autoretto.pipeline.suno import credits_left, fetch_track
from tests.fakes.suno_server import FakeSuno

AUDIO = b"ID3" + b"\x00" * 5000


class Sleeps(list):
    """Records the waits instead of sleeping."""

    def __call__(self, seconds: float) -> None:
        self.append(seconds)


def settings_for(suno: FakeSuno, **overrides) -> SunoSettings:
    values = dict(
        base_url=suno.url, timeout=5, attempts=3, retry_wait=1.0, poll_interval=2.0, max_wait=30.0
    )
    values.update(overrides)
    return SunoSettings(**values)


def fetch(suno, tmp_path, sleeps=None, api_key=None, count=None, **overrides):
    return fetch_track(
        settings_for(suno, **overrides),
        api_key,
        prompt="rainy lofi",
        title="Amber Rain",
        workdir=tmp_path,
        sleep=sleeps if sleeps is not None else Sleeps(),
        count_generation=count,
    )


def journal(tmp_path) -> dict:
    return json.loads((tmp_path / "suno.json").read_text())


def posts(suno) -> list:
    return [r for r in suno.requests if r[0] == "POST"]


def test_happy_path_downloads_the_complete_clip_from_the_cdn_without_credentials(tmp_path):
    with FakeSuno(AUDIO) as suno:
        path, facts = fetch(suno, tmp_path)
    assert path.read_bytes() == AUDIO
    assert facts["clip_id"] == "clip-1a" and facts["title"] == "Rain on Glass"
    assert facts["generations"] == 1
    _, route, body, headers = posts(suno)[0]
    assert route == "/api/generate"
    assert body == {
        "prompt": "rainy lofi",
        "make_instrumental": True,
        "model": "chirp-v3-5",
        "wait_audio": False,
    }
    # What the server read: an instrumental, made with the model named, not its default.
    assert suno.generations == [
        {"make_instrumental": True, "model": "chirp-v3-5", "model_sent": True, "ignored": []}
    ]
    assert facts["model"] == "chirp-v3-5"
    assert "Authorization" not in headers  # the server has no API key of its own
    assert [path for path, _ in suno.cdn_requests] == ["/clip-1a.mp3"]
    assert suno.submitted == 1


def test_a_proxy_key_goes_to_the_server_and_never_to_the_cdn(tmp_path):
    with FakeSuno(AUDIO, proxy_key="k-123") as suno:
        fetch(suno, tmp_path, api_key="k-123")
    assert all(headers["Authorization"] == "Bearer k-123" for *_, headers in suno.requests)
    for _, headers in suno.cdn_requests:
        assert "Authorization" not in headers and "Cookie" not in headers


def test_custom_mode_sends_the_prompt_as_style_tags(tmp_path):
    with FakeSuno(AUDIO) as suno:
        fetch(suno, tmp_path, custom=True, model="chirp-v4")
    route, body = posts(suno)[0][1], posts(suno)[0][2]
    assert route == "/api/custom_generate"
    assert body["tags"] == "rainy lofi" and body["title"] == "Amber Rain"
    assert body["model"] == "chirp-v4"


def test_a_misnamed_instrumental_flag_makes_vocals_as_the_server_would(tmp_path, monkeypatch):
    """gcui's routes read `make_instrumental` and ignore other fields: a body that calls it
    `instrumental` gets a song with vocals. The fake does the same, so the slip shows."""
    from autoretto.pipeline.suno import SunoClient

    sent = SunoClient._send_once

    def renamed(self, method, url, **options):
        if "make_instrumental" in (options.get("json") or {}):
            body = dict(options["json"])
            body["instrumental"] = body.pop("make_instrumental")
            options = {**options, "json": body}
        return sent(self, method, url, **options)

    (tmp_path / "wrong").mkdir()
    (tmp_path / "right").mkdir()
    with FakeSuno(AUDIO) as suno:
        monkeypatch.setattr(SunoClient, "_send_once", renamed)
        fetch(suno, tmp_path / "wrong")
        monkeypatch.setattr(SunoClient, "_send_once", sent)
        fetch(suno, tmp_path / "right")
    wrong, right = suno.generations
    assert wrong["make_instrumental"] is False and wrong["ignored"] == ["instrumental"]
    assert right["make_instrumental"] is True and right["ignored"] == []
    lyrics = {clip["id"]: clip["lyric"] for clip in suno.feed}
    assert lyrics["clip-1a"] and not lyrics["clip-2a"]  # the first sings, the second does not


def test_a_streaming_clip_is_waited_for_and_its_live_stream_never_downloaded(tmp_path):
    sleeps = Sleeps()
    with FakeSuno(AUDIO) as suno:
        suno.pending_polls = 4  # submitted, queued, streaming, streaming, complete
        path, _ = fetch(suno, tmp_path, sleeps)
    assert path.read_bytes() == AUDIO  # the whole mp3, not the first third a stream has
    assert sleeps == [2.0, 3.0, 4.5, 6.75]
    assert [path for path, _ in suno.cdn_requests] == ["/clip-1a.mp3"]
    assert suno.submitted == 1


def test_a_slow_submit_is_not_sent_twice_its_clips_are_found_among_the_recent_ones(tmp_path):
    # The server answers only after solving the captcha; the client stops waiting first.
    with FakeSuno(AUDIO) as suno:
        suno.submit_delay = 1.0
        path, facts = fetch(
            suno, tmp_path, time.sleep, submit_timeout=0.2, poll_interval=0.2, max_wait=10
        )
        assert path.read_bytes() == AUDIO
        assert suno.submitted == 1 and len(posts(suno)) == 1
        assert facts["clip_ids"] == ["clip-1a", "clip-1b"]
        # a resumed make of the same episode downloads again without a second generation
        (tmp_path / "suno.mp3").unlink()
        fetch(suno, tmp_path, submit_timeout=0.2)
    assert suno.submitted == 1 and len(posts(suno)) == 1


def test_a_lost_submit_still_being_solved_is_looked_for_again_by_the_next_run(tmp_path):
    with FakeSuno(AUDIO) as suno:
        suno.submit_delay = 1.5
        with pytest.raises(ProviderUnavailable, match="looks for them again before submitting"):
            fetch(suno, tmp_path, time.sleep, submit_timeout=0.2, poll_interval=0.1, max_wait=0.3)
        assert journal(tmp_path)["submitting"] is not None
        deadline = time.monotonic() + 10
        while not suno.feed and time.monotonic() < deadline:
            time.sleep(0.05)
        _, facts = fetch(suno, tmp_path)
    assert suno.submitted == 1 and len(posts(suno)) == 1
    assert facts["clip_ids"] == ["clip-1a", "clip-1b"]


def test_a_lost_submit_without_clips_is_given_up_after_a_quarter_hour(tmp_path, monkeypatch):
    with FakeSuno(AUDIO) as suno:
        # The answer to the generate call is lost (a proxy's 502) and nothing shows up.
        suno.lose_next_submit = True
        with pytest.raises(ProviderUnavailable, match="answer to the generation was lost"):
            fetch(suno, tmp_path, poll_interval=5.0, max_wait=60)
        assert len(posts(suno)) == 1
        # The next run, ten minutes on: it may still come, so nothing is submitted.
        monkeypatch.setenv("AUTORETTO_NOW", "2026-11-29T12:10:00Z")
        with pytest.raises(ProviderUnavailable, match="answer to the generation was lost"):
            fetch(suno, tmp_path, poll_interval=5.0, max_wait=60)
        assert len(posts(suno)) == 1
        # Half an hour on, no clip of it: it made nothing, and one new generation is sent.
        monkeypatch.setenv("AUTORETTO_NOW", "2026-11-29T12:30:00Z")
        _, facts = fetch(suno, tmp_path)
    assert len(posts(suno)) == 2 and suno.submitted == 1
    outcomes = [g.get("outcome") for g in journal(tmp_path)["generations"]]
    assert outcomes == ["lost", None] and facts["generations"] == 2


def test_a_failed_generation_is_given_up_and_a_new_one_submitted_by_the_next_run(tmp_path):
    with FakeSuno(AUDIO) as suno:
        suno.clip_status = "error"
        with pytest.raises(ProviderUnavailable, match=r"moderation\); a new generation is sub"):
            fetch(suno, tmp_path)
        assert suno.submitted == 1  # never a second paid generation in the same run
        first = journal(tmp_path)["generations"][0]
        assert first["outcome"] == "failed" and "moderation" in first["reason"]
        suno.clip_status = "complete"
        _, facts = fetch(suno, tmp_path)
    assert suno.submitted == 2 and facts["clip_ids"] == ["clip-2a", "clip-2b"]


def test_after_max_generations_a_person_decides(tmp_path):
    with FakeSuno(AUDIO) as suno:
        suno.clip_status = "error"
        for _ in range(2):
            with pytest.raises(ProviderUnavailable):
                fetch(suno, tmp_path, max_generations=2)
        with pytest.raises(ProviderRefused, match=r"in 2 generations .*episode discard"):
            fetch(suno, tmp_path, max_generations=2)
    assert suno.submitted == 2


def test_a_hung_generation_is_given_up_after_its_deadline(tmp_path):
    sleeps = Sleeps()
    with FakeSuno(AUDIO) as suno:
        suno.pending_polls = 10_000
        with pytest.raises(ProviderUnavailable, match="still queued 20 s after its submit"):
            fetch(suno, tmp_path, sleeps, hung_after=20, max_wait=600)
        assert sum(sleeps) == pytest.approx(20.0)  # not the run's whole max_wait
        assert journal(tmp_path)["generations"][0]["outcome"] == "hung"
        suno.pending_polls = 0
        _, facts = fetch(suno, tmp_path, hung_after=20)
    assert suno.submitted == 2 and facts["clip_id"] == "clip-2a"


def test_an_unfinished_generation_is_polled_again_by_the_next_run(tmp_path):
    sleeps = Sleeps()
    with FakeSuno(AUDIO) as suno:
        suno.pending_polls = 10_000
        with pytest.raises(ProviderUnavailable, match="did not finish the track within 30 s"):
            fetch(suno, tmp_path, sleeps)
        assert sum(sleeps) == pytest.approx(30.0)
        suno.pending_polls = 0
        _, facts = fetch(suno, tmp_path)
    assert suno.submitted == 1 and facts["clip_ids"] == ["clip-1a", "clip-1b"]


def test_an_interrupted_make_of_an_older_version_polls_its_clips(tmp_path):
    with FakeSuno(AUDIO) as suno:
        fetch(suno, tmp_path)
        (tmp_path / "suno.json").write_text(json.dumps({"ids": ["clip-1a", "clip-1b"]}))
        fetch(suno, tmp_path)
    assert suno.submitted == 1


def test_the_daily_cap_is_counted_before_the_submit(tmp_path):
    counted = []

    def count(provider, cap):
        counted.append((provider, cap))
        return len(counted) <= 1

    first, second = tmp_path / "one", tmp_path / "two"
    first.mkdir()
    second.mkdir()
    with FakeSuno(AUDIO) as suno:
        fetch(suno, first, count=count, daily_generations=1)
        with pytest.raises(ProviderUnavailable, match="day's 1 Suno generations are used"):
            fetch(suno, second, count=count, daily_generations=1)
    assert counted == [("suno", 1), ("suno", 1)] and suno.submitted == 1
    assert len(posts(suno)) == 1


def test_no_credits_left_is_said_before_anything_is_paid(tmp_path):
    with FakeSuno(AUDIO) as suno:
        suno.credits_left = 5
        with pytest.raises(ProviderUnavailable, match="5 credits left and a generation costs 10"):
            fetch(suno, tmp_path)
    assert posts(suno) == []


def test_the_credits_left_come_from_get_limit():
    with FakeSuno(AUDIO) as suno:
        answer = credits_left(settings_for(suno), None)
    assert answer["credits_left"] == 470 and answer["monthly_limit"] == 500


def test_server_errors_on_a_poll_are_retried_then_succeed(tmp_path):
    sleeps = Sleeps()
    with FakeSuno(AUDIO) as suno:
        suno.failures = [503, 500]
        path, _ = fetch(suno, tmp_path, sleeps)
    assert path.read_bytes() == AUDIO
    assert sleeps[:2] == [1.0, 2.0]  # exponential backoff between the tries
    assert suno.submitted == 1


def test_server_errors_that_do_not_pass_become_unavailable(tmp_path):
    with FakeSuno(AUDIO) as suno:
        suno.failures = [502] * 3
        with pytest.raises(ProviderUnavailable, match=r"gave up after 3 tries\): HTTP 502"):
            fetch(suno, tmp_path)
    assert posts(suno) == []


@pytest.mark.parametrize(
    ("knob", "words"),
    [
        ({"cookie_ok": False}, "uses the SUNO_COOKIE it was started with"),
        ({"upstream_status": 401}, "has no API key of its own"),
        ({"refuse_submit": 402}, "no credits left"),
    ],
)
def test_refusals_stop_at_once_in_plain_words(tmp_path, knob, words):
    with FakeSuno(AUDIO) as suno:
        for name, value in knob.items():
            setattr(suno, name, value)
        with pytest.raises(ProviderRefused, match=words) as caught:
            fetch(suno, tmp_path, api_key="sekrit-key")
    assert "sekrit-key" not in str(caught.value)
    assert suno.submitted == 0


def test_a_refused_generate_call_leaves_no_submit_to_look_for(tmp_path):
    with FakeSuno(AUDIO) as suno:
        suno.refuse_submit = 402
        with pytest.raises(ProviderRefused, match="no credits left"):
            fetch(suno, tmp_path)
        assert len(posts(suno)) == 1
    assert journal(tmp_path)["submitting"] is None


def test_malformed_json_is_retried_then_reported(tmp_path):
    with FakeSuno(AUDIO) as suno:
        suno.malformed = True
        with pytest.raises(ProviderUnavailable, match="not JSON"):
            fetch(suno, tmp_path)
        assert len(suno.requests) == 3


def test_no_server_is_a_passing_failure(tmp_path):
    settings = SunoSettings(base_url="http://127.0.0.1:9", attempts=2, retry_wait=0)
    with pytest.raises(ProviderUnavailable, match="cannot connect"):
        fetch_track(settings, None, prompt="p", title="t", workdir=tmp_path, sleep=Sleeps())


def test_missing_base_url_is_a_refusal(tmp_path):
    with pytest.raises(ProviderRefused, match=r"\[providers.suno\] base_url"):
        fetch_track(SunoSettings(), None, prompt="p", title="t", workdir=tmp_path)
