"""``trails demo --llm``: the demo drives a real adapter over HTTP (loopback fakes of the wire formats)."""

from __future__ import annotations

from pathlib import Path

import pytest
from llm_fakes import FakeServer, Reply, ollama_chat, openai_chat

from trails.cli import main
from trails.demo import SCRIPT


@pytest.mark.parametrize("provider", ["openai", "ollama"])
def test_demo_runs_on_a_provider_named_by_llm(
    provider: str, server: FakeServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    if provider == "openai":
        server.enqueue(*(Reply(json=openai_chat(turn, model="local-model")) for turn in SCRIPT))
        spec, label = f"openai:local-model@{server.url}/v1", "openai_compatible:local-model"
    else:
        server.enqueue(*(Reply(json=ollama_chat(turn, model="qwen3:8b")) for turn in SCRIPT))
        spec, label = f"ollama:qwen3:8b@{server.url}", "ollama:qwen3:8b"

    assert main(["--store", str(tmp_path / "store"), "demo", "--llm", spec]) == 0

    out = capsys.readouterr().out
    assert "stopped  goal_achieved after 4 steps" in out
    assert f"chosen by {label}" in out and "4 calls" in out
    assert len(server.requests) == 4
    assert all(r.path.endswith(("/v1/chat/completions", "/api/chat")) for r in server.requests)


def test_a_bad_llm_spec_is_a_clear_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["--store", str(tmp_path / "store"), "demo", "--llm", "openai:no-url"]) == 2
    assert "MODEL@URL" in capsys.readouterr().err
