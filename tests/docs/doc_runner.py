"""Run every Python and shell example of one Markdown document, in order, as a reader would.

Usage: ``python doc_runner.py DOC.md`` in an empty working directory (the test
makes one per document). Why a small collector of our own rather than
``pytest-examples``: the guides are tutorials whose blocks build on each other
(a later block uses the client or session an earlier one made) and whose shell
blocks run ``trails ...`` against the store the Python blocks left, including
long-running servers; ``pytest-examples`` runs Python blocks one by one and no
shell at all. The rules, which are also what the docs promise their readers:

- **Python** blocks (```` ```python ````) run in one namespace per document, in
  this process, compiled under the document's path with the document's line
  numbers, so a failure's traceback points at ``docs/x.md`` line N.
- **Shell** blocks (```` ```bash ````, ``sh``, ``shell``, ``console``) run each
  command (``\\`` continuations joined, ``$ `` prompts and comments dropped) with
  ``bash``, in the same working directory, after this process has released the
  store (the embedded store is single-writer), so ``trails sessions`` sees what
  the Python blocks recorded. A command must exit 0. ``.venv/bin/`` means the
  environment running the tests.
- Placeholders a reader replaces are replaced the same way: ``SESSION``,
  ``IRI`` and ``urn:trails:session:...`` by the newest persisted session (else
  the newest session), ``IRI_A`` / ``IRI_B`` by that same session (so ``trails
  diff`` compares a session with itself and exits 0, as the reader's would on
  two runs that agree); the
  token printed by ``trails serve --hash-token`` becomes ``$TOKEN`` (and
  ``$AUDIT_TOKEN`` when made with ``--audit``). Every ``127.0.0.1:PORT`` /
  ``localhost:PORT`` is mapped to a free port (the same one for the whole
  document; ``trails serve``'s default 8080 is mapped through ``[serve] port``).
- **Long-running** commands (``trails serve`` without ``--hash-token``,
  ``trails otlp``, whose default 4318 is mapped like any other port,
  ``oxigraph serve``) are started in the background; the block goes on once
  their port accepts connections (or fails with their output if they exit), and
  they are stopped when the document ends (later blocks may still query them).
- A block whose info string names a file (```` ```sparql file=q.rq ````) is
  written to that file (its folders made) before anything runs, so commands can use it (a Python
  block with a file is a program a command runs, not run in the namespace).
- A block that genuinely cannot run is preceded by a visible line
  ``*Not run by the docs tests: <reason>.*``; the reason is required, and the
  runner prints every such block it skips. Where the block must come first for the
  reader (the README's two opening commands), the same words may stand in an HTML
  comment, ``<!-- Not run by the docs tests: <reason>. -->``, which a rendered page
  does not show.
- An ```` ```output ```` block right after a Python block is what that block prints:
  the runner compares them (lines stripped of trailing blanks) and fails naming the
  document and line when they differ.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import shlex
import socket
import subprocess
import sys
import time
import traceback
from dataclasses import dataclass
from pathlib import Path

SHELLS = {"bash", "sh", "shell", "console"}
NOT_RUN = re.compile(
    r"^(\*Not run by the docs tests: (?P<reason>.*\S.*)\.\*"
    r"|<!-- Not run by the docs tests: (?P<hidden>.*\S.*)\. -->)\s*$"
)
NOT_RUN_LOOSE = re.compile(r"not run by the docs tests", re.IGNORECASE)
FENCE = re.compile(r"^```(?P<info>[^\n`]*)\n(?P<body>.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL)
PORT = re.compile(r"\b(127\.0\.0\.1|localhost):(\d{2,5})\b")
LONG_RUNNING = re.compile(r"(^|\s|/)(trails(\s+--store\s+\S+)?\s+(serve|otlp)|oxigraph\s+serve)\b")
OTLP = re.compile(r"(^|\s|/)trails(\s+--store\s+\S+)?\s+otlp\b")
READY_SECONDS = 60.0


@dataclass
class Block:
    info: str
    body: str
    line: int  # the line of the first body line in the document
    skip: str | None

    @property
    def lang(self) -> str:
        return self.info.split()[0].lower() if self.info.split() else ""

    @property
    def file(self) -> str | None:
        found = re.search(r"\bfile=(\S+)", self.info)
        return found.group(1) if found else None


class DocFailure(Exception):
    """A block failed; the message names the document and line."""


def blocks(text: str, doc: str) -> list[Block]:
    """The fenced blocks of ``text``, with their skip reasons."""
    found: list[Block] = []
    for m in FENCE.finditer(text):
        fence_line = text.count("\n", 0, m.start()) + 1
        before = text[: m.start()].rstrip("\n").rsplit("\n", 1)[-1]
        skip = None
        if NOT_RUN_LOOSE.search(before):
            marker = NOT_RUN.match(before.strip())
            if marker is None:
                raise DocFailure(
                    f"{doc}:{fence_line - 1}: a not-run marker must read "
                    "'*Not run by the docs tests: <reason>.*' (or the same words in '<!-- ... -->')"
                )
            skip = marker.group("reason") or marker.group("hidden")
        found.append(Block(m.group("info").strip(), m.group("body"), fence_line + 1, skip))
    return found


def commands(body: str, lang: str) -> list[tuple[int, str]]:
    """(line offset, command) pairs of a shell block."""
    out: list[tuple[int, str]] = []
    pending, start = "", 0
    for offset, raw in enumerate(body.splitlines()):
        line = raw.rstrip()
        if lang == "console":
            if not line.startswith("$ "):
                continue
            line = line[2:]
        if not pending:
            start = offset
            if not line.strip() or line.lstrip().startswith("#"):
                continue
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        out.append((start, pending + line))
        pending = ""
    return out


class _Tee(io.StringIO):
    """Keeps what is written and passes it on to ``out``."""

    def __init__(self, out: io.TextIOBase | object) -> None:
        super().__init__()
        self.out = out

    def write(self, text: str) -> int:
        self.out.write(text)  # type: ignore[attr-defined]
        return super().write(text)


def release_store() -> None:
    """Let go of the embedded store (ending the default session) so CLI processes can open it."""
    if "trails" not in sys.modules:
        return
    from trails.kernel import reset_default_context
    from trails.store import reset_default_store

    reset_default_context()
    reset_default_store()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Runner:
    """Runs one document's blocks in order."""

    def __init__(self, doc: Path, label: str) -> None:
        self.doc = doc
        self.label = label
        self.namespace: dict[str, object] = {"__name__": "__main__"}
        self.ports: dict[str, int] = {}
        self.env = dict(os.environ)
        self.bin = Path(sys.executable).parent
        self.background: list[subprocess.Popen[bytes]] = []
        self.env["PATH"] = f"{self.bin}{os.pathsep}{self.env.get('PATH', '')}"

    # -- python ----------------------------------------------------------------

    def python(self, block: Block) -> str:
        """Run ``block``; returns what it printed (also passed on to standard output)."""
        source = "\n" * (block.line - 1) + block.body
        printed = _Tee(sys.stdout)
        try:
            with contextlib.redirect_stdout(printed):
                exec(compile(source, self.label, "exec"), self.namespace)
        except BaseException as exc:
            detail = "".join(traceback.format_exception(exc))
            raise DocFailure(
                f"{self.label}:{block.line}: the python block failed\n{detail}"
            ) from exc
        return printed.getvalue()

    def output(self, block: Block, printed: str | None) -> None:
        """Check that the Python block before ``block`` printed what ``block`` shows."""
        if printed is None:
            raise DocFailure(f"{self.label}:{block.line}: an output block follows no python block")

        def lines(text: str) -> list[str]:
            return [line.rstrip() for line in text.strip("\n").splitlines()]

        if lines(printed) != lines(block.body):
            raise DocFailure(
                f"{self.label}:{block.line}: the python block above printed something else\n"
                f"--- the document shows:\n{block.body}--- it printed:\n{printed}"
            )

    # -- shell -----------------------------------------------------------------

    def _sessions(self) -> tuple[list[str], list[str]]:
        """(newest first) every session, and the persisted ones."""
        from trails.prov.vocab import NAMESPACES
        from trails.store import open_store, to_python

        location = Path(".trails/store")
        if not location.exists():
            return [], []
        prefixes = "".join(f"PREFIX {n}: <{i}>\n" for n, i in NAMESPACES.items())
        query = (
            prefixes
            + "SELECT ?s ?t (COUNT(?x) AS ?persisted) WHERE { GRAPH ?g { ?s a trails:Session ;"
            " prov:startedAtTime ?t } OPTIONAL { GRAPH ?h { ?x a trails:SessionProjection ;"
            " trails:projectionOf ?s } } } GROUP BY ?s ?t ORDER BY DESC(?t)"
        )
        with open_store(str(location)) as store:
            rows = [{k: to_python(v) for k, v in r.items()} for r in store.query(query)]  # type: ignore[union-attr]
        every = [str(r["s"]) for r in rows]
        return every, [str(r["s"]) for r in rows if int(r["persisted"]) > 0]

    def _substitute(self, command: str) -> str:
        command = re.sub(r"(^|(?<=\s))\.venv/bin/", f"{self.bin}/", command)

        def port(m: re.Match[str]) -> str:
            mapped = self.ports.setdefault(m.group(2), _free_port())
            return f"{m.group(1)}:{mapped}"

        command = PORT.sub(port, command)
        if re.search(r"\b(SESSION|IRI(_A|_B)?)\b|urn:trails:session:\.\.\.", command):
            every, persisted = self._sessions()
            if not every:
                raise DocFailure(f"{self.label}: a command names a session, but none was recorded")
            newest = (persisted or every)[0]
            command = command.replace("urn:trails:session:...", newest)
            command = re.sub(r"\bIRI_[AB]\b", newest, command)
            command = re.sub(r"\b(SESSION|IRI)\b", newest, command)
        return command

    def _serve_port(self) -> int:
        port = self.ports.setdefault("8080", _free_port())
        config = Path("trails.toml")
        text = config.read_text() if config.exists() else ""
        if "[serve]" not in text:
            config.write_text(text + f"\n[serve]\nport = {port}\n")
        return port

    def _start(self, command: str, where: str) -> subprocess.Popen[bytes]:
        if OTLP.search(command) and "--port" not in command:
            # trails otlp's default 4318, mapped like any loopback port of the document
            port = self.ports.setdefault("4318", _free_port())
            command = re.sub(r"(\s#.*)?$", f" --port {port}", command, count=1)
        elif re.search(r"\btrails\b.*\bserve\b", command) and "--port" not in command:
            port = self._serve_port()
        else:
            ports = [int(p) for _, p in PORT.findall(command)]
            port = ports[0] if ports else self._serve_port()
        proc = subprocess.Popen(
            ["bash", "-c", command],
            env=self.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        deadline = time.monotonic() + READY_SECONDS
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                output = proc.stdout.read().decode(errors="replace") if proc.stdout else ""
                raise DocFailure(f"{where}: `{command}` exited with {proc.returncode}\n{output}")
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    return proc
            time.sleep(0.1)
        self._stop(proc)
        raise DocFailure(f"{where}: `{command}` did not listen on port {port}")

    @staticmethod
    def _stop(proc: subprocess.Popen[bytes]) -> None:
        if proc.poll() is None:
            os.killpg(proc.pid, 15)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, 9)
                proc.wait()

    def shell(self, block: Block) -> None:
        release_store()
        for offset, raw in commands(block.body, block.lang):
            where = f"{self.label}:{block.line + offset}"
            command = self._substitute(raw)
            print(f"$ {command}", flush=True)
            if LONG_RUNNING.search(command) and "--hash-token" not in command:
                self.background.append(self._start(command, where))
                continue
            done = subprocess.run(
                ["bash", "-c", command], env=self.env, capture_output=True, text=True
            )
            sys.stdout.write(done.stdout)
            sys.stdout.write(done.stderr)
            if done.returncode != 0:
                raise DocFailure(
                    f"{where}: `{raw}` exited with {done.returncode}\n"
                    f"stdout:\n{done.stdout}\nstderr:\n{done.stderr}"
                )
            if "--hash-token" in command:
                output = done.stdout + "\n" + done.stderr
                target = re.search(r">>?\s*(\S+)\s*$", command)
                if target and Path(target.group(1)).is_file():  # the reader reads it there
                    output += "\n" + Path(target.group(1)).read_text(encoding="utf-8")
                self._remember_token(command, output)

    def stop_servers(self) -> None:
        """Stop the long-running commands the document started."""
        for proc in self.background:
            self._stop(proc)

    def _remember_token(self, command: str, output: str) -> None:
        found = re.search(r"token\b[^\n]*?:\s*(\S{16,})\s*$", output, re.MULTILINE)
        if found is None:
            return
        self.env["TOKEN"] = found.group(1)
        if "--audit" in shlex.split(command, comments=True):
            self.env["AUDIT_TOKEN"] = found.group(1)

    # -- the document -------------------------------------------------------------

    def run(self) -> None:
        text = self.doc.read_text(encoding="utf-8")
        found = blocks(text, self.label)
        for block in found:
            if block.file:
                Path(block.file).parent.mkdir(parents=True, exist_ok=True)
                Path(block.file).write_text(block.body, encoding="utf-8")
        try:
            self._blocks(found)
        finally:
            self.stop_servers()

    def _blocks(self, found: list[Block]) -> None:
        ran = 0
        printed: str | None = None  # what the last python block printed
        for block in found:
            if block.lang == "output" and block.skip is None:
                self.output(block, printed)
                continue
            if block.lang != "python" and block.lang not in SHELLS:
                continue
            if block.file and block.lang == "python":
                continue  # a program a later command runs (python my_agent.py), written above
            if block.skip is not None:
                print(f"--- {self.label}:{block.line} not run: {block.skip}", flush=True)
                continue
            print(f"--- {self.label}:{block.line} ({block.lang})", flush=True)
            if block.lang == "python":
                printed = self.python(block)
            else:
                self.shell(block)
                printed = None
            ran += 1
        print(f"=== {self.label}: {ran} blocks ran", flush=True)


def main(argv: list[str]) -> int:
    doc = Path(argv[0]).resolve()
    label = argv[1] if len(argv) > 1 else doc.name
    try:
        Runner(doc, label).run()
    except DocFailure as failure:
        print(f"\nFAILED {failure}", file=sys.stderr, flush=True)
        return 1
    finally:
        release_store()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
