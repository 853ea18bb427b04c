"""Text that can be recorded: the one check for strings UTF-8 and RDF cannot hold.

A Python ``str`` may hold unpaired surrogates (``"\\ud800"``): decoding invalid
UTF-8 with ``surrogateescape`` makes them, which is how Python hands over file
names, command-line arguments and environment values it cannot decode. No RDF
literal or IRI, no JSON body, no UTF-8 stream can carry them; left alone they
surface as a bare ``UnicodeEncodeError`` deep inside a write or a request,
after part of the work is done. Every boundary where text enters trails
(principals and labels, query parameters and query text, memory fields, LLM
messages, CLI arguments) calls ``check_text`` first, so the caller gets a
``UserError`` (or the boundary's own subclass of it) that names the field,
and nothing is recorded or sent.
"""

from __future__ import annotations

from collections.abc import Callable

from trails.errors import UserError

__all__ = ["check_text", "text_problem"]


def text_problem(value: str) -> str | None:
    """Why ``value`` cannot be encoded as UTF-8, or None when it can.

    Args:
        value: the text.

    Returns:
        ``"unpaired surrogate '\\ud800' at character 5"`` for the first bad
        character, or None.
    """
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        return f"unpaired surrogate {value[exc.start]!r} at character {exc.start}"
    return None


def check_text(value: object, field: str, error: Callable[[str], Exception] = UserError) -> None:
    """Refuse a string that cannot be encoded as UTF-8, naming ``field``.

    Anything that is not a ``str`` passes (type checks are the caller's).

    Args:
        value: the value to check.
        field: what it is, for the message (``"principal"``, ``"parameter 'x'"``).
        error: the exception to raise, built from the message (default ``UserError``).

    Raises:
        UserError: (or what ``error`` builds) ``value`` holds an unpaired surrogate.
    """
    if not isinstance(value, str):
        return
    problem = text_problem(value)
    if problem is not None:
        shown = value.encode("utf-8", "backslashreplace").decode("utf-8")
        if len(shown) > 80:
            shown = shown[:77] + "..."
        raise error(f'{field} is not valid Unicode text ({problem}): "{shown}"')
