"""The seeds' API as written: lazy exports, lazy memory, ``ctx.llm``, configured clients.

Covers ``from trails import capability, Session, invoke`` without importing the
agent at ``import trails``; ``memory.*`` found after only ``import trails``;
``ctx.llm`` inside handlers run by ``Session.run`` (recorded, costed, linked to
the invocation); the default client from ``TRAILS_LLM`` / ``[llm] model``; a
``ModelSpec`` served by its own provider or refused naming it; ``session.auth``;
and ``trails demo --llm`` failing loudly when the provider fails.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from llm_fakes import FakeServer, Reply, anthropic_message, ollama_chat

from trails.cli import main
from trails.errors import ConfigError
from trails.kernel import capability
from trails.llm import LLMClient, ModelSpec, configured, select_model
from trails.prov.vocab import NAMESPACES
from trails.store import Solutions, Store, to_python

PREFIXES = "".join(f"PREFIX {name}: <{iri}>\n" for name, iri in NAMESPACES.items())


@pytest.fixture(autouse=True)
def _fresh_clients() -> Any:
    configured.reset()
    yield
    configured.reset()


def _python(code: str, tmp_path: Path) -> str:
    env = {"PATH": "/usr/bin:/bin", "TRAILS_STORE": "memory:", "HOME": str(tmp_path)}
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_session_is_a_lazy_export_and_import_trails_stays_light(tmp_path: Path) -> None:
    out = _python(
        "import sys, trails\n"
        "print(sorted(m for m in sys.modules if m.startswith(('trails.agent', 'trails.llm', "
        "'trails.memory', 'asyncio'))))\n"
        "from trails import capability, Session, invoke\n"
        "import trails.agent\n"
        "print(Session is trails.agent.Session, 'Session' in dir(trails))\n",
        tmp_path,
    )
    assert out.splitlines() == ["[]", "True True"]
    import trails

    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        trails.Nope  # noqa: B018


def test_memory_capabilities_are_found_after_only_import_trails(tmp_path: Path) -> None:
    out = _python(
        "import sys, trails\n"
        "trails.invoke('memory.learn', {'content': 'The SPARQL proxy rejects SERVICE queries',"
        " 'confidence': 0.99, 'topic': 'security', 'agent_did': 'did:local:alice',"
        " 'scope': 'shared'})\n"
        "hits = trails.invoke('memory.recall', {'context': 'SPARQL security', 'scope': 'shared'})\n"
        "print(len(hits), hits[0].content, 'trails.memory' in sys.modules)\n",
        tmp_path,
    )
    assert out.strip() == "1 The SPARQL proxy rejects SERVICE queries True"


def test_session_auth_carries_principal_and_did() -> None:
    from trails import Session

    alice = Session(principal="did:key:zAlice")
    assert (alice.auth.principal, alice.auth.did, alice.auth.credential) == (
        "did:key:zAlice",
        "did:key:zAlice",
        None,
    )
    bob = Session(principal="bob", auth={"id": "did:web:bob.example", "proof": "..."})
    assert bob.auth.did == "did:web:bob.example" and bob.auth.credential["proof"] == "..."
    assert Session(principal="carol", auth="opaque-token").auth.did is None


HANDLER_COMPLETIONS = (
    PREFIXES
    + """
SELECT ?inv ?cap ?completion ?usd ?model WHERE {
  GRAPH ?g {
    ?inv a trails:CapabilityInvocation ; trails:capability ?c .
    ?c trails:capabilityId ?cap .
    ?completion a trails:LLMCompletion ; prov:wasInformedBy ?inv ;
                prov:wasAssociatedWith ?m .
    ?m trails:modelId ?model .
    OPTIONAL { ?completion trails:costUSD ?usd }
  }
}
"""
)


def _react(action: str, args: dict[str, Any] | None = None, answer: str | None = None) -> str:
    body: dict[str, Any] = {"thought": "t", "action": action, "action_input": args or {}}
    if answer is not None:
        body["final_answer"] = answer
    return "```json\n" + json.dumps(body) + "\n```"


def _worked_example_capabilities(summary_model: ModelSpec) -> None:
    @capability(id="evidence.fetch", description="Fetch a document from the evidence graph")
    def fetch(ctx: Any, doc_id: str) -> str:
        return f"{doc_id}: SKU-7 recall notice"

    @capability(id="evidence.summarize", cost_estimate={"usd": 0.02, "tokens": 1500})
    def summarize(ctx: Any, text: str) -> str:
        return str(ctx.llm.complete(f"Summarize:\n{text}", model=summary_model).text)


def test_ctx_llm_in_a_handler_run_by_session_run_is_recorded_costed_and_linked(
    server: FakeServer, store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ADR-0018's worked example: no ``llm=`` anywhere, the default client comes from TRAILS_LLM."""
    from trails import Session

    monkeypatch.setenv("TRAILS_LLM", "anthropic:claude-haiku-4-5")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    spec = select_model("summarize", budget_hint="balanced")
    assert spec.provider == "anthropic"
    _worked_example_capabilities(spec)
    replies = [
        _react("evidence.fetch", {"doc_id": "F-1"}),
        _react("evidence.summarize", {"text": "F-1: SKU-7 recall notice"}),
        "A recall of SKU-7.",  # the handler's own completion
        _react("finish", answer="One filing: a recall of SKU-7."),
    ]
    server.enqueue(
        *(Reply(json=anthropic_message(t, model=spec.model, input_tokens=1000)) for t in replies)
    )
    session = Session.new(
        strategy="react", principal="did:key:zAlice", budget={"usd": 0.5, "tokens": 50_000}
    )
    result = session.run("Summarize every regulatory filing touching product SKU-7")
    assert (result.stopped, result.answer) == ("goal_achieved", "One filing: a recall of SKU-7.")
    assert session.invocations[-1].result == "A recall of SKU-7."
    rows = store.query(HANDLER_COMPLETIONS)
    assert isinstance(rows, Solutions)
    found = [{k: to_python(v) for k, v in r.items()} for r in rows]
    assert len(found) == 1
    assert found[0]["cap"] == "evidence.summarize" and found[0]["model"] == spec.model
    assert str(found[0]["inv"]) == str(session.invocations[-1].activity)
    assert found[0]["usd"] > 0  # priced from the catalogue
    assert session.auth.did == "did:key:zAlice"


def test_no_client_and_none_configured_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    from trails import Session

    monkeypatch.delenv("TRAILS_LLM", raising=False)
    with pytest.raises(ConfigError, match=r"TRAILS_LLM=PROVIDER:MODEL.*\[llm\] model"):
        Session.new(strategy="react", principal="did:local:a").run("Do it.")


def test_the_default_client_comes_from_trails_toml(
    server: FakeServer, store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from trails import Session

    monkeypatch.delenv("TRAILS_LLM", raising=False)
    (tmp_path / "trails.toml").write_text(f'[llm]\nmodel = "ollama:qwen3:8b@{server.url}"\n')
    server.enqueue(Reply(json=ollama_chat(_react("finish", answer="ok"))))
    result = Session.new(strategy="react", principal="did:local:a").run("Do it.")
    assert (result.stopped, result.answer) == ("goal_achieved", "ok")
    assert server.requests[0].path == "/api/chat"


def test_a_model_spec_of_the_clients_own_provider_is_served_by_it(store: Store) -> None:
    client = LLMClient.mock(response="x")
    spec = ModelSpec("mock", "scripted-2", local=True)
    assert client.complete("q", model=spec).model == "scripted-2"


def test_a_model_spec_of_another_provider_is_refused_naming_it(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("TRAILS_LLM", raising=False)
    monkeypatch.delenv("TRAILS_LLM_OLLAMA", raising=False)
    client = LLMClient.mock(response="x")
    spec = select_model("summarize", budget_hint="cheap")
    assert spec.provider == "ollama"
    with pytest.raises(ConfigError, match=r"served by provider 'ollama'.*TRAILS_LLM_OLLAMA"):
        client.complete("q", model=spec)
    assert client.requests == []  # nothing was sent to the wrong API


def test_a_model_spec_of_another_provider_goes_to_the_client_configured_for_it(
    server: FakeServer, store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    spec = select_model("summarize", budget_hint="cheap")
    client = LLMClient.mock(response="x")
    server.enqueue(*(Reply(json=ollama_chat("from ollama", model=spec.model)) for _ in range(2)))
    monkeypatch.setenv("TRAILS_LLM_OLLAMA", f"ollama:any@{server.url}")
    response = client.complete("q", model=spec)
    assert (response.text, response.provider, response.model) == (
        "from ollama",
        "ollama",
        spec.model,
    )
    assert server.requests[0].body["model"] == spec.model and client.requests == []
    monkeypatch.delenv("TRAILS_LLM_OLLAMA")
    configured.reset()
    (tmp_path / "trails.toml").write_text(f'[llm.providers]\nollama = "ollama:x@{server.url}"\n')
    assert client.complete("q", model=spec).provider == "ollama"
    assert len(server.requests) == 2


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_demo_prints_the_provider_failure_and_exits_non_zero(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = f"ollama:qwen3:8b@http://127.0.0.1:{_closed_port()}"
    code = main(["--store", str(tmp_path / "store"), "demo", "--llm", spec])
    captured = capsys.readouterr()
    assert code == 1
    assert "stopped  goal_achieved" not in captured.out
    assert "trails: error: the run failed:" in captured.err and "ollama" in captured.err
    assert "127.0.0.1" in captured.err


def test_ollama_host_is_read_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OLLAMA_HOST", "127.0.0.1:9")
    assert LLMClient.ollama().adapter.host == "http://127.0.0.1:9"  # type: ignore[attr-defined]


def test_handler_completion_graph_is_the_invocations(store: Store) -> None:
    """Outside any planner, a handler's nested completion is still linked to its invocation."""
    from trails import invoke

    client = LLMClient.mock(response="nested")

    @capability(id="x.ask")
    def ask(ctx: Any) -> str:
        return str(client.complete("q").text)

    invoke("x.ask", {})
    rows = store.query(
        PREFIXES
        + "SELECT ?inv WHERE { GRAPH ?g { ?c a trails:LLMCompletion ; prov:wasInformedBy ?inv ."
        " ?inv a trails:CapabilityInvocation } }"
    )
    assert isinstance(rows, Solutions) and len(list(rows)) == 1
