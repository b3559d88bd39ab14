"""The AI-content disclosure each platform takes, sent when the episode is AI-made (issue 29):
X's `made_with_ai` and Pinterest's `ai_disclosures` (API 5.28), as YouTube's synthetic-media
flag and TikTok's `is_aigc` are. Each fake checks the field against its platform's
description, so a field the description does not have would be refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from autoretto.platforms import REGISTRY
from autoretto.platforms.x import XPlatform
from tests.fakes import pinterest_server, x_server


@pytest.mark.parametrize("ai_generated", [True, False], ids=["ai-made", "not-ai-made"])
def test_x_says_made_with_ai_when_the_episode_is(
    home: Path, clip: Path, monkeypatch: pytest.MonkeyPatch, ai_generated: bool
) -> None:
    from tests.platforms.test_x import connected

    monkeypatch.setitem(REGISTRY, "x", XPlatform)
    fake = x_server.start()
    try:
        bench = connected(home, clip, fake)
        episode = bench.add_episode(clip, title="Made by a machine", ai_generated=int(ai_generated))
        result = bench.send(episode_id=episode)
        assert result.outcome == "posted", result.reason
        (post,) = fake.posts
        assert post["made_with_ai"] is ai_generated
    finally:
        fake.close()


def test_xs_description_has_made_with_ai() -> None:
    from tests.fakes.x_contract import body_problem

    post = {"text": "hi", "media": {"media_ids": ["1"]}}
    assert body_problem("create", {**post, "made_with_ai": True}) is None
    assert "made_with_ai" in body_problem("create", {**post, "made_with_ai": "yes"})
    assert "made_by_ai" in body_problem("create", {**post, "made_by_ai": True})


@pytest.mark.parametrize("ai_generated", [True, False], ids=["ai-made", "not-ai-made"])
def test_pinterest_declares_ai_modified_when_the_episode_is(
    home: Path, clip: Path, monkeypatch: pytest.MonkeyPatch, ai_generated: bool
) -> None:
    from tests.platforms.test_pinterest import ChosenPinterest, connected

    monkeypatch.setitem(REGISTRY, "pinterest", ChosenPinterest)
    fake = pinterest_server.start()
    try:
        bench = connected(home, clip, fake)
        episode = bench.add_episode(clip, title="Made by a machine", ai_generated=int(ai_generated))
        result = bench.send(episode_id=episode)
        assert result.outcome == "posted", result.reason
        (pin,) = fake.pins.values()
        expected = {"values": ["AI_MODIFIED"]} if ai_generated else None
        assert pin.get("ai_disclosures") == expected
    finally:
        fake.close()


def test_pinterest_5_28_has_ai_disclosures_on_create_pin() -> None:
    from tests.fakes.pinterest_contract import PIN_CREATE, body_problem

    pin = {"board_id": "1", "media_source": {"source_type": "video_id", "media_id": "2"}}
    assert body_problem(PIN_CREATE, {**pin, "ai_disclosures": {"values": ["AI_MODIFIED"]}}) is None
    refused = body_problem(PIN_CREATE, {**pin, "ai_disclosures": {"values": ["AI_GENERATED"]}})
    assert refused and "AI_GENERATED" in refused
    assert body_problem(PIN_CREATE, {**pin, "ai_disclosure": True})  # not its name
