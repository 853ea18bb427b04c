"""Run every benchmark script in this folder, one after the other, each in its own process.

Each script writes its own section of docs/benchmarks.md. Usage:
``python benchmarks/run_all.py [NAME ...] [-- ARG ...]`` (names without
``bench_`` and ``.py``; arguments after ``--`` go to every script run, e.g.
``run_all.py scale -- --sizes 1000,10000,100000``).

The benchmarks that start a real ``oxigraph serve`` find the binary on
``PATH`` or, failing that, next to this interpreter (``.venv/bin/oxigraph``,
installed with the ``test`` extra); the one that counts instructions needs
``valgrind``. When a benchmark's program is missing, it is skipped with a
message saying so, and the others still run.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent

#: benchmarks that run a program of their own: the program, and how to get it
NEEDS = {
    "endpoint": ("oxigraph", "pip install oxigraph-server, or the test extra"),
    "react_cpu": ("valgrind", "apt-get install valgrind"),
}


def child_path(path: str | None = None, interpreter: str = sys.executable) -> str:
    """``PATH`` for the benchmark processes: the given one, then this interpreter's folder."""
    path = os.environ.get("PATH", "") if path is None else path
    bindir = str(Path(interpreter).parent)
    parts = [p for p in path.split(os.pathsep) if p]
    return os.pathsep.join([*parts, bindir] if bindir not in parts else parts)


def split_args(argv: list[str]) -> tuple[list[str], list[str]]:
    """Benchmark names, and the arguments after ``--`` for the scripts."""
    if "--" in argv:
        at = argv.index("--")
        return argv[:at], argv[at + 1 :]
    return argv, []


def main(argv: list[str]) -> int:
    names, extra = split_args(argv)
    scripts = sorted(HERE.glob("bench_*.py"))
    if names:
        unknown = set(names) - {s.stem.removeprefix("bench_") for s in scripts}
        if unknown:
            print(f"no such benchmark: {', '.join(sorted(unknown))}", file=sys.stderr)
            return 2
        scripts = [s for s in scripts if s.stem.removeprefix("bench_") in names]
    env = dict(os.environ, PATH=child_path())
    failed, skipped = [], []
    for script in scripts:
        name = script.stem.removeprefix("bench_")
        program, hint = NEEDS.get(name, (None, ""))
        if program is not None and shutil.which(program, path=env["PATH"]) is None:
            print(
                f"== {script.name} skipped: no `{program}` binary on PATH or next to "
                f"{sys.executable} ({hint})",
                flush=True,
            )
            skipped.append(script.name)
            continue
        print(f"== {script.name}", flush=True)
        if subprocess.run(
            [sys.executable, str(script), *extra], cwd=HERE.parent, env=env
        ).returncode:
            failed.append(script.name)
    if skipped:
        print("skipped:", ", ".join(skipped))
    if failed:
        print("failed:", ", ".join(failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
