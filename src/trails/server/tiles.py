"""The transparency log's tiles served read-only (``[serve] log_tiles``): ``/log/``.

``trails log publish DIR`` writes the log in the c2sp.org/tlog-tiles layout; with
``[serve] log_tiles = "DIR"``, ``trails serve`` serves that folder at ``/log/``
(``/log/checkpoint``, ``/log/tile/<L>/<N>``, ``/log/tile/entries/<N>``), to anyone: the
tiles hold seal IRIs and hashes, never content, and are meant for monitors and witnesses.
Only those paths are answered (GET and HEAD), each file from under the folder, never a
path outside it; the checkpoint is not cached, tiles are immutable.
"""

from __future__ import annotations

import re
from pathlib import Path

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route

__all__ = ["mount_tiles", "tiles_route"]

_PATH = re.compile(r"checkpoint|tile/(?:entries|[0-9]|[1-5][0-9]|6[0-3])/(?:x[0-9]{3}/)*[0-9]{3}"
                   r"(?:\.p/(?:[1-9]|[1-9][0-9]|1[0-9][0-9]|2[0-4][0-9]|25[0-5]))?")  # fmt: skip
_MAX = 1 << 20


def tiles_route(folder: str | Path, prefix: str = "/log") -> Route:
    """The route serving the published tiles under ``folder`` at ``prefix``."""
    base = Path(folder).resolve()

    async def serve(request: Request) -> Response:
        path = request.path_params["path"]
        target = (base / path).resolve()
        if not _PATH.fullmatch(path) or not target.is_relative_to(base) or not target.is_file():
            return PlainTextResponse("not found\n", status_code=404)
        try:
            data = target.read_bytes()[: _MAX + 1]
        except OSError:
            return PlainTextResponse("not found\n", status_code=404)
        if path == "checkpoint":
            return Response(
                data,
                media_type="text/plain; charset=utf-8",
                headers={"Cache-Control": "no-cache"},
            )
        return Response(
            data,
            media_type="application/octet-stream",
            headers={"Cache-Control": "public, max-age=31536000, immutable"},
        )

    return Route(f"{prefix}/{{path:path}}", serve, methods=["GET", "HEAD"])


def mount_tiles(app: Starlette, folder: str | Path) -> None:
    """Serve the tiles under ``folder`` at ``/log/`` on ``app``."""
    app.router.routes.append(tiles_route(folder))
