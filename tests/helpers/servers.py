"""A server in a subprocess, the way the tests of the real processes start one.

``serve`` starts a command (uvicorn with the embedded app, ``cow006 api``, ``cow006 serve``)
on a free loopback port, in an environment that holds no COW006_* variable but the test's,
its output in a file; ``wait_http`` waits until it answers; ``stop`` ends it with SIGTERM (and
SIGKILL when that is not enough).  ``wait_for`` polls any check.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

# The API of the embedded arena (the workers' code in-process) under uvicorn, without a port.
EMBEDDED_APP = [
    *(sys.executable, "-m", "uvicorn", "--factory", "cow006_workers.embedded:embedded_app"),
    *("--host", "127.0.0.1"),
]


def free_port() -> int:
    """A TCP port of the loopback that nothing listens on (as of now)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def clean_env(**variables: str) -> dict[str, str]:
    """This process's environment without its COW006_* settings, plus ``variables``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("COW006_")}
    env.update(variables)
    return env


def wait_for(check: Callable[[], Any], timeout: float, every: float = 0.2) -> Any:
    """Poll ``check`` until it returns something true; that value (AssertionError on timeout)."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"not true within {timeout} s: {check}")
        time.sleep(every)


@dataclass
class Server:
    """A server process on ``port`` of the loopback; its output (stdout and stderr) in ``out``."""

    proc: subprocess.Popen[bytes]
    port: int
    out: Path

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def output(self) -> str:
        """The end of what the server wrote."""
        return self.out.read_text(errors="replace")[-3000:]


def spawn(
    argv: Sequence[str], *, cwd: Path, env: dict[str, str], out: Path, session: bool = False
) -> subprocess.Popen[bytes]:
    """Start ``argv`` in ``cwd``, its stdout and stderr to the file ``out``; with ``session``
    in a session of its own (so that a test can kill it with all its descendants)."""
    with open(out, "wb") as sink:  # the child keeps its own copy of the descriptor
        return subprocess.Popen(
            argv, cwd=cwd, env=env, stdout=sink, stderr=subprocess.STDOUT, start_new_session=session
        )


def serve(argv: Sequence[str], *, cwd: Path, env: dict[str, str], out: Path) -> Server:
    """Start ``argv`` followed by ``--port PORT`` (a free one) in ``cwd``; its output to ``out``."""
    port = free_port()
    return Server(spawn([*argv, "--port", str(port)], cwd=cwd, env=env, out=out), port, out)


def wait_http(server: Server, path: str, timeout: float = 60) -> None:
    """Wait until GET ``path`` answers 200; fail with the server's output if it exits first or
    does not answer within ``timeout`` seconds."""

    def answers() -> bool:
        assert server.proc.poll() is None, server.output()
        try:
            return httpx.get(server.base + path, timeout=2).status_code == 200
        except httpx.HTTPError:
            return False

    try:
        wait_for(answers, timeout)
    except AssertionError as exc:
        raise AssertionError(f"{server.base}{path} did not answer: {server.output()}") from exc


def stop(server: Server, timeout: float = 30) -> int:
    """SIGTERM, then SIGKILL if the server is still there after ``timeout`` s; its status."""
    server.proc.send_signal(signal.SIGTERM)
    try:
        return server.proc.wait(timeout)
    except subprocess.TimeoutExpired:
        server.proc.kill()
        return server.proc.wait(10)
