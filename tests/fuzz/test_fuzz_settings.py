"""Fuzzing the settings: ``ostinato.toml`` text and ``OSTINATO_*`` environment variables.

Each property: the settings load, or a ValidationError names the setting (``config`` for a
file that is not TOML); nothing else escapes, and loaded settings give their policies.
"""

from __future__ import annotations

from dataclasses import fields

from fuzz_helpers import BAD_VALUES, fuzz_settings
from hypothesis import given
from hypothesis import strategies as st

from ostinato.config import Settings
from ostinato.domain.errors import ValidationError

NAMES = sorted(f.name for f in fields(Settings))


def _usable(settings: Settings) -> None:
    settings.feedback_policy()
    settings.grab_options()
    settings.schedule_timing()


@fuzz_settings(250)
@given(st.sampled_from(NAMES + ["nope"]), BAD_VALUES)
def test_a_setting_loads_or_is_named(name, value):
    try:
        _usable(Settings().with_values({name: value}))
    except ValidationError as exc:
        assert exc.field.split(".")[0] in (name, f"schedule_{name}") or name == "policy_ratios", exc


@fuzz_settings(120)
@given(st.sampled_from(NAMES), st.text(max_size=30).filter(lambda t: "\x00" not in t))
def test_an_environment_variable_loads_or_is_named(name, text):
    try:
        _usable(Settings.load(None, {f"OSTINATO_{name.upper()}": text}))
    except ValidationError as exc:
        assert exc.field.split(".")[0] == name or name == "policy_ratios", exc


@fuzz_settings(120)
@given(st.one_of(st.text(max_size=80), st.builds("{} = {}".format, st.sampled_from(NAMES),
                                                  st.sampled_from(["inf", "nan", "-inf", "1e400", "0", "-1", '"x"', "[]", "{}",
                                                                   '"99999999999999d"', "1979-05-27T07:32:00Z", "true"]))))
def test_a_config_file_loads_or_is_named(tmp_path_factory, text):
    path = tmp_path_factory.mktemp("config") / "ostinato.toml"
    path.write_text(text, encoding="utf-8", errors="surrogatepass")
    try:
        _usable(Settings.load(path, {}))
    except ValidationError as exc:
        assert exc.field.split(".")[0] in NAMES + ["config"] or exc.field in text, exc
