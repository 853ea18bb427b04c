"""The console's live pages: what the watcher costs while nothing changes, and per change.

``trails.server.console.live.Live`` looks at the store's change marker once a second
(``trails.store.snapshot.change_marker``: a ``scandir`` of the data directory, the store
never opened) and, only when it changed, reads the store once for every open page: a
fresh read-only snapshot, the newest sessions (``sessions_page``, 25) and each watched
session's steps (``session_steps``). In CPU seconds of this process, on a directory
store of N recorded sessions:

- **tick**: one look at the marker (median of 200);
- **read**: one read after a change (snapshot opened, newest sessions, one session's
  steps, snapshot closed; median of 20);
- **read / tick**: how much a change costs against a second in which nothing happened.

However many pages are open, a change costs one read and a quiet second one tick.

Run: ``python benchmarks/bench_console_live.py [N ...]`` (default 100 400).
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _report import write_section

from trails.agent import Session
from trails.audit.sessions_page import sessions_page
from trails.server.console.live import NEWEST, session_steps
from trails.store import open_store
from trails.store.snapshot import change_marker


def cpu(fn: object) -> float:
    began = time.process_time()
    fn()  # type: ignore[operator]
    return time.process_time() - began


def measure(n: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "store"
        store = open_store(folder)
        last = ""
        for _ in range(n):
            with Session(principal="did:local:alice", store=store) as session:
                last = str(session.context.session)
        store.close()

        def read() -> None:
            snapshot = open_store(folder, read_only=True)
            try:
                sessions_page(snapshot, {}, NEWEST)
                session_steps(snapshot, last)
            finally:
                snapshot.close()

        ticks = [cpu(lambda: change_marker(folder)) for _ in range(200)]
        reads = [cpu(read) for _ in range(20)]
        return {
            "tick_us": statistics.median(ticks) * 1e6,
            "read_ms": statistics.median(reads) * 1e3,
        }


def main() -> None:
    sizes = [int(a) for a in sys.argv[1:]] or [100, 400]
    rows = []
    for n in sizes:
        f = measure(n)
        ratio = f["read_ms"] * 1e3 / f["tick_us"]
        rows.append(f"| {n:,} | {f['tick_us']:.0f} µs | {f['read_ms']:.1f} ms | {ratio:,.0f}x |")
    table = (
        "## The console's live pages (`benchmarks/bench_console_live.py`)\n\n"
        "One watcher serves every open page: a look at the store's change marker each second "
        "(a tick), one read of the store per change (a fresh snapshot, the newest "
        f"{NEWEST} sessions, one session's steps). "
        f"`python benchmarks/bench_console_live.py {' '.join(map(str, sizes))}`, CPU time of one "
        "process:\n\n"
        "| sessions in the store | tick (nothing changed) | read (after a change) | read / tick |\n"
        "| --- | --- | --- | --- |\n" + "\n".join(rows) + "\n"
    )
    print(table)
    write_section("console-live", table)


if __name__ == "__main__":
    main()
