"""A static server for the built site that compresses as a static host does.

``python benchmarks/gzip_server.py [directory] [port]`` serves ``_build/html`` on
127.0.0.1; text files (HTML, JavaScript, CSS, JSON, SVG) go out gzip-compressed
to clients that accept it, fonts and PNGs as they are. Lighthouse measures the
site through it (``make bench-site``).
"""

from __future__ import annotations

import functools
import gzip
import http.server
import os
import sys
import threading
from pathlib import Path

COMPRESSED_TYPES = ("text/", "application/javascript", "application/json", "image/svg+xml",
                    "application/xml")


class GzipHandler(http.server.SimpleHTTPRequestHandler):
    """SimpleHTTPRequestHandler plus gzip for text and a static host's cache header."""

    extensions_map = {**http.server.SimpleHTTPRequestHandler.extensions_map,
                      ".js": "application/javascript", ".mjs": "application/javascript",
                      ".woff": "font/woff", ".woff2": "font/woff2", ".svg": "image/svg+xml"}
    _cache: dict[tuple[str, float], bytes] = {}

    def log_message(self, *args: object) -> None:
        pass

    def end_headers(self) -> None:
        self.send_header("Cache-Control", "max-age=600")
        super().end_headers()

    def send_head(self):  # noqa: D102 - SimpleHTTPRequestHandler's hook
        path = Path(self.translate_path(self.path))
        if path.is_dir():
            path = path / "index.html"
        ctype = self.guess_type(str(path))
        wants_gzip = "gzip" in self.headers.get("Accept-Encoding", "")
        if not (path.is_file() and wants_gzip and ctype.startswith(COMPRESSED_TYPES)):
            return super().send_head()
        key = (str(path), path.stat().st_mtime)
        body = self._cache.get(key)
        if body is None:
            body = gzip.compress(path.read_bytes(), compresslevel=9, mtime=0)
            self._cache[key] = body
        self.send_response(200)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Encoding", "gzip")
        self.send_header("Vary", "Accept-Encoding")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        return _Body(body)


class _Body:
    """The file-like object send_head returns (copyfile reads it, then it is closed)."""

    def __init__(self, data: bytes) -> None:
        self.data = data

    def read(self, size: int = -1) -> bytes:
        data, self.data = self.data, b""
        return data

    def close(self) -> None:
        pass


def serve(directory: str | os.PathLike, port: int = 0) -> http.server.ThreadingHTTPServer:
    """Start serving ``directory`` on 127.0.0.1 in a daemon thread; returns the server."""
    handler = functools.partial(GzipHandler, directory=str(directory))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", port), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


if __name__ == "__main__":
    root = sys.argv[1] if len(sys.argv) > 1 else "_build/html"
    port = int(sys.argv[2]) if len(sys.argv) > 2 else 8000
    srv = serve(root, port)
    print(f"serving {root} gzip-compressed on http://127.0.0.1:{srv.server_address[1]}")
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        srv.shutdown()
