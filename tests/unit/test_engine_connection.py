"""The engine's HTTP connection (``store/http.py``) against a small HTTP server of the standard
library: what opensearch-py's own connection answered, it answers (the real engine behind it is
every integration test's)."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, ClassVar

import pytest
from opensearchpy import OpenSearch
from opensearchpy.exceptions import ConnectionError as OSConnectionError
from opensearchpy.exceptions import ConnectionTimeout, NotFoundError, TransportError

from brain_search.config import Settings
from brain_search.store.client import make_client
from brain_search.store.http import EngineConnection


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    seen: ClassVar[list[tuple[str, str, dict[str, str], bytes]]] = []
    close_after = False

    def _answer(self, status: int, body: bytes, content_type: str = "application/json") -> None:
        self.send_response(status)
        self.send_header("content-type", content_type)
        self.send_header("content-length", str(len(body)))
        if Handler.close_after:
            self.send_header("connection", "close")
        self.end_headers()
        self.wfile.write(body)
        if Handler.close_after:
            self.close_connection = True

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("content-length", 0)))
        Handler.seen.append(("POST", self.path, {k.lower(): v for k, v in self.headers.items()}, body))
        if self.path.startswith("/slow"):
            time.sleep(1.0)
        if self.path.startswith("/pause"):
            time.sleep(0.2)
        if self.path.startswith("/missing"):
            self._answer(404, b'{"error":{"type":"index_not_found_exception","reason":"no such index"},"status":404}')
            return
        self._answer(200, json.dumps({"path": self.path, "got": len(body), "text": "héllo"}).encode())

    def do_GET(self) -> None:
        Handler.seen.append(("GET", self.path, dict(self.headers), b""))
        self._answer(200, b"green 1\n", "text/plain; charset=UTF-8")

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture()
def server() -> Iterator[str]:
    Handler.seen, Handler.close_after = [], False
    srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{srv.server_address[1]}"
    srv.shutdown()
    srv.server_close()


def client(url: str, **settings: Any) -> OpenSearch:
    return make_client(Settings(opensearch_url=url, opensearch_timeout_s=0.5, **settings))


def test_the_client_is_built_on_this_connection(server: str) -> None:
    conn = client(server).transport.connection_pool.connection
    assert isinstance(conn, EngineConnection) and conn.pool is None


def test_json_is_parsed_text_stays_text_and_the_headers_carry_the_auth(server: str) -> None:
    c = client(server, opensearch_user="api", opensearch_password="s3cret")
    got = c.msearch(body='{}\n{"query":{"match_all":{}}}\n', index="idx", params={"routing": "t1"})
    assert got == {"path": "/idx/_msearch?routing=t1", "got": 30, "text": "héllo"}
    assert c.transport.perform_request("GET", "/_cat/health") == "green 1\n"
    _, _, headers, body = Handler.seen[0]
    assert headers["authorization"] == "Basic YXBpOnMzY3JldA==" and body.endswith(b"\n")
    assert headers["content-length"] == str(len(body))


def test_connections_are_reused_and_one_the_server_closed_is_replaced(server: str) -> None:
    c = client(server)
    conn = c.transport.connection_pool.connection
    for _ in range(3):
        c.msearch(body="{}\n{}\n", index="idx")
    assert len(conn._idle) == 1  # one request at a time: one connection, kept
    Handler.close_after = True
    c.msearch(body="{}\n{}\n", index="idx")
    assert conn._idle == []  # the server said close: not kept
    Handler.close_after = False
    c.msearch(body="{}\n{}\n", index="idx")
    kept = conn._idle[0]
    assert kept.sock is not None
    kept.sock.shutdown(socket.SHUT_RDWR)  # as if the engine had closed it while idle
    assert c.msearch(body="{}\n{}\n", index="idx")["got"] == 6


def test_concurrent_requests_each_have_a_connection_and_the_pool_keeps_its_size(server: str) -> None:
    c = client(server, opensearch_pool_size=2)
    conn = c.transport.connection_pool.connection
    threads = [threading.Thread(target=c.msearch, kwargs={"body": "{}\n{}\n", "index": "pause"}) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(Handler.seen) == 6
    assert conn.maxsize == 2 and len(conn._idle) == 2  # six opened at once, two kept


def test_an_error_status_is_opensearch_pys_exception(server: str) -> None:
    c = client(server)
    with pytest.raises(NotFoundError) as err:
        c.msearch(body="{}\n{}\n", index="missing")
    assert err.value.status_code == 404 and err.value.error == "index_not_found_exception"


def test_a_slow_engine_is_a_timeout_and_a_closed_port_a_connection_error(server: str) -> None:
    c = client(server)
    c.transport.max_retries = 0
    with pytest.raises(ConnectionTimeout):
        c.msearch(body="{}\n{}\n", index="slow")
    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()
    closed = client(f"http://127.0.0.1:{port}")
    closed.transport.max_retries = 0
    with pytest.raises(OSConnectionError) as err:
        closed.msearch(body="{}\n{}\n", index="idx")
    assert isinstance(err.value, TransportError)
