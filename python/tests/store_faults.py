"""Faulty stores for the storage tests, stdlib only, on 127.0.0.1, started by the test itself.

- `Proxy` forwards every request to the S3 server under test (moto) and can
  drop the conditional headers (`If-None-Match`, `If-Match`), as some
  S3-compatible stores and proxies do, and fail every multipart part upload
  (400 `InvalidPart`) with the abort that follows answering 404 `NoSuchUpload`,
  or fail every ranged GET of a key containing a given text (500 `InternalError`),
  or, once `mute` is set, take requests and never answer (`muted` counts them), or with
  `mute_lists` so only its listings (`?list-type=2`).
- `MuteServer` accepts connections and never answers.
"""

from __future__ import annotations

import http.client
import socket
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

CONDITIONAL = ("if-none-match", "if-match")
HOP_BY_HOP = ("connection", "keep-alive", "transfer-encoding", "proxy-connection", "upgrade", "te", "trailer")


def _xml_error(code: str, message: str) -> bytes:
    return (f'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>{code}</Code><Message>{message}</Message>'
            f"<RequestId>injected</RequestId></Error>").encode()


class Proxy:
    """An HTTP proxy in front of `upstream` (http://127.0.0.1:PORT); `url` is its own address."""

    def __init__(self, upstream: str, *, strip_conditions: bool = False, fail_parts: bool = False,
                 fail_ranged_gets_of: str | None = None) -> None:
        target = urllib.parse.urlsplit(upstream)
        self.strip_conditions = strip_conditions
        self.fail_parts = fail_parts
        self.fail_ranged_gets_of = fail_ranged_gets_of
        self.mute = False
        self.mute_lists = False
        self.muted = 0
        self._closing = threading.Event()
        self.stripped = 0
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def _answer(self, status: int, headers: list[tuple[str, str]], body: bytes) -> None:
                self.send_response(status)
                # a HEAD's answer has no body but the object's length
                length = next((v for k, v in headers if k.lower() == "content-length"), "0")
                for k, v in headers:
                    if k.lower() not in HOP_BY_HOP and k.lower() != "content-length":
                        self.send_header(k, v)
                self.send_header("Content-Length", length if self.command == "HEAD" else str(len(body)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(body)

            def _forward(self) -> None:
                if proxy.mute or (proxy.mute_lists and self.command == "GET" and "list-type=" in self.path):
                    proxy.muted += 1
                    proxy._closing.wait()
                    self.close_connection = True
                    return
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                query = urllib.parse.parse_qs(urllib.parse.urlsplit(self.path).query, keep_blank_values=True)
                if proxy.fail_parts and self.command == "PUT" and "partNumber" in query:
                    return self._answer(400, [("Content-Type", "application/xml")],
                                        _xml_error("InvalidPart", "injected part failure"))
                if proxy.fail_parts and self.command == "DELETE" and "uploadId" in query:
                    return self._answer(404, [("Content-Type", "application/xml")],
                                        _xml_error("NoSuchUpload", "The specified upload does not exist."))
                failing = proxy.fail_ranged_gets_of
                if failing and self.command == "GET" and "Range" in self.headers and failing in self.path:
                    return self._answer(500, [("Content-Type", "application/xml")],
                                        _xml_error("InternalError", "injected read failure"))
                headers = {}
                for k, v in self.headers.items():
                    if k.lower() in HOP_BY_HOP:
                        continue
                    if proxy.strip_conditions and k.lower() in CONDITIONAL:
                        proxy.stripped += 1
                        continue
                    headers[k] = v
                conn = http.client.HTTPConnection(target.hostname, target.port, timeout=60)
                try:
                    conn.request(self.command, self.path, body=body, headers=headers)
                    r = conn.getresponse()
                    data = r.read()
                    self._answer(r.status, r.getheaders(), data)
                finally:
                    conn.close()

            do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = _forward

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def __enter__(self) -> Proxy:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._closing.set()
        self._server.shutdown()
        self._server.server_close()


class MuteServer:
    """Accepts TCP connections on 127.0.0.1 and never answers; `url` is its address."""

    def __init__(self) -> None:
        self._sock = socket.socket()
        self._sock.bind(("127.0.0.1", 0))
        self._sock.listen(64)
        self.url = f"http://127.0.0.1:{self._sock.getsockname()[1]}"
        self._held: list[socket.socket] = []
        self._stop = False
        self._thread = threading.Thread(target=self._accept, daemon=True)

    def _accept(self) -> None:
        while not self._stop:
            try:
                conn, _ = self._sock.accept()
            except OSError:
                return
            self._held.append(conn)

    def __enter__(self) -> MuteServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop = True
        self._sock.close()
        for c in self._held:
            c.close()
