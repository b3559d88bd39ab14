from pathlib import Path

import pytest

from autoretto.errors import ConfigError, ConfigProblems
from autoretto.pipeline.settings import PipelineSettings, parse_pipeline, parse_providers


def parse(raw, home=Path("/srv/autoretto")):
    return parse_pipeline(raw, path="autoretto.toml", channel="lofi", home=home)


def test_defaults_match_the_documented_table():
    settings = parse(None)
    assert settings == PipelineSettings(folder=Path("/srv/autoretto/tracks"))
    assert (settings.audio, settings.artwork, settings.copy) == ("synth", "procedural", "template")
    assert settings.landscape_size == (1920, 1080)
    assert settings.vertical_size == (1080, 1920)
    assert settings.loudness_target == -14 and settings.true_peak_max == -1


def test_folder_relative_to_home_or_absolute(tmp_path):
    assert parse({"folder": "music"}, home=tmp_path).folder == tmp_path / "music"
    assert parse({"folder": "/data/tracks"}, home=tmp_path).folder == Path("/data/tracks")


def test_lists_and_numbers_are_converted():
    settings = parse({"banned_terms": ["free download"], "min_seconds": 30, "fps": 30.0})
    assert settings.banned_terms == ("free download",)
    assert settings.min_seconds == 30.0 and isinstance(settings.fps, int)


@pytest.mark.parametrize(
    ("raw", "field", "words"),
    [
        ({"audoi": "synth"}, "pipeline.audoi", "unknown key"),
        ({"audio": "spotify"}, "pipeline.audio", "must be one of synth, folder, suno"),
        ({"style": "wobble"}, "pipeline.style", "must be one of"),
        ({"min_seconds": "ten"}, "pipeline.min_seconds", "must be a number"),
        ({"min_seconds": 50, "max_seconds": 40}, "pipeline.max_seconds", "min_seconds"),
        ({"reels_seconds": 120}, "pipeline.reels_seconds", "90"),
        ({"tags": "lofi"}, "pipeline.tags", "list of strings"),
        ({"title_template": "{nmae}"}, "pipeline.title_template", "{nmae}"),
        ({"fps": 29.97}, "pipeline.fps", "whole number"),
    ],
)
def test_bad_values_name_the_field(raw, field, words):
    with pytest.raises(ConfigError) as caught:
        parse(raw)
    assert caught.value.field == field
    assert caught.value.channel == "lofi"
    assert words in str(caught.value)
    assert str(caught.value).startswith('autoretto.toml: channel "lofi": ' + field)


def test_every_wrong_field_is_named_once():
    raw = {
        "audoi": "synth",
        "style": "wobble",
        "fps": 29,
        "timeout": 0,
        "min_seconds": "ten",
        "max_seconds": 10,  # right beside min_seconds' default: not a problem of its own
        "crf": "high",  # wrong in type: not also "must be between 0 and 51"
        "title_template": "{nmae}",
    }
    with pytest.raises(ConfigProblems) as caught:
        parse(raw)
    fields = [problem.field for problem in caught.value.problems]
    assert sorted(fields) == sorted(
        f"pipeline.{key}"
        for key in ("audoi", "timeout", "style", "fps", "min_seconds", "crf", "title_template")
    )
    assert all(problem.channel == "lofi" for problem in caught.value.problems)


def test_providers_defaults_and_overrides():
    providers = parse_providers(None, path="a.toml")
    assert providers.suno.base_url is None
    assert providers.suno.model == "chirp-v3-5"  # named, never left to the server's default
    assert providers.gemini.base_url == "https://generativelanguage.googleapis.com/v1beta"
    providers = parse_providers(
        {
            "suno": {"base_url": "http://suno.lan:3000/", "poll_interval": 2},
            "gemini": {"text_model": "gemini-x"},
            "youtube": {"anything": 1},
        },
        path="a.toml",
    )
    assert providers.suno.base_url == "http://suno.lan:3000"
    assert providers.suno.poll_interval == 2.0
    assert providers.gemini.text_model == "gemini-x"


@pytest.mark.parametrize(
    ("raw", "field"),
    [
        ({"suno": {"base_url": "suno.lan"}}, "providers.suno.base_url"),
        ({"gemini": {"modle": "x"}}, "providers.gemini.modle"),
        ({"suno": {"timeout": 0}}, "providers.suno.timeout"),
        ({"suno": {"model": " "}}, "providers.suno.model"),
        ({"gemini": {"attempts": 0}}, "providers.gemini.attempts"),
    ],
)
def test_bad_provider_values_name_the_field(raw, field):
    with pytest.raises(ConfigError) as caught:
        parse_providers(raw, path="a.toml")
    assert caught.value.field == field


def test_importing_the_pipeline_stays_light():
    import subprocess
    import sys

    code = (
        "import sys, autoretto.pipeline, autoretto.pipeline.settings;"
        "heavy = [m for m in ('numpy', 'librosa', 'PIL', 'requests', 'scipy') "
        "if m in sys.modules]; print(','.join(heavy))"
    )
    root = Path(__file__).resolve().parents[2]
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=root, check=True
    )
    assert result.stdout.strip() == ""
