"""The ledger's cost: sealing per session, verifying per 1,000 sessions, one session at any size.

Three measurements, each against a baseline from the same run, on on-disk stores:

- **seal cost per session**: a session (open, three ``invoke`` calls, close)
  recorded by a recorder with the sealer installed (the default wiring:
  the seal rides in the end's write, after one read) against the same session
  on a recorder without it. Interleaved rounds.
- **verify per 1,000 sessions**: ``verify(store)`` over a store of 1,000 sealed
  sessions (every graph recomputed, every chain walked) against the floor for
  that work: dumping the same store as N-Quads and hashing the dump with SHA-256.
- **verify one session**: ``verify(store, session=...)`` at 1,000 sessions
  against the same call at 100 sessions (constant time means a ratio near 1).

Run: ``python benchmarks/bench_ledger.py`` (or ``python benchmarks/run_all.py ledger``).
"""

from __future__ import annotations

import hashlib
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _report import interleaved, write_section

import trails
from trails.audit.seal import install_sealer
from trails.audit.verify import verify
from trails.kernel import Context
from trails.prov import Recorder
from trails.store import IRI, Store, open_store


@trails.capability(id="bench.ledger.echo", description="Returns its argument.")
def echo(text: str) -> str:
    return text


def session(recorder: Recorder) -> IRI:
    with Context.open("did:local:bench", recorder=recorder) as ctx:
        for i in range(3):
            trails.invoke("bench.ledger.echo", {"text": f"call {i}"}, ctx=ctx)
        return IRI(str(ctx.session))


def build(path: Path, n: int) -> tuple[Store, list[IRI]]:
    store = open_store(path)
    recorder = Recorder(store)
    install_sealer(recorder)
    return store, [session(recorder) for _ in range(n)]


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="trails-bench-ledger-") as tmp:
        root = Path(tmp)
        sealed_store, plain_store = open_store(root / "sealed"), open_store(root / "plain")
        sealed = Recorder(sealed_store)
        install_sealer(sealed)
        plain = Recorder(plain_store)
        for _ in range(20):  # warm both stores
            session(sealed), session(plain)
        t_sealed, t_plain = interleaved(
            lambda: session(sealed), lambda: session(plain), rounds=11, number=30
        )
        sealed_store.close(), plain_store.close()

        big, sessions = build(root / "big", 1000)
        small, small_sessions = build(root / "small", 100)

        def floor() -> None:
            hashlib.sha256(big.dump(format="nquads") or b"").hexdigest()

        report = verify(big)
        assert report.ok and report.graphs_checked == 1000, report.findings[:3]
        t_verify, t_floor = interleaved(lambda: verify(big), floor, rounds=3, number=1)
        one_big, one_small = interleaved(
            lambda: verify(big, session=sessions[500]),
            lambda: verify(small, session=small_sessions[50]),
            rounds=15,
            number=10,
        )
        big.close(), small.close()

    seal_ratio = t_sealed / t_plain
    verify_ratio = t_verify / t_floor
    one_ratio = one_big / one_small
    write_section(
        "ledger",
        f"""## The ledger: sealing and verifying (issue 12 items 4-6, issue 19 item 1)

`python benchmarks/bench_ledger.py`, on-disk stores. A session is `Context.open`,
three `invoke` calls and the close; sealing adds one read (the session graph and the
ledger's newest-seal pointer, in one query) and no write: the seal rides in the
end's write.

| | time | ratio |
|---|---|---|
| session recorded with the sealer | {t_sealed * 1e3:.2f} ms | **{seal_ratio:.2f}** x the same session unsealed |
| session recorded without it (baseline) | {t_plain * 1e3:.2f} ms | |
| seal cost per session | {(t_sealed - t_plain) * 1e3:.2f} ms | |
| `verify` of 1,000 sealed sessions | {t_verify:.2f} s | **{verify_ratio:.1f}** x the floor |
| floor: N-Quads dump of that store + SHA-256 (baseline) | {t_floor:.2f} s | |
| `verify --session` at 1,000 sessions | {one_big * 1e3:.1f} ms | **{one_ratio:.2f}** x at 100 sessions (target <= 1.5) |
| `verify --session` at 100 sessions (baseline) | {one_small * 1e3:.1f} ms | |""",
    )
    print(
        f"seal {seal_ratio:.2f}x ({(t_sealed - t_plain) * 1e3:.2f} ms/session); "
        f"verify 1k {t_verify:.2f}s = {verify_ratio:.1f}x floor; one session {one_ratio:.2f}x"
    )


if __name__ == "__main__":
    main()
