"""Third-party MCP servers from PyPI (``mcp-server-time``, ``mcp-server-git``), run offline,
mounted and called by a scripted ReAct run: the calls are recorded, sealed and verified.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from trails.agent import Session
from trails.agent.planners import react
from trails.llm import LLMClient
from trails.mcp import mount, unmount
from trails.store.oxigraph import OxigraphStore
from trails.store.terms import IRI

TRAILS = str(Path(sys.executable).with_name("trails"))


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(
        [
            "git",
            "-C",
            str(repo),
            "-c",
            "user.name=Test",
            "-c",
            "user.email=test@example.org",
            *args,
        ],
        check=True,
        capture_output=True,
        text=True,
    ).stdout


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q")
    _git(repo, "commit", "-q", "--allow-empty", "-m", "first")
    (repo / "notes.txt").write_text("remember the milk\n", encoding="utf-8")
    return repo


@pytest.fixture
def servers(repo: Path) -> Iterator[None]:
    time_server = mount([sys.executable, "-m", "mcp_server_time"])
    git_server = mount(
        [sys.executable, "-m", "mcp_server_git", "--repository", str(repo)], prefix="git"
    )
    assert time_server is not None and git_server is not None
    assert time_server.prefix == "mcp-time"  # the server's own name
    yield
    unmount("mcp-time")
    unmount("git")


def _step(action: str, args: dict[str, Any]) -> str:
    return (
        "```json\n"
        + json.dumps({"thought": action, "action": action, "action_input": args})
        + "\n```"
    )


SERVERS = """
PREFIX trails: <https://w3id.org/trails/ns#>
PREFIX prov: <http://www.w3.org/ns/prov#>
SELECT ?session ?id ?status ?name ?transport WHERE {
  GRAPH ?session {
    ?call a trails:CapabilityInvocation ; trails:status ?status ;
          trails:capability/trails:capabilityId ?id ;
          prov:wasAssociatedWith ?server .
    ?server a trails:McpServer ; trails:mcpServerName ?name ; trails:mcpTransport ?transport .
  }
} ORDER BY ?id
"""


def test_a_react_run_calls_time_and_git_tools_recorded_sealed_and_verified(
    servers: None, repo: Path, tmp_path: Path
) -> None:
    script = [
        _step("mcp-time.get_current_time", {"timezone": "Europe/Paris"}),
        _step("git.git_status", {"repo_path": str(repo)}),
        _step("git.git_add", {"repo_path": str(repo), "files": ["notes.txt"]}),
        _step("git.git_commit", {"repo_path": str(repo), "message": "add notes"}),
        '```json\n{"thought": "done", "action": "finish", "action_input": {}, '
        '"final_answer": "notes committed"}\n```',
    ]
    llm = LLMClient.mock(response=script)
    store = OxigraphStore(str(tmp_path / "store"))
    try:
        with Session(principal="did:local:alice", store=store) as session:
            result = react.run("Commit my notes.", llm=llm, session=session)
        assert result.answer == "notes committed"
        prompt = str(llm.requests[0].messages)  # type: ignore[attr-defined]
        assert "mcp-time.get_current_time: Get current time" in prompt
        assert "git.git_commit: " in prompt and "side effects" in prompt
        assert session.iri is not None
        rows = store.query(SERVERS, {"session": IRI(session.iri)})
    finally:
        store.close()
    calls = [(r["id"].value, r["status"].value, r["name"].value) for r in rows]  # type: ignore[union-attr]
    assert calls == [
        ("git.git_add", "ok", "mcp-git"),
        ("git.git_commit", "ok", "mcp-git"),
        ("git.git_status", "ok", "mcp-git"),
        ("mcp-time.get_current_time", "ok", "mcp-time"),
    ]
    assert {r["transport"].value for r in rows} == {"stdio"}  # type: ignore[union-attr]
    assert "add notes" in _git(repo, "log", "--format=%s")  # the tool really ran
    verified = subprocess.run(
        [TRAILS, "--store", str(tmp_path / "store"), "verify"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert verified.returncode == 0, verified.stdout + verified.stderr
