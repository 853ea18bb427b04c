"""Session-scoped controls evaluated as each session ends, on the recording process:
native sessions and sessions assembled from OTLP spans alike, recorded and sealed."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.controls.conftest import EXAMPLE, record_clean_session
from tests.otel.test_ingest_writes import spans

from trails.config import CONTROLS, load_settings
from trails.controls import recorded_results
from trails.errors import ConfigError
from trails.evidence import verify
from trails.otel.ingest import Ingestor
from trails.prov.recorder import Recorder
from trails.store import open_store
from trails.testing.conformance import record_sample_session


def _settings(tmp_path: Path, body: str) -> object:
    (tmp_path / "trails.toml").write_text(body)
    return load_settings(environ={}, cwd=tmp_path)


ON = f'[controls]\non_session_end = true\nbuiltin = false\ndirectory = "{EXAMPLE}"\n'


def test_off_by_default(tmp_path: Path) -> None:
    assert CONTROLS not in load_settings(environ={}, cwd=tmp_path).recorder_plugins()
    assert CONTROLS in _settings(tmp_path, ON).recorder_plugins()  # type: ignore[attr-defined]


def test_a_native_session_is_evaluated_as_it_ends(tmp_path: Path) -> None:
    store = open_store("memory:")
    recorder = Recorder.from_settings(_settings(tmp_path, ON), store=store)  # type: ignore[arg-type]
    failing = str(record_sample_session(recorder)["session"])
    clean = record_clean_session(recorder)
    results = recorded_results(store)
    by = {(r.session, r.control): r.outcome for r in results}
    assert by == {
        (failing, "failed-call"): "violated",
        (failing, "labelled-session"): "passed",
        (clean, "failed-call"): "passed",
        (clean, "labelled-session"): "violated",
    }  # the store-scoped control waits for `trails controls check`
    assert verify(store).ok


def test_a_session_assembled_from_otlp_is_evaluated_as_it_ends(tmp_path: Path) -> None:
    store = open_store("memory:")
    recorder = Recorder.from_settings(_settings(tmp_path, ON), store=store)  # type: ignore[arg-type]
    result = Ingestor(recorder).ingest(spans(7, tools=1))
    assert result.ended  # the root span ended the session
    [session] = result.ended
    outcomes = {r.control: r.outcome for r in recorded_results(store) if r.session == session}
    assert outcomes == {"failed-call": "passed", "labelled-session": "violated"}
    assert verify(store).ok


def test_a_bad_control_refuses_the_recorder(tmp_path: Path) -> None:
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "x.toml").write_text('id = "x"\ntitle = "x"\nseverity = "severe"\n')
    settings = _settings(
        tmp_path, f'[controls]\non_session_end = true\nbuiltin = false\ndirectory = "{bad}"\n'
    )
    with pytest.raises(ConfigError, match="severity 'severe'"):
        Recorder.from_settings(settings, store=open_store("memory:"))  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("line", "says"),
    [
        ('on_session_end = "yes"', "on_session_end must be true or false"),
        ("on_session_end = 1", "on_session_end must be true or false"),
        ("by = 5", "by must be an agent's identifier"),
        ('by = ""', "by must be an agent's identifier"),
    ],
)
def test_a_mistyped_setting_refuses_the_recorder_instead_of_evaluating_nothing(
    tmp_path: Path, line: str, says: str
) -> None:
    # "yes" is not true: the recorder must not start with the controls silently off
    body = ON.replace("on_session_end = true\n", "") + line + "\n"
    if not line.startswith("on_session_end"):
        body += "on_session_end = true\n"
    settings = _settings(tmp_path, body)
    with pytest.raises(ConfigError, match=says):
        Recorder.from_settings(settings, store=open_store("memory:"))  # type: ignore[arg-type]
