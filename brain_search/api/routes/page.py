"""The power-user page (spec 5.1 "Power User Mode"): static files, no build step. The page talks
to the public API only, with a key the user types in."""

from __future__ import annotations

from pathlib import Path

from fastapi import APIRouter
from fastapi.responses import FileResponse

from brain_search.errors import NotFound

STATIC_DIR = Path(__file__).resolve().parents[2] / "static"
_MEDIA = {".html": "text/html", ".css": "text/css", ".js": "text/javascript", ".png": "image/png"}
_HEADERS = {"Cache-Control": "no-cache", "X-Content-Type-Options": "nosniff", "Referrer-Policy": "no-referrer"}


def make_router(static_dir: Path = STATIC_DIR) -> APIRouter:
    """The page's routes over ``static_dir``, listed once when the app is built: the served files
    are that fixed list, so no path from a request ever reaches the filesystem."""
    files = {p.name: p for p in static_dir.iterdir() if p.suffix in _MEDIA} if static_dir.is_dir() else {}
    router = APIRouter(tags=["page"], include_in_schema=False)

    @router.get("/")
    def index() -> FileResponse:
        return FileResponse(static_dir / "index.html", media_type="text/html", headers=_HEADERS)

    @router.get("/static/{name}")
    def static(name: str) -> FileResponse:
        path = files.get(name)
        if path is None:
            raise NotFound("file", name)
        return FileResponse(path, media_type=_MEDIA[path.suffix], headers=_HEADERS)

    return router
