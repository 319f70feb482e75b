"""The engine's HTTP connection: opensearch-py's ``Connection`` on the standard library's
``http.client``, for the API's CPU per recall (issue 56, item 3).

opensearch-py's default connection goes through urllib3, whose round trip costs more client CPU
than ``http.client``'s (``lab/scripts/bench_transport.py``: a recall's 18 KB ``_msearch`` 0.64
against 0.44 ms, medians of alternating rounds), and it decodes every answer to a ``str`` that
the JSON parser then encodes back to bytes. This connection keeps what opensearch-py
decides (the headers and basic auth of ``Urllib3HttpConnection``, its exceptions, its logging, the
``Transport``'s retries and dead-host handling), and does the round trip itself:

- a pool of ``http.client`` connections per host (last in, first out, at most ``pool_maxsize``
  kept), each used by one request at a time;
- a pooled connection the engine has closed (it is readable before a request is sent) is replaced,
  as urllib3 does; any failure of a request closes its connection;
- TLS through one ``ssl.SSLContext`` built from ``verify_certs`` / ``ca_certs`` (hostname checked
  when certificates are);
- a successful JSON answer is handed to the deserializer as bytes (orjson reads them as they are);
  anything else as text, as before.
"""

from __future__ import annotations

import http.client
import select
import ssl
import threading
import time
from collections.abc import Collection, Mapping
from typing import Any
from urllib.parse import urlencode

from opensearchpy import Urllib3HttpConnection
from opensearchpy.exceptions import ConnectionError as OSConnectionError
from opensearchpy.exceptions import ConnectionTimeout, SSLError

DEFAULT_POOL = 10


def tls_context(verify_certs: bool, ca_certs: str | None) -> ssl.SSLContext:
    """The context every TLS connection to the engine uses."""
    if not verify_certs:
        ctx = ssl.create_default_context()
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
        return ctx
    return ssl.create_default_context(cafile=ca_certs)


def dropped(conn: http.client.HTTPConnection) -> bool:
    """Whether an idle pooled connection can no longer be used: closed, or readable before a
    request was sent (the engine closed it, or sent what no request asked for)."""
    sock = conn.sock
    if sock is None:
        return True
    try:
        readable, _, _ = select.select([sock], [], [], 0.0)
    except (OSError, ValueError):
        return True
    return bool(readable)


class EngineConnection(Urllib3HttpConnection):
    """``Urllib3HttpConnection``'s configuration with the round trip on ``http.client``."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        verify = kwargs.get("verify_certs")
        ca_certs = kwargs.get("ca_certs")
        maxsize = kwargs.get("pool_maxsize")
        super().__init__(*args, **kwargs)
        self.pool = None  # urllib3's pool is never used (``_create_urllib3_pool`` is not called again)
        self.maxsize = maxsize if isinstance(maxsize, int) and maxsize > 0 else DEFAULT_POOL
        self._idle: list[http.client.HTTPConnection] = []
        self._lock = threading.Lock()
        self._tls: ssl.SSLContext | None = None
        if self.use_ssl:  # ``super().__init__`` has refused verification without any CA certificates
            verified = verify is not False
            self._tls = tls_context(verified, (ca_certs or self.default_ca_certs()) if verified else None)

    def _create_urllib3_pool(self) -> None:
        """No urllib3 pool: connections are this class's own."""

    # ------------------------------------------------------------------ the pool
    def _new(self, timeout: float) -> http.client.HTTPConnection:
        if self._tls is not None:
            return http.client.HTTPSConnection(self.hostname, self.port, timeout=timeout, context=self._tls)
        return http.client.HTTPConnection(self.hostname, self.port, timeout=timeout)

    def _take(self, timeout: float) -> http.client.HTTPConnection:
        while True:
            with self._lock:
                conn = self._idle.pop() if self._idle else None
            if conn is None:
                return self._new(timeout)
            if dropped(conn):
                conn.close()
                continue
            conn.timeout = timeout
            if conn.sock is not None:
                conn.sock.settimeout(timeout)
            return conn

    def _give_back(self, conn: http.client.HTTPConnection) -> None:
        with self._lock:
            if len(self._idle) < self.maxsize:
                self._idle.append(conn)
                return
        conn.close()

    def close(self) -> None:
        with self._lock:
            idle, self._idle = self._idle, []
        for conn in idle:
            conn.close()

    # ------------------------------------------------------------------ one request
    def perform_request(
        self,
        method: str,
        url: str,
        params: Mapping[str, Any] | None = None,
        body: bytes | None = None,
        timeout: int | float | None = None,
        ignore: Collection[int] = (),
        headers: Mapping[str, str] | None = None,
    ) -> Any:
        url = self.url_prefix + url
        if params:
            url = f"{url}?{urlencode(params)}"
        full_url = self.host + url
        request_headers = self.headers.copy()
        request_headers.update(headers or ())
        if self.http_compress and body:
            body = self._gzip_compress(body)
            request_headers["content-encoding"] = "gzip"
        if self.http_auth is not None and callable(self.http_auth):
            request_headers.update(self.http_auth(method, full_url, body))
        if body is not None:
            request_headers["content-length"] = str(len(body))

        start = time.time()
        self.metrics.request_start()
        conn = self._take(float(timeout or self.timeout))
        try:
            conn.request(method, url, body=body, headers=request_headers)
            response = conn.getresponse()
            data = response.read()
        except Exception as e:
            conn.close()
            self.log_request_fail(method, full_url, url, body, time.time() - start, exception=e)
            if isinstance(e, ssl.SSLError):
                raise SSLError("N/A", str(e), e) from e
            if isinstance(e, TimeoutError):  # socket.timeout is an alias of it
                raise ConnectionTimeout("TIMEOUT", str(e), e) from e
            raise OSConnectionError("N/A", str(e), e) from e
        finally:
            self.metrics.request_end()
        duration = time.time() - start
        if response.will_close:
            conn.close()
        else:
            self._give_back(conn)

        self._raise_warnings(response.headers.get_all("warning") or ())
        content_type = response.headers.get("content-type")
        if not (200 <= response.status < 300) and response.status not in ignore:
            text = data.decode("utf-8", "surrogatepass")
            self.log_request_fail(method, full_url, url, body, duration, response.status, text)
            self._raise_error(response.status, text, content_type)
        raw: str | bytes = data
        if not data or not (content_type or "").startswith("application/json"):
            raw = data.decode("utf-8", "surrogatepass")
        self.log_request_success(method, full_url, url, body, response.status, raw, duration)  # type: ignore[arg-type]
        return response.status, response.headers, raw
