"""The local debug server: one self-contained HTML page and JSON endpoints, behind a token.

It listens on 127.0.0.1 only. Every request must carry the server's token, as Jupyter's do:
``?token=...`` in the URL (the page passes it on to its own requests) or an
``Authorization: token ...`` header, and name the server as ``127.0.0.1:<port>`` or
``localhost:<port>`` in its Host header; anything else is answered 403.

Endpoints: ``/`` the page; ``/api/operators``; ``/api/runs``; ``/api/runs/<id>`` (a run with
every intermediate's statistics, histogram and heatmap); ``/api/runs/<id>/<index>/values``
(the leading elements of one intermediate, ``?limit=`` at most 10000).
"""

from __future__ import annotations

import hmac
import json
import secrets
import threading
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources
from typing import Any, Dict, List, Optional, Tuple
from urllib.parse import parse_qs, urlparse

from ..errors import InvalidArgumentError
from . import _store


def _operator_info(op: Any) -> Dict[str, Any]:
    """Name, device, options and compile count of one operator."""
    try:
        opts = dict(op.options)
        compiles = int(op.cache_info().compiles)
    except Exception:  # noqa: BLE001 - a listed object without these still shows its name
        opts, compiles = {}, 0
    return {"name": str(getattr(op, "__name__", type(op).__name__)), "debug": bool(opts.get("debug", False)),
            "device": str(getattr(op, "device", "")), "compiles": compiles,
            "options": {k: v for k, v in opts.items() if isinstance(v, (bool, int, float, str, type(None)))}}


def operators_json() -> List[Dict[str, Any]]:
    """Return the operators of the process with their run counts, sorted by name."""
    runs = _store.runs()
    listed = sorted((_operator_info(op) for op in _store.operators()), key=lambda o: o["name"])
    names = {o["name"] for o in listed}
    for r in runs:  # operators already collected still show with their runs
        if r.operator not in names:
            names.add(r.operator)
            listed.append({"name": r.operator, "debug": True, "device": "", "compiles": 0, "options": {}})
    for o in listed:
        o["runs"] = sum(1 for r in runs if r.operator == o["name"])
    return listed


def run_json(run: _store.Run) -> Dict[str, Any]:
    """Return a run with every intermediate's summary and source line."""
    out = run.summary()
    out["intermediates"] = [
        {"index": it.index, "kernel": it.kernel, "op": it.op, "source": it.source,
         "locations": [{"file": f, "line": n} for f, n in it.locations], **it.stats}
        for it in run.intermediates
    ]
    return out


class _Handler(BaseHTTPRequestHandler):
    """Answers one request (the server's token is on ``self.server``)."""

    server: _HttpServer

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's name
        """Keep the console quiet (requests are not logged)."""

    def _send(self, status: int, body: bytes, ctype: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header("Content-Security-Policy",
                         "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; "
                         "img-src data:; connect-src 'self'")
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _json(self, status: int, value: Any) -> None:
        self._send(status, json.dumps(value, allow_nan=False).encode(), "application/json")

    def _authorized(self, query: Dict[str, List[str]]) -> bool:
        given = query.get("token", [""])[0]
        header = self.headers.get("Authorization", "")
        if header.lower().startswith("token "):
            given = header[6:].strip()
        return hmac.compare_digest(given.encode(), self.server.token.encode())

    def do_HEAD(self) -> None:  # noqa: N802 - http.server's name
        """Answer like GET, without a body."""
        self.do_GET()

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        """Serve the page and the JSON endpoints."""
        url = urlparse(self.path)
        query = parse_qs(url.query)
        host = self.headers.get("Host", "")
        if host not in self.server.hosts:  # another name resolving here (DNS rebinding)
            self._send(HTTPStatus.FORBIDDEN, b"403 Forbidden: unexpected Host header\n", "text/plain; charset=utf-8")
            return
        if not self._authorized(query):
            self._send(HTTPStatus.FORBIDDEN, b"403 Forbidden: open the URL with its token (see the console)\n",
                       "text/plain; charset=utf-8")
            return
        parts = [p for p in url.path.split("/") if p]
        try:
            status, value = self._route(parts, query)
        except Exception as e:  # noqa: BLE001 - a broken summary is an error response, not a dead server
            self._json(HTTPStatus.INTERNAL_SERVER_ERROR, {"error": f"{type(e).__name__}: {e}"})
            return
        if isinstance(value, bytes):
            self._send(status, value, "text/html; charset=utf-8")
        else:
            self._json(status, value)

    def _route(self, parts: List[str], query: Dict[str, List[str]]) -> Tuple[int, Any]:
        if not parts:
            return HTTPStatus.OK, page_html()
        if parts[0] != "api":
            return HTTPStatus.NOT_FOUND, {"error": "not found"}
        if parts[1:] == ["operators"]:
            return HTTPStatus.OK, {"operators": operators_json()}
        if parts[1:] == ["runs"]:
            return HTTPStatus.OK, {"runs": [r.summary() for r in _store.runs()]}
        if len(parts) in (3, 5) and parts[1] == "runs" and parts[2].isdigit():
            run = _store.run_by_id(int(parts[2]))
            if run is None:
                return HTTPStatus.NOT_FOUND, {"error": f"no run {parts[2]}"}
            if len(parts) == 3:
                return HTTPStatus.OK, run_json(run)
            if parts[4] == "values" and parts[3].isdigit() and int(parts[3]) < len(run.intermediates):
                arr = run.intermediates[int(parts[3])].array
                limit = query.get("limit", ["1000"])[0]
                n = min(int(limit) if limit.isdigit() else 1000, 10000)
                flat = arr.reshape(-1)[:n].astype(float)
                return HTTPStatus.OK, {"shape": list(arr.shape), "values": [
                    v if v == v and abs(v) != float("inf") else None for v in flat.tolist()]}
        return HTTPStatus.NOT_FOUND, {"error": "not found"}


class _HttpServer(ThreadingHTTPServer):
    daemon_threads = True
    token: str
    hosts: Tuple[str, ...]


_PAGE: Optional[bytes] = None


def page_html() -> bytes:
    """Return the debugger page (read once from the package)."""
    global _PAGE
    if _PAGE is None:
        _PAGE = resources.files(__package__).joinpath("page.html").read_bytes()
    return _PAGE


class DebugServer:
    """A running debug server: ``.url`` (with its token), ``.port``, ``.token``, ``.stop()``.

    Made by :func:`pyasc.debug.serve`. Usable as a context manager (stops on exit). While it
    runs, ``debug=True`` operators keep every op's result (the last 200 runs, at most
    1 GiB of results: ``_store.MAX_RUNS``, ``_store.MAX_BYTES``).
    """

    def __init__(self, port: int = 9090, token: Optional[str] = None) -> None:
        if isinstance(port, bool) or not isinstance(port, int) or not 0 <= port <= 65535:
            raise InvalidArgumentError(f"port must be an int from 0 to 65535, not {port!r}")
        if token is not None and (not isinstance(token, str) or not token):
            raise InvalidArgumentError(f"token must be a non-empty string, not {token!r}")
        self.token = token or secrets.token_hex(24)
        try:
            self._http = _HttpServer(("127.0.0.1", port), _Handler)
        except OSError as e:
            raise InvalidArgumentError(f"cannot serve on 127.0.0.1:{port}: {e.strerror or e}") from None
        self._http.token = self.token
        self.port = int(self._http.server_address[1])
        self._http.hosts = (f"127.0.0.1:{self.port}", f"localhost:{self.port}")
        self.url = f"http://127.0.0.1:{self.port}/?token={self.token}"
        self._thread = threading.Thread(target=self._http.serve_forever, name="pyasc-debug-server", daemon=True)
        self._stopped = False
        _store.server_started()
        self._thread.start()

    def stop(self) -> None:
        """Stop serving and release the port; the kept results are dropped if nothing else captures."""
        if self._stopped:
            return
        self._stopped = True
        self._http.shutdown()
        self._http.server_close()
        self._thread.join()
        _store.server_stopped()

    @property
    def running(self) -> bool:
        """Whether the server still answers."""
        return not self._stopped

    def __enter__(self) -> DebugServer:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    def __repr__(self) -> str:
        return f"<pyasc.debug.DebugServer {self.url if self.running else 'stopped'}>"
