"""The Suno client against a local fake suno-api server."""

import pytest

from autoretto.pipeline.errors import ProviderRefused, ProviderUnavailable
from autoretto.pipeline.settings import SunoSettings
from autoretto.pipeline.suno import fetch_track
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


def fetch(suno, tmp_path, sleeps=None, api_key=None, **overrides):
    return fetch_track(
        settings_for(suno, **overrides),
        api_key,
        prompt="rainy lofi",
        title="Amber Rain",
        workdir=tmp_path,
        sleep=sleeps if sleeps is not None else Sleeps(),
    )


def test_happy_path_downloads_the_first_complete_clip(tmp_path):
    with FakeSuno(AUDIO, api_key="k-123") as suno:
        path, facts = fetch(suno, tmp_path, api_key="k-123")
    assert path.read_bytes() == AUDIO
    assert facts["clip_id"] == "clip-1a" and facts["title"] == "Rain on Glass"
    method, route, body, headers = suno.requests[0]
    assert (method, route) == ("POST", "/api/generate")
    assert body == {"prompt": "rainy lofi", "make_instrumental": True, "wait_audio": False}
    assert headers["Authorization"] == "Bearer k-123"
    download = next(r for r in suno.requests if r[1].startswith("/audio/"))
    assert download[3]["Authorization"] == "Bearer k-123"  # same host: the key goes along


def test_custom_mode_sends_the_prompt_as_style_tags(tmp_path):
    with FakeSuno(AUDIO) as suno:
        fetch(suno, tmp_path, custom=True, model="chirp-v4")
    route, body = suno.requests[0][1], suno.requests[0][2]
    assert route == "/api/custom_generate"
    assert body["tags"] == "rainy lofi" and body["title"] == "Amber Rain"
    assert body["model"] == "chirp-v4"


def test_slow_generation_is_polled_with_growing_waits(tmp_path):
    sleeps = Sleeps()
    with FakeSuno(AUDIO) as suno:
        suno.pending_polls = 4
        path, _ = fetch(suno, tmp_path, sleeps)
    assert path.exists()
    assert sleeps == [2.0, 3.0, 4.5, 6.75]
    assert suno.submitted == 1


def test_generation_that_never_finishes_gives_up_within_max_wait(tmp_path):
    sleeps = Sleeps()
    with FakeSuno(AUDIO) as suno:
        suno.pending_polls = 10_000
        with pytest.raises(ProviderUnavailable, match="did not finish the track within 30 s"):
            fetch(suno, tmp_path, sleeps)
        assert sum(sleeps) == pytest.approx(30.0)
        # a later run polls the same clips instead of paying for a new generation
        suno.pending_polls = 0
        _, facts = fetch(suno, tmp_path)
    assert suno.submitted == 1 and facts["clip_ids"] == ["clip-1a", "clip-1b"]


def test_server_errors_are_retried_then_succeed(tmp_path):
    sleeps = Sleeps()
    with FakeSuno(AUDIO) as suno:
        suno.failures = [503, 500]
        path, _ = fetch(suno, tmp_path, sleeps)
    assert path.read_bytes() == AUDIO
    assert sleeps[:2] == [1.0, 2.0]  # exponential backoff between the tries


def test_server_errors_that_do_not_pass_become_unavailable(tmp_path):
    with FakeSuno(AUDIO) as suno:
        suno.failures = [502] * 3
        with pytest.raises(ProviderUnavailable, match=r"gave up after 3 tries\): HTTP 502"):
            fetch(suno, tmp_path)


@pytest.mark.parametrize(
    ("status", "words"),
    [(401, "refused the API key"), (402, "no credits left"), (403, "refused the request")],
)
def test_refusals_stop_at_once_in_plain_words(tmp_path, status, words):
    with FakeSuno(AUDIO) as suno:
        suno.refuse = status
        with pytest.raises(ProviderRefused, match=words) as caught:
            fetch(suno, tmp_path, api_key="sekrit-key")
        assert len(suno.requests) == 1  # never retried
    assert "sekrit-key" not in str(caught.value)


def test_malformed_json_is_retried_then_reported(tmp_path):
    with FakeSuno(AUDIO) as suno:
        suno.malformed = True
        with pytest.raises(ProviderUnavailable, match="not JSON"):
            fetch(suno, tmp_path)
        assert len(suno.requests) == 3


def test_failed_generation_says_why(tmp_path):
    with FakeSuno(AUDIO) as suno:
        suno.clip_status = "error"
        with pytest.raises(ProviderUnavailable, match="could not generate the track: moderation"):
            fetch(suno, tmp_path)


def test_no_server_is_a_passing_failure(tmp_path):
    settings = SunoSettings(base_url="http://127.0.0.1:9", attempts=2, retry_wait=0)
    with pytest.raises(ProviderUnavailable, match="cannot connect"):
        fetch_track(settings, None, prompt="p", title="t", workdir=tmp_path, sleep=Sleeps())


def test_missing_base_url_is_a_refusal(tmp_path):
    with pytest.raises(ProviderRefused, match=r"\[providers.suno\] base_url"):
        fetch_track(SunoSettings(), None, prompt="p", title="t", workdir=tmp_path)
