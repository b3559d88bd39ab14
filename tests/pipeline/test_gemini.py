"""The Gemini client against a local fake generateContent server checked with google-genai."""

import io

import pytest
from PIL import Image

from autoretto.pipeline.copy import COPY_SCHEMA
from autoretto.pipeline.errors import PromptDeclined, ProviderRefused, ProviderUnavailable
from autoretto.pipeline.gemini import GeminiClient
from autoretto.pipeline.settings import GeminiSettings, model_ends
from tests.fakes.gemini_server import FakeGemini, check_request


class Sleeps(list):
    def __call__(self, seconds: float) -> None:
        self.append(seconds)


def png_bytes(size=(64, 36), colour=(200, 80, 40)) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", size, colour).save(buffer, format="PNG")
    return buffer.getvalue()


def client_for(fake, key="test-key", sleeps=None, **overrides):
    settings = GeminiSettings(base_url=fake.url, timeout=5, attempts=3, retry_wait=1.0, **overrides)
    return GeminiClient(settings, key, sleep=sleeps if sleeps is not None else Sleeps())


def test_text_with_a_schema_is_a_request_the_sdk_would_build(tmp_path):
    with FakeGemini() as fake:
        answer = client_for(fake, text_model="gemini-test").generate_json("hello", COPY_SCHEMA)
    assert answer["title"] == "Rain on the Window"
    path, body, headers = fake.requests[0]
    assert path == "/v1beta/models/gemini-test:generateContent"
    assert headers["x-goog-api-key"] == "test-key"
    assert "key=" not in path
    assert check_request("gemini-test", body) is None
    config = body["generationConfig"]
    assert config["responseMimeType"] == "application/json"
    assert config["responseSchema"]["required"] == ["title", "description", "tags", "short_text"]


def test_the_fake_refuses_what_the_sdk_would_not_send():
    body = {"contents": [{"role": "user", "parts": [{"text": "x"}]}]}
    assert "Unknown name" in check_request("m", {**body, "generation_config": {}})
    misplaced = {**body, "generationConfig": {"systemInstruction": {"parts": [{"text": "x"}]}}}
    assert "systemInstruction" in check_request("m", misplaced)
    typo = {**body, "generationConfig": {"imageConfig": {"aspectRatios": "16:9"}}}
    assert "aspectRatios" in check_request("m", typo)


def test_image_comes_back_as_inline_data():
    with FakeGemini(image=png_bytes()) as fake:
        data, mime = client_for(fake).generate_image("a rainy street", aspect_ratio="16:9")
    assert Image.open(io.BytesIO(data)).size == (64, 36) and mime == "image/png"
    body = fake.requests[0][1]
    assert fake.requests[0][0] == "/v1beta/models/gemini-3.1-flash-image:generateContent"
    assert body["generationConfig"]["responseModalities"] == ["IMAGE"]
    assert body["generationConfig"]["imageConfig"] == {"aspectRatio": "16:9"}
    assert check_request("gemini-3.1-flash-image", body) is None


def test_the_default_models_are_current_and_have_no_announced_end():
    settings = GeminiSettings()
    assert (settings.text_model, settings.image_model) == (
        "gemini-3.8-flash",
        "gemini-3.1-flash-image",
    )
    assert [entry["state"] for entry in model_ends(settings, "2026-12-01")] == ["ok", "ok"]


def test_a_model_end_is_announced_a_month_ahead_and_named_when_past():
    old = GeminiSettings(text_model="gemini-2.5-flash", image_model="gemini-2.5-flash-image")
    ends = {e["setting"]: e for e in model_ends(old, "2026-09-10")}
    assert ends["text_model"]["state"] == "ended" and ends["text_model"]["ends"] == "2026-06-17"
    assert "[providers.gemini] text_model" in ends["text_model"]["message"]
    assert ends["image_model"]["state"] == "ending"
    assert "in 22 days" in ends["image_model"]["message"]
    declared = GeminiSettings(text_model="my-tuned-model", text_model_ends="2026-12-20")
    assert model_ends(declared, "2026-12-01")[0]["state"] == "ending"
    assert model_ends(declared, "2026-11-01")[0]["state"] == "ok"


def test_an_unknown_model_is_a_refusal_that_names_the_setting():
    with FakeGemini(image=png_bytes()) as fake:
        with pytest.raises(ProviderRefused, match=r"\[providers.gemini\] image_model") as caught:
            client_for(fake, image_model="gemini-2.5-flash-image").generate_image("rain")
        assert len(fake.requests) == 1  # never retried: a person must change the setting
    assert '"gemini-2.5-flash-image"' in str(caught.value)
    assert not isinstance(caught.value, PromptDeclined)


def test_overload_then_success_backs_off():
    sleeps = Sleeps()
    with FakeGemini() as fake:
        fake.failures = [503, 500]
        answer = client_for(fake, sleeps=sleeps).generate_json("hello", COPY_SCHEMA)
    assert answer["tags"] == ["lofi", "chill", "study"]
    assert sleeps == [1.0, 2.0]


def test_a_per_minute_quota_waits_as_long_as_retry_info_says():
    sleeps = Sleeps()
    with FakeGemini() as fake:
        fake.quota = ["38s"]
        answer = client_for(fake, sleeps=sleeps).generate_json("hello", COPY_SCHEMA)
    assert answer["title"] and sleeps == [38.0]


def test_a_per_minute_quota_that_stays_says_so():
    with FakeGemini() as fake:
        fake.quota = ["12s"] * 3
        with pytest.raises(ProviderUnavailable, match=r"per-minute quota for gemini-3\.8-flash"):
            client_for(fake).generate_json("hello", COPY_SCHEMA)


def test_a_daily_quota_used_up_is_not_tried_again_today():
    with FakeGemini() as fake:
        fake.quota = ["day"]
        with pytest.raises(
            ProviderUnavailable, match=r"daily quota for gemini-3\.8-flash is used up"
        ):
            client_for(fake).generate_json("hello", COPY_SCHEMA)
        assert len(fake.requests) == 1


def test_a_busy_429_without_details_is_backed_off_and_called_busy():
    sleeps = Sleeps()
    with FakeGemini() as fake:
        fake.quota = ["busy"] * 3
        with pytest.raises(ProviderUnavailable, match=r"gemini is busy \(HTTP 429\)"):
            client_for(fake, sleeps=sleeps).generate_json("hello", COPY_SCHEMA)
    assert sleeps == [1.0, 2.0]


def test_a_bad_key_is_a_refusal_and_is_not_echoed():
    with FakeGemini() as fake:
        with pytest.raises(ProviderRefused, match="refused the API key") as caught:
            client_for(fake, key="wrong-sekrit").generate_json("hello", COPY_SCHEMA)
        assert len(fake.requests) == 1
    assert "wrong-sekrit" not in str(caught.value)


def test_no_key_at_all_says_where_to_put_one():
    with pytest.raises(ProviderRefused, match="gemini_api_key or set GEMINI_API_KEY"):
        GeminiClient(GeminiSettings(), None)


def test_a_blocked_prompt_is_declined():
    with FakeGemini() as fake:
        fake.blocked = True
        with pytest.raises(PromptDeclined, match="declined the prompt") as caught:
            client_for(fake).generate_json("hello", COPY_SCHEMA)
    assert caught.value.reason == "SAFETY"


@pytest.mark.parametrize("reason", ["NO_IMAGE", "IMAGE_OTHER", "IMAGE_RECITATION", "OTHER"])
def test_an_image_answer_cut_short_is_declined_at_once(reason):
    with FakeGemini(image=png_bytes()) as fake:
        fake.finishes = [reason]
        with pytest.raises(PromptDeclined, match=f"stopped short \\({reason}\\)") as caught:
            client_for(fake).generate_image("a rainy street")
        assert len(fake.requests) == 1  # the same words are not asked again
    assert caught.value.reason == reason


def test_text_where_an_image_was_asked_for_is_declined():
    with FakeGemini(image=png_bytes()) as fake:
        fake.text_only_image = True
        with pytest.raises(PromptDeclined, match="answered with text, not an image"):
            client_for(fake).generate_image("a rainy street")
        assert len(fake.requests) == 1


@pytest.mark.parametrize("reason", ["SAFETY", "MAX_TOKENS"])
def test_text_cut_short_even_with_partial_text_is_declined(reason):
    with FakeGemini() as fake:
        fake.finishes = [reason]
        with pytest.raises(PromptDeclined, match=reason):
            client_for(fake).generate_json("hello", COPY_SCHEMA)
        assert len(fake.requests) == 1


@pytest.mark.parametrize(
    ("flag", "value", "words"),
    [("malformed_text", True, "not the JSON asked for"), ("text_answer", {"title": "x"}, "lacked")],
)
def test_an_answer_that_is_not_the_json_asked_for_is_declined(flag, value, words):
    with FakeGemini() as fake:
        setattr(fake, flag, value)
        with pytest.raises(PromptDeclined, match=words):
            client_for(fake).generate_json("hello", COPY_SCHEMA)
        assert len(fake.requests) == 1


def test_a_garbled_body_is_retried_then_reported():
    sleeps = Sleeps()
    with FakeGemini() as fake:
        fake.malformed_body = True
        with pytest.raises(ProviderUnavailable, match="gave up after 3 tries"):
            client_for(fake, sleeps=sleeps).generate_json("hello", COPY_SCHEMA)
        assert len(fake.requests) == 3
    assert len(sleeps) == 2


def test_a_slow_server_times_out_as_a_passing_failure():
    import socket
    import threading

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(5)  # accepts connections, never answers
    port = listener.getsockname()[1]
    try:
        settings = GeminiSettings(
            base_url=f"http://127.0.0.1:{port}/v1beta", timeout=0.2, attempts=2, retry_wait=0
        )
        with pytest.raises(ProviderUnavailable, match=r"no answer within 0\.2 s"):
            GeminiClient(settings, "k", sleep=Sleeps()).generate_json("hi", COPY_SCHEMA)
    finally:
        threading.Thread(target=listener.close).start()


def gemini_request(request_for, small_settings, fake, **pipeline):
    from autoretto.pipeline.settings import parse_providers

    providers = parse_providers({"gemini": {"base_url": fake.url, "retry_wait": 0}}, path="t.toml")
    return request_for(
        settings=small_settings(**pipeline),
        providers=providers,
        secrets=lambda name: "test-key" if name == "gemini_api_key" else None,
    )


def test_a_declined_artwork_prompt_is_rephrased_once_then_drawn_offline(
    request_for, small_settings
):
    from autoretto.pipeline import make_episode

    with FakeGemini(image=png_bytes((320, 180))) as fake:
        fake.finishes = ["IMAGE_SAFETY", "NO_IMAGE"]
        episode = make_episode(gemini_request(request_for, small_settings, fake, artwork="gemini"))
        prompts = [body["contents"][0]["parts"][0]["text"] for _, body, _ in fake.requests]
    assert episode.passed, episode.reason
    assert len(prompts) == 2 and "rainy night" in prompts[0] and "rainy night" not in prompts[1]
    assert episode.source["artwork"] == "procedural"
    assert episode.source["notes"] == [
        "artwork: gemini declined the prompt twice (IMAGE_SAFETY, NO_IMAGE); the procedural "
        "artwork was used for this episode"
    ]
    # the artwork is not AI-generated after all, and the texts do not say it is
    assert episode.ai_generated is False
    assert "Gemini" not in episode.texts["youtube"]["description"]


def test_a_declined_copy_prompt_is_answered_in_plainer_words(request_for, small_settings):
    from autoretto.pipeline import make_episode

    with FakeGemini() as fake:
        fake.finishes = ["SAFETY"]
        episode = make_episode(gemini_request(request_for, small_settings, fake, copy="gemini"))
    assert episode.passed, episode.reason
    assert len(fake.requests) == 2
    assert episode.title == "Rain on the Window" and episode.source["copy"].startswith("gemini:")
    assert episode.source["notes"] == [
        "copy: gemini declined the channel's prompt (SAFETY); plainer words were used"
    ]
