"""A local Redis on loopback for the broker / result backend: installed from Debian's packages
when missing, started as a daemon with its files under the cache dir."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

from brain_search.config import Settings
from brain_search.errors import SetupError


def _ping(port: int, timeout: float = 0.5) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
            s.sendall(b"PING\r\n")
            return s.recv(16).startswith(b"+PONG")
    except OSError:
        return False


def ensure_redis_installed(log: Callable[[str], None] = print) -> str:
    exe = shutil.which("redis-server")
    if exe:
        return exe
    apt = shutil.which("apt-get")
    if not apt or os.geteuid() != 0:
        raise SetupError("redis-server is missing; install Debian's redis-server package (needs root)")
    log("installing redis-server from Debian's packages")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    for cmd in ([apt, "update", "-qq"], [apt, "install", "-y", "-qq", "redis-server"]):
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
        if proc.returncode != 0:
            raise SetupError(f"{' '.join(cmd[1:3])} failed", "\n".join(proc.stderr.splitlines()[-20:]))
    exe = shutil.which("redis-server")
    if not exe:
        raise SetupError("redis-server is still missing after apt-get install")
    return exe


class LocalRedis:
    def __init__(self, settings: Settings, port: int | None = None, log: Callable[[str], None] = print) -> None:
        self.port = port or settings.redis_port
        self.dir: Path = settings.cache_dir / "redis" / str(self.port)
        self.log = log

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    @property
    def pid_file(self) -> Path:
        return self.dir / "redis.pid"

    def running(self) -> bool:
        return _ping(self.port)

    def start(self, timeout_s: float = 15.0) -> str:
        """Start (or reuse) Redis with append-only persistence; returns its URL."""
        if self.running():
            return self.url
        exe = ensure_redis_installed(self.log)
        self.dir.mkdir(parents=True, exist_ok=True)
        args = [
            exe,
            "--port", str(self.port),
            "--bind", "127.0.0.1",
            "--daemonize", "yes",
            "--dir", str(self.dir),
            "--pidfile", str(self.pid_file),
            "--logfile", str(self.dir / "redis.log"),
            "--appendonly", "yes",
            "--appendfsync", "always",  # a 202 for a queued task survives a crash of Redis
            "--save", "",
        ]  # fmt: skip
        self.log(f"starting redis on 127.0.0.1:{self.port}")
        proc = subprocess.run(args, capture_output=True, text=True, check=False)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.running():
                return self.url
            time.sleep(0.1)
        log = self.dir / "redis.log"
        tail = "\n".join(log.read_text(errors="replace").splitlines()[-20:]) if log.exists() else proc.stderr
        raise SetupError(f"redis did not answer on port {self.port}", tail)

    def pid(self) -> int | None:
        try:
            return int(self.pid_file.read_text().strip())
        except (OSError, ValueError):
            return None

    def stop(self, sig: int = signal.SIGTERM) -> None:
        pid = self.pid()
        if pid is None:
            return
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            self.pid_file.unlink(missing_ok=True)
            return
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline and self.running():
            time.sleep(0.1)
        self.pid_file.unlink(missing_ok=True)
