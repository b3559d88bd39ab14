"""The Gemini client against a local fake generateContent server."""

import io

import pytest
from PIL import Image

from autoretto.pipeline.copy import COPY_SCHEMA
from autoretto.pipeline.errors import ProviderRefused, ProviderUnavailable
from autoretto.pipeline.gemini import GeminiClient
from autoretto.pipeline.settings import GeminiSettings
from tests.fakes.gemini_server import FakeGemini


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


def test_text_with_a_schema(tmp_path):
    with FakeGemini() as fake:
        answer = client_for(fake, text_model="gemini-test").generate_json("hello", COPY_SCHEMA)
    assert answer["title"] == "Rain on the Window"
    path, body, headers = fake.requests[0]
    assert path == "/v1beta/models/gemini-test:generateContent"
    assert headers["x-goog-api-key"] == "test-key"
    assert "key=" not in path
    config = body["generationConfig"]
    assert config["responseMimeType"] == "application/json"
    assert config["responseSchema"]["required"] == ["title", "description", "tags", "short_text"]


def test_image_comes_back_as_inline_data():
    with FakeGemini(image=png_bytes()) as fake:
        data, mime = client_for(fake).generate_image("a rainy street", aspect_ratio="16:9")
    assert Image.open(io.BytesIO(data)).size == (64, 36) and mime == "image/png"
    config = fake.requests[0][1]["generationConfig"]
    assert config["responseModalities"] == ["IMAGE"]
    assert config["imageConfig"] == {"aspectRatio": "16:9"}


def test_overload_then_success_backs_off():
    sleeps = Sleeps()
    with FakeGemini() as fake:
        fake.failures = [503, 429]
        answer = client_for(fake, sleeps=sleeps).generate_json("hello", COPY_SCHEMA)
    assert answer["tags"] == ["lofi", "chill", "study"]
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


def test_a_blocked_prompt_is_a_refusal():
    with FakeGemini() as fake:
        fake.blocked = True
        with pytest.raises(ProviderRefused, match="declined the prompt"):
            client_for(fake).generate_json("hello", COPY_SCHEMA)


@pytest.mark.parametrize("flag", ["malformed_text", "malformed_body"])
def test_malformed_answers_are_retried_then_reported(flag):
    sleeps = Sleeps()
    with FakeGemini() as fake:
        setattr(fake, flag, True)
        with pytest.raises(ProviderUnavailable, match="gave up after 3 tries"):
            client_for(fake, sleeps=sleeps).generate_json("hello", COPY_SCHEMA)
        assert len(fake.requests) == 3
    assert len(sleeps) == 2


def test_an_answer_missing_a_required_field_is_retried():
    with FakeGemini() as fake:
        fake.text_answer = {"title": "x"}
        with pytest.raises(ProviderUnavailable, match="lacked description"):
            client_for(fake).generate_json("hello", COPY_SCHEMA)


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
