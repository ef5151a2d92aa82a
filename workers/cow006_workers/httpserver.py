"""The API's HTTP server: uvicorn with the limits a server facing the internet needs.

``cow006 api`` and ``cow006 serve`` both run the API through ``run_api``:

* **header-read timeout**: uvicorn has none (a connection that sends nothing, or a header a
  byte a minute, is held for ever: a thousand of them take a process's file descriptors).
  ``GuardedHttpToolsProtocol`` gives each connection ``COW006_HEADER_TIMEOUT`` seconds from
  its opening (or from its previous answer) to send a request's headers in full, and closes it
  otherwise; headers are at most ``COW006_MAX_HEADER_BYTES`` (a 431 past that);
* **idle keep-alive**: ``COW006_KEEPALIVE_SECONDS`` (uvicorn's ``timeout_keep_alive``);
* **connections at once**: ``COW006_MAX_CONNECTIONS`` per process (uvicorn's
  ``limit_concurrency``: past it, a 503 at once instead of running out of descriptors);
* **/metrics on its own address** when ``COW006_METRICS=bind``: the same processes listen on
  ``COW006_METRICS_BIND`` too, and the app answers only ``/metrics`` there (and never on the
  API's address).

A slow *body* (a trickle within the caps of ``cow006_platform.limits``) is bounded by those
caps and the connection limit, not by a rate: put a reverse proxy in front (it buffers bodies
and enforces a minimum rate) when the API faces the internet (docs/operations.md).
"""

from __future__ import annotations

import asyncio
import socket
import sys
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from cow006_platform.settings import Settings, get_settings

APP = "cow006_workers.serve:api_app"


class HeadersTooLarge(Exception):
    """A request's headers passed ``max_header_bytes``."""


class GuardedHttpToolsProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol with a header-read timeout and a header size cap."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        settings = get_settings()  # read once per process (cached)
        self.header_timeout = settings.header_timeout
        self.max_header_bytes = settings.max_header_bytes
        self._header_timer: asyncio.TimerHandle | None = None
        self._reading_headers = False
        self._header_bytes = 0
        self._too_large = False

    def _arm(self) -> None:
        self._disarm()
        self._reading_headers = True
        self._header_timer = self.loop.call_later(self.header_timeout, self._headers_too_slow)

    def _disarm(self) -> None:
        self._reading_headers = False
        if self._header_timer is not None:
            self._header_timer.cancel()
            self._header_timer = None

    def _headers_too_slow(self) -> None:
        self._header_timer = None
        if self._reading_headers and not self.transport.is_closing():
            self.transport.close()

    # uvicorn's own signature, which narrows asyncio's BaseTransport (and ignores it the same).
    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    # Header bytes are counted as the parser reads them; past the cap the parser is stopped
    # (an exception in its callback), which uvicorn answers with send_400_response: a 431.
    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._header_bytes = 0
        self._too_large = False

    def _count(self, n: int) -> None:
        self._header_bytes += n
        if self._header_bytes > self.max_header_bytes:
            self._too_large = True
            raise HeadersTooLarge

    def on_url(self, url: bytes) -> None:
        self._count(len(url))
        super().on_url(url)

    def on_header(self, name: bytes, value: bytes) -> None:
        self._count(len(name) + len(value) + 4)
        super().on_header(name, value)

    def send_400_response(self, msg: str) -> None:
        if not self._too_large:
            super().send_400_response(msg)
            return
        self._disarm()
        body = b"request headers too large"
        self.transport.write(
            b"HTTP/1.1 431 Request Header Fields Too Large\r\ncontent-type: text/plain\r\n"
            b"connection: close\r\ncontent-length: %d\r\n\r\n%s" % (len(body), body)
        )
        self.transport.close()

    def on_headers_complete(self) -> None:
        self._disarm()
        super().on_headers_complete()

    def on_response_complete(self) -> None:
        waiting = bool(self.pipeline)  # a pipelined request (headers read) starts next
        super().on_response_complete()
        if not waiting and not self.transport.is_closing():
            self._arm()  # the next request's headers, within the timeout again


def parse_address(address: str) -> tuple[str, int]:
    """``host:port`` (``[v6]:port`` too) as (host, port); ValueError if it is not one."""
    host, sep, port = address.rpartition(":")
    if not sep or not port.isdigit() or not host:
        raise ValueError(f"not a host:port address: {address!r}")
    return host.strip("[]"), int(port)


def _listen(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.set_inheritable(True)
    return sock


def uvicorn_options(settings: Settings) -> dict[str, Any]:
    """The uvicorn options of the served configuration (see the module)."""
    return {
        "http": GuardedHttpToolsProtocol,
        "timeout_keep_alive": max(1, round(settings.keepalive_seconds)),
        "limit_concurrency": settings.max_connections,
        "h11_max_incomplete_event_size": settings.max_header_bytes,
    }


def run_api(host: str, port: int, workers: int, loglevel: str, *, access_log: bool = True) -> None:
    """Serve ``api_app`` with the limits above until stopped (uvicorn's signal handling)."""
    import uvicorn
    from uvicorn.supervisors import Multiprocess

    settings = Settings()
    config = uvicorn.Config(
        APP,
        factory=True,
        host=host,
        port=port,
        workers=workers,
        log_level=loglevel,
        access_log=access_log,
        **uvicorn_options(settings),
    )
    sockets = [config.bind_socket()]
    if settings.metrics == "bind":
        sockets.append(_listen(*parse_address(settings.metrics_bind)))
    server = uvicorn.Server(config)
    if workers > 1:
        Multiprocess(config, sockets=sockets).run()
        return
    server.run(sockets=sockets)
    if not server.started:
        sys.exit(3)  # uvicorn's STARTUP_FAILURE
