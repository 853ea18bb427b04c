"""Start-up cost of ``import trails``, now against before ``trails.Session`` was exported.

``import trails`` exports the kernel (``@capability``, ``invoke``, ``Context``)
eagerly and everything else lazily: ``trails.Session`` imports the agent on
first lookup, and the ``memory.*`` capabilities register on first ``invoke``.
The baseline is the package as it was before those exports (``BASELINE``, a
git revision, extracted with ``git archive`` and put first on ``PYTHONPATH``);
both run as fresh ``python -c`` processes, alternating, so they see the same
machine noise. ``from trails import Session`` (which pays for the agent) is
shown for context. ``trails --help`` (the console script, as a user types
it) is timed in the same rounds: it must stay within 1.5x of ``import trails``
(the parser loads no command module for the help, so the endpoint's server
stack and the agent stay unloaded). How a no-op command grows with the store
is measured by ``bench_scale.py``.

Targets: ``import trails`` now / before <= 1.2; ``trails --help`` / ``import
trails`` <= 1.5.

Run: ``python benchmarks/bench_import.py [REVISION]``
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _report import write_section

ROOT = Path(__file__).resolve().parent.parent
BASELINE = "78d0e64"  # the last revision before the lazy exports
ROUNDS = 15


def extract(revision: str, into: Path) -> Path:
    """``src/trails`` of ``revision``, unpacked under ``into``; returns the ``src`` folder."""
    archive = into / "src.tar"
    with archive.open("wb") as out:
        subprocess.run(["git", "archive", revision, "src/trails"], cwd=ROOT, stdout=out, check=True)
    with tarfile.open(archive) as tar:
        tar.extractall(into, filter="data")
    return into / "src"


TRAILS = str(Path(sys.executable).with_name("trails"))


def once(code: str | list[str], pythonpath: str | None = None) -> float:
    """Seconds of one fresh process: ``python -c code``, or ``code`` as a command line."""
    env = dict(os.environ)
    if pythonpath:
        env["PYTHONPATH"] = pythonpath
    argv = [sys.executable, "-c", code] if isinstance(code, str) else code
    start = time.perf_counter()
    subprocess.run(argv, check=True, env=env, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def main(revision: str) -> None:
    with tempfile.TemporaryDirectory() as folder:
        before_src = str(extract(revision, Path(folder)))
        cases: dict[str, tuple[str | list[str], str | None]] = {
            "before": ("import trails", before_src),
            "trails": ("import trails", None),
            "session": ("from trails import Session", None),
            "help": ([TRAILS, "--help"], None),
        }
        times: dict[str, list[float]] = {name: [] for name in cases}
        for _ in range(ROUNDS):
            for name, (code, path) in cases.items():
                times[name].append(once(code, path))
    median = {name: statistics.median(t) for name, t in times.items()}
    ratio = median["trails"] / median["before"]
    verdict = "met" if ratio <= 1.2 else "NOT met"
    help_ratio = median["help"] / median["trails"]
    help_verdict = "met" if help_ratio <= 1.5 else "NOT met"
    write_section(
        "import",
        f"""## Start-up: `import trails`

`benchmarks/bench_import.py`: fresh `python -c` processes, {ROUNDS} alternating rounds, medians.

| command | median |
| --- | --- |
| `import trails` before (revision `{revision}`, baseline) | {median["before"] * 1000:.0f} ms |
| `import trails` now | {median["trails"] * 1000:.0f} ms |
| `from trails import Session` (imports the agent) | {median["session"] * 1000:.0f} ms |
| `trails --help` (the console script) | {median["help"] * 1000:.0f} ms |

`import trails` now / before = **{ratio:.2f}** (target <= 1.2: {verdict}).

`trails --help` / `import trails` = **{help_ratio:.2f}** (target <= 1.5: {help_verdict}).""",
    )
    print(f"import trails now / before = {ratio:.2f} ({verdict})")
    print(f"trails --help / import trails = {help_ratio:.2f} ({help_verdict})")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else BASELINE)
