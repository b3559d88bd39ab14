"""`autoretto translate`: Gemini's translations fitted per platform, written next to the
video, stored; YouTube localizations set only where the creator allowed edits."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from autoretto.accounts import load_account, update_meta
from autoretto.ledger.store import open_database
from autoretto.pipeline.textfit import KNOWN_PLATFORMS, check_texts, utf8_bytes, x_weighted
from autoretto.platforms.youtube import SCOPE_EDIT, SCOPE_UPLOAD, project_of, quota_used
from autoretto.translate import parse_languages, translations_of
from tests.fakes.gemini_server import FakeGemini
from tests.fakes.youtube_server import (
    CLIENT_ID,
    FakeYouTube,
    Tls,
    connect_account,
    make_tls,
    tls_environment,
)
from tests.support import channel_toml, write_config

KEY = "test-gemini-key-4c1d"
NOW = "2026-11-29T18:00:00Z"
LONG = "Ein langsamer, warmer Loop für späte Nächte, Regen am Fenster. " * 110  # ~7 kB
ANSWERS = {
    "de": {
        "title": "Regen auf Glas",
        "description": LONG.strip() + "\n\n#lofi #regen",
        "short_text": "Regen auf Glas: ein warmer Loop für späte Nächte. " * 9,
        "tags": ["lofi", "regen", "lernmusik"],
        "source_language": "en",
    },
    "es": {
        "title": "Lluvia en el cristal",
        "description": "Un loop lento y cálido para noches largas.\n\n#lofi #lluvia",
        "short_text": "Lluvia en el cristal, un loop cálido. #lofi",
        "tags": ["lofi", "lluvia"],
        "source_language": "en",
    },
    "fr": {
        "title": "Pluie sur la vitre",
        "description": "Une boucle lente et chaude pour les nuits tardives.",
        "short_text": "Pluie sur la vitre. #lofi",
        "tags": ["lofi", "pluie"],
        "source_language": "en",
    },
}


@pytest.fixture
def gemini() -> FakeGemini:
    def answer(body: dict[str, Any]) -> dict[str, Any]:
        prompt = body["contents"][0]["parts"][0]["text"]
        return ANSWERS[re.search(r"Target language: (\S+) ", prompt).group(1)]

    with FakeGemini(api_key=KEY) as fake:
        fake.answer_for = answer
        yield fake


def gemini_table(gemini: FakeGemini) -> str:
    return f'\n[providers.gemini]\nbase_url = "{gemini.url}"\n'


def add_episode(cli, clip: Path) -> int:
    code, out, err = cli(
        "episode", "add", "lofi", str(clip), "--title", "Rain on Glass",
        "--description", "A slow, warm loop for late nights.", "--tags", "lofi,rain",
    )  # fmt: skip
    assert code == 0, err
    return int(out.split()[1])


def test_translations_fit_every_platform_and_sit_next_to_the_video(
    home, cli, clip, gemini, monkeypatch
):
    monkeypatch.setenv("GEMINI_API_KEY", KEY)
    write_config(home, channel_toml(), extra=gemini_table(gemini))
    cli("init")
    episode = add_episode(cli, clip)

    code, out, err = cli("translate", str(episode), "--to", "de, ES", "--json")
    assert code == 0, err
    result = json.loads(out)
    assert [made["language"] for made in result["languages"]] == ["de", "es"]
    assert KEY not in out + err

    video = Path(cli.json("episode", "show", str(episode))["videos"]["landscape"])
    db = open_database(home / "autoretto.db")
    stored = {item["language"]: item for item in translations_of(db, episode)}
    assert set(stored) == {"de", "es"}
    for language in ("de", "es"):
        sheet = video.parent / f"texts.{language}.json"
        written = json.loads(sheet.read_text())
        assert written["texts"] == stored[language]["texts"]
        assert set(written["texts"]) == set(KNOWN_PLATFORMS)
        assert check_texts(written["texts"], KNOWN_PLATFORMS) == []
        assert written["texts"]["youtube"]["title"] == ANSWERS[language]["title"]
        readable = (video.parent / f"texts.{language}.txt").read_text()
        assert "== YouTube ==" in readable and ANSWERS[language]["title"] in readable
    german = stored["de"]["texts"]
    assert stored["de"]["source_language"] == "en"
    # The long German copy was cut to fit, at a word, with an ellipsis.
    assert utf8_bytes(german["youtube"]["description"]) <= 5000
    assert german["youtube"]["description"].endswith("…")
    assert x_weighted(german["x"]["text"]) <= 280 and german["x"]["text"].endswith("…")
    assert german["youtube"]["tags"] == ["lofi", "regen", "lernmusik"]

    # One schema-constrained request per language, the key in its header only.
    assert len(gemini.requests) == 2
    path, body, headers = gemini.requests[0]
    assert path.endswith(":generateContent")
    assert body["generationConfig"]["responseMimeType"] == "application/json"
    assert {"title", "description", "source_language"} <= set(
        body["generationConfig"]["responseSchema"]["required"]
    )
    assert "Rain on Glass" in body["contents"][0]["parts"][0]["text"]
    assert headers["x-goog-api-key"] == KEY and KEY not in path

    assert result["youtube"]["video_id"] is None
    assert "not on YouTube" in result["youtube"]["reason"]


def test_offline_it_refuses_in_one_line_and_changes_nothing(home, cli, clip, gemini, monkeypatch):
    monkeypatch.delenv("GEMINI_API_KEY", raising=False)
    write_config(home, channel_toml(), extra=gemini_table(gemini))
    cli("init")
    episode = add_episode(cli, clip)

    code, out, err = cli("translate", str(episode), "--to", "de")
    assert code == 1 and out == ""
    assert err.count("\n") == 1
    assert err.startswith("autoretto: translating needs Gemini")
    assert "set GEMINI_API_KEY" in err
    assert gemini.requests == []
    assert translations_of(open_database(home / "autoretto.db"), episode) == []
    assert not list(home.glob("media/episodes/*/texts.*"))


def test_a_template_copy_channel_says_what_to_set(home, cli, clip, gemini, monkeypatch):
    monkeypatch.setenv("GEMINI_API_KEY", KEY)
    pipeline = '\n[channels.pipeline]\ncopy = "template"\n'
    write_config(home, channel_toml() + pipeline, extra=gemini_table(gemini))
    cli("init")
    episode = add_episode(cli, clip)

    code, _, err = cli("translate", str(episode), "--to", "de")
    assert code == 1
    assert 'copy = "template"' in err and 'set copy = "gemini"' in err
    assert "GEMINI_API_KEY" in err
    assert gemini.requests == []


def test_language_tags_are_checked():
    assert parse_languages("de, es,pt-br,zh-hans,de") == ["de", "es", "pt-BR", "zh-Hans"]
    from autoretto.errors import UsageError

    with pytest.raises(UsageError, match="not a language tag"):
        parse_languages("de,german!")
    with pytest.raises(UsageError, match="at least one language"):
        parse_languages(" , ")


# -- YouTube ----------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def tls(tmp_path_factory: pytest.TempPathFactory) -> Tls:
    return make_tls(tmp_path_factory.mktemp("tls"))


@pytest.fixture
def youtube(tls: Tls, monkeypatch: pytest.MonkeyPatch) -> FakeYouTube:
    tls_environment(monkeypatch, tls)
    monkeypatch.setenv("AUTORETTO_NOW", NOW)
    with FakeYouTube(tls) as fake:
        yield fake


class OnYouTube:
    """An episode published on the fake YouTube by a connected account."""

    def __init__(self, home: Path, cli, clip: Path, gemini, youtube, *, allow_edits: bool):
        youtube_table = (
            f'\n[platforms.youtube]\napi_base = "{youtube.url}"\n'
            f'token_uri = "{youtube.token_uri}"\n'
        )
        write_config(home, channel_toml(), extra=gemini_table(gemini) + youtube_table)
        cli("init")
        self.episode = add_episode(cli, clip)
        self.db = open_database(home / "autoretto.db")
        connect_account(self.db, home, youtube)
        if allow_edits:  # what `connect youtube --allow-edits` stores
            account = load_account(self.db, "youtube")
            update_meta(self.db, account, {"scopes": [SCOPE_UPLOAD, SCOPE_EDIT], "edits": True})
        self.video_id = youtube.add_video(tags=["lofi", "rain", "ar-marker"], title="Rain on Glass")
        snippet = youtube.videos[self.video_id]["snippet"]
        snippet.update(description="A slow, warm loop for late nights.", categoryId="10")
        self.db["posts"].insert(
            {
                "episode_id": self.episode,
                "channel": "lofi",
                "platform": "youtube",
                "state": "published",
                "url": f"https://www.youtube.com/watch?v={self.video_id}",
                "platform_post_id": self.video_id,
                "attempts": 1,
                "created_at": NOW,
                "updated_at": NOW,
                "published_at": NOW,
            }
        )
        youtube.requests.clear()

    def units(self) -> int:
        return quota_used(self.db, project_of(CLIENT_ID), "units")


def test_without_allow_edits_nothing_on_youtube_changes(
    home, cli, clip, gemini, youtube, monkeypatch
):
    monkeypatch.setenv("GEMINI_API_KEY", KEY)
    setup = OnYouTube(home, cli, clip, gemini, youtube, allow_edits=False)
    before = json.dumps(youtube.videos[setup.video_id], sort_keys=True)

    code, out, err = cli("translate", str(setup.episode), "--to", "de,es", "--json")
    assert code == 0, err
    result = json.loads(out)
    assert youtube.requests == []  # not even a read
    assert json.dumps(youtube.videos[setup.video_id], sort_keys=True) == before
    assert setup.units() == 0
    assert result["youtube"]["applied"] == [] and result["youtube"]["error"] is None
    assert "--allow-edits" in result["youtube"]["reason"]
    # The texts are made all the same, for posting by hand.
    assert [item["applied_at"] for item in translations_of(setup.db, setup.episode)] == [
        None,
        None,
    ]


def test_with_allow_edits_the_video_gets_its_localizations(
    home, cli, clip, gemini, youtube, monkeypatch
):
    monkeypatch.setenv("GEMINI_API_KEY", KEY)
    setup = OnYouTube(home, cli, clip, gemini, youtube, allow_edits=True)

    code, out, err = cli("translate", str(setup.episode), "--to", "de,es", "--json")
    assert code == 0, err
    result = json.loads(out)
    assert youtube.kinds() == ["videos", "videos.update"]  # read, then one update
    update = youtube.requests[1]
    assert update["query"]["part"] == "snippet,localizations"  # the default language was unset
    video = youtube.videos[setup.video_id]
    assert video["snippet"]["defaultLanguage"] == "en"
    assert video["snippet"]["title"] == "Rain on Glass"
    assert video["snippet"]["tags"] == ["lofi", "rain", "ar-marker"]  # kept as they were
    assert video["snippet"]["description"] == "A slow, warm loop for late nights."
    assert set(video["localizations"]) == {"de", "es"}
    assert video["localizations"]["de"]["title"] == "Regen auf Glas"
    assert utf8_bytes(video["localizations"]["de"]["description"]) <= 5000
    assert setup.units() == 1 + 50  # counted in the ledger
    assert result["youtube"]["applied"] == ["de", "es"] and result["youtube"]["changed"]
    assert all(item["applied_at"] == NOW for item in translations_of(setup.db, setup.episode))

    # Another language later: merged with what is there, the snippet left alone.
    youtube.requests.clear()
    code, _, err = cli("translate", str(setup.episode), "--to", "fr", "--json")
    assert code == 0, err
    assert youtube.kinds() == ["videos", "videos.update"]
    assert youtube.requests[1]["query"]["part"] == "localizations"
    assert set(youtube.videos[setup.video_id]["localizations"]) == {"de", "es", "fr"}
    assert setup.units() == 2 * (1 + 50)


def test_dry_run_sends_nothing_to_youtube(home, cli, clip, gemini, youtube, monkeypatch):
    monkeypatch.setenv("GEMINI_API_KEY", KEY)
    setup = OnYouTube(home, cli, clip, gemini, youtube, allow_edits=True)

    code, out, err = cli("translate", str(setup.episode), "--to", "de", "--dry-run")
    assert code == 0, err
    assert "youtube: dry run: nothing was sent to YouTube" in out
    assert youtube.requests == [] and setup.units() == 0
    assert "localizations" not in youtube.videos[setup.video_id]


def test_youtube_refusing_the_edit_leaves_the_account_connected(
    home, cli, clip, gemini, youtube, monkeypatch
):
    monkeypatch.setenv("GEMINI_API_KEY", KEY)
    setup = OnYouTube(home, cli, clip, gemini, youtube, allow_edits=True)
    youtube.script["videos.update"].append("no_scope")

    code, _, err = cli("translate", str(setup.episode), "--to", "de")
    assert code == 1
    assert "youtube: not changed - YouTube did not allow changing the video" in err
    assert "--allow-edits" in err
    assert load_account(setup.db, "youtube").state == "connected"  # uploads go on
    assert translations_of(setup.db, setup.episode)[0]["applied_at"] is None
