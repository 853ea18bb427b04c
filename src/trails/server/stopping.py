"""How every trails HTTP server stops: Ctrl-C or SIGTERM, whenever it comes, ends it gracefully.

uvicorn installs its own handlers for SIGINT and SIGTERM only once its event loop
runs, and gives the signals back to the handlers it found when it has stopped. A
signal that arrives earlier (after the banner, while uvicorn loads the app and
starts its loop) met Python's own handling there: SIGTERM's default action killed
the process without a word, and a handler that raised an exception could have it
raised in the middle of uvicorn's start, or lost where Python cannot raise it,
leaving a server that no signal had stopped.

``stop_on_signals(server)`` installs the server's own ``handle_exit`` for both
signals before the banner: a signal at any moment asks the server to stop, and a
server asked before its loop runs starts, skips its main loop and shuts down as
usual. The handler raises nothing, so nothing is lost and the command goes on to
its own closing lines and exits with status 0. A second Ctrl-C forces the exit,
as uvicorn does.
"""

from __future__ import annotations

import signal
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import uvicorn

__all__ = ["STOP_SIGNALS", "stop_on_signals"]

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


def stop_on_signals(server: uvicorn.Server) -> None:
    """Make SIGINT and SIGTERM ask ``server`` to stop, from now on (before it runs too).

    Call it in the main thread, after any change to ``server.handle_exit`` and before
    the server is announced.

    Args:
        server: the uvicorn server about to run.
    """
    for number in STOP_SIGNALS:
        signal.signal(number, server.handle_exit)
