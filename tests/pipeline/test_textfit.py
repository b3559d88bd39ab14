from hypothesis import given, settings
from hypothesis import strategies as st

from autoretto.pipeline import textfit
from autoretto.pipeline.textfit import build_texts, check_texts, x_weighted
from autoretto.platforms.youtube import copy_tags as fit_tags
from autoretto.platforms.youtube import tags_length as youtube_tags_length

PLATFORMS = tuple(textfit.LIMITS)


def test_x_weighting_counts_urls_and_wide_characters():
    assert x_weighted("abc") == 3
    assert x_weighted("see https://example.com/a/very/long/path") == 4 + 23
    assert x_weighted("音楽") == 4
    assert x_weighted("🎵") == 2


def test_youtube_tags_count_commas_and_quotes():
    assert youtube_tags_length(["lofi", "rainy night"]) == 4 + 11 + 2 + 1
    tags = fit_tags([f"tag number {i}" for i in range(100)] + ["a<b>", "lofi", "LOFI"])
    assert youtube_tags_length(tags) <= 500
    assert all("<" not in tag and ">" not in tag for tag in tags)


def test_long_texts_are_cut_at_a_word_and_keep_the_disclosure():
    long = "word " * 3000
    texts = build_texts(
        platforms=PLATFORMS,
        title="A <title> " * 30,
        description=long,
        short=long,
        tags=["lofi"],
        disclosure="AI-generated content: music.",
        ai_generated=True,
    )
    assert check_texts(texts, PLATFORMS) == []
    assert texts["x"]["text"].endswith("… AI-generated content: music.")
    assert "<" not in texts["youtube"]["title"]
    assert texts["youtube"]["contains_synthetic_media"] is True
    assert texts["tiktok"]["is_aigc"] is True
    assert len(texts["youtube"]["description"].encode()) <= 5000


def test_check_texts_reports_an_overlong_field():
    problems = check_texts({"x": {"text": "a" * 281}}, ("x",))
    assert problems == ["x text is 281 weighted characters (limit 280)"]
    assert check_texts({}, ("bluesky",)) == ["bluesky: no text was made"]


@settings(max_examples=60, deadline=None)
@given(
    title=st.text(min_size=1, max_size=400),
    body=st.text(min_size=1, max_size=6000),
    tags=st.lists(st.text(max_size=60), max_size=40),
    ai=st.booleans(),
)
def test_fitted_texts_are_always_within_every_limit(title, body, tags, ai):
    title = title if title.strip() else "t"
    body = body if body.strip() else "b"
    texts = build_texts(
        platforms=PLATFORMS,
        title=title,
        description=body,
        short=body,
        tags=tags,
        disclosure="AI-generated content." if ai else "",
        ai_generated=ai,
    )
    assert [p for p in check_texts(texts, PLATFORMS) if "is empty" not in p] == []
