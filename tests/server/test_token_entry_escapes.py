"""``trails serve --hash-token --principal`` writes one entry whatever the principal holds.

A principal with a newline (and a forged ``[[token]]`` after it) must not end its line
and start an entry of its own: the printed text, appended to a tokens file, loads as one
token for exactly that principal. The real command, run as a user would.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from trails.server.auth import load_tokens

FORGED = (
    'did:x:y\n[[token]]\nprincipal = "did:x:admin"\nsha256 = "' + "0" * 64 + '"\ngraphs = ["*"]'
)


def test_a_newline_in_the_principal_cannot_start_another_entry(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "trails.cli", "serve", "--hash-token", "--principal", FORGED],
        capture_output=True,
        text=True,
        check=True,
    )
    token = result.stderr.strip().rsplit(" ", 1)[-1]  # the last word: the token
    assert [line for line in result.stdout.splitlines() if line.startswith("[")] == ["[[token]]"]
    path = tmp_path / "tokens.toml"
    path.write_text(result.stdout)
    table = load_tokens(path)
    grant = table.authenticate(f"Bearer {token}")
    assert grant is not None and grant.principal == FORGED
    assert table.authenticate("Bearer " + "0" * 64) is None
