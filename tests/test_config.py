"""Settings: environment, then trails.toml, then defaults; bad values are clear errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from trails.config import DEFAULT_STORE, load_settings
from trails.errors import ConfigError


def test_defaults_without_environment_or_file(tmp_path: Path) -> None:
    s = load_settings(environ={}, cwd=tmp_path)
    assert s.store == DEFAULT_STORE and s.base_iri == "urn:trails:" and s.config_path is None
    assert s.sources["store"] == "default"


def test_file_then_environment_precedence(tmp_path: Path) -> None:
    (tmp_path / "trails.toml").write_text(
        '[store]\nlocation = "data/store"\n[agent]\nstrategy = "reflexion"\n[llm]\nmodel = "x"\n'
    )
    s = load_settings(environ={}, cwd=tmp_path)
    assert s.store == "data/store" and s.strategy == "reflexion"
    assert s.resolve_path(s.store) == tmp_path / "data/store"
    assert s.section("llm") == {"model": "x"} and s.section("absent") == {}
    s = load_settings(environ={"TRAILS_STORE": "memory:"}, cwd=tmp_path)
    assert s.store == "memory:" and s.sources["store"] == "environment TRAILS_STORE"


def test_invalid_values_name_their_source(tmp_path: Path) -> None:
    (tmp_path / "trails.toml").write_text('[prov]\nrecord_content = "some"\n')
    with pytest.raises(ConfigError, match=r"trails\.toml"):
        load_settings(environ={}, cwd=tmp_path)
    (tmp_path / "trails.toml").write_text("[store\n")
    with pytest.raises(ConfigError, match="not valid TOML"):
        load_settings(environ={}, cwd=tmp_path)
    with pytest.raises(ConfigError, match="TRAILS_CONFIG"):
        load_settings(environ={"TRAILS_CONFIG": str(tmp_path / "missing.toml")}, cwd=tmp_path)
