"""A second process, opening the same on-disk store after the first closed it, recalls what it learned."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import trails.memory as memory
from trails.kernel import Context
from trails.prov import Recorder
from trails.store import open_store, set_default_store
from trails.testing import assert_conforms

SECOND = textwrap.dedent(
    """
    import json, sys
    import trails.memory as memory
    from trails.kernel import Context
    from trails.prov import Recorder
    from trails.store import open_store

    store = open_store(sys.argv[1])
    ctx = Context.open("did:local:bob", recorder=Recorder(store))
    shared = memory.recall("SPARQL proxy SERVICE", scope="shared", ctx=ctx)
    private = memory.recall("vault", scope="all", ctx=ctx)
    history = memory.history(shared[0].id, ctx=ctx) if shared else []
    out = {
        "shared": [[h.content, h.memory.agent_did, h.memory.session] for h in shared],
        "private_seen_by_bob": len(private),
        "versions": [m.status for m in history],
    }
    memory.learn("bob was here", scope="shared", ctx=ctx)
    ctx.close()
    store.close()
    print(json.dumps(out))
    """
)


def test_second_process_recalls_what_the_first_learned(tmp_path: Path) -> None:
    location = tmp_path / "store"
    store = open_store(location)
    set_default_store(store)
    ctx = Context.open("did:local:alice", recorder=Recorder(store))
    old = memory.learn("The SPARQL proxy accepts SERVICE queries", scope="shared", ctx=ctx)
    memory.learn(
        "The SPARQL proxy rejects SERVICE queries", scope="shared", supersedes=old.id, ctx=ctx
    )
    memory.learn("alice's vault code is 1234", scope="private", ctx=ctx)
    ctx.close()
    set_default_store(None)
    store.close()

    result = subprocess.run(
        [sys.executable, "-c", SECOND, str(location)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    seen = json.loads(result.stdout)
    assert seen["shared"] == [
        ["The SPARQL proxy rejects SERVICE queries", "did:local:alice", ctx.session]
    ]
    assert seen["private_seen_by_bob"] == 0
    assert seen["versions"] == ["superseded", "current"]

    # and back: the first side reopens and sees what the second learned
    with open_store(location) as again:
        ctx2 = Context.open("did:local:alice", recorder=Recorder(again))
        hits = memory.recall("bob", scope="shared", ctx=ctx2)
        assert [(h.content, h.memory.agent_did) for h in hits] == [
            ("bob was here", "did:local:bob")
        ]
        assert_conforms(again)
