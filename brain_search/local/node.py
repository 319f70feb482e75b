"""Run OpenSearch (with k-NN) as local background processes: one node, or N nodes on loopback
ports forming one cluster.

Each node gets its own config, data and log folders under the cache dir (never the repo). As
root, nodes run as an unprivileged system user (OpenSearch refuses to run as root).
"""

from __future__ import annotations

import json
import os
import pwd
import shutil
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from brain_search.config import Settings
from brain_search.errors import SetupError
from brain_search.local.distribution import ensure_distribution, find_java, required_java

LOG_TAIL_LINES = 40


@dataclass(frozen=True)
class NodeSpec:
    name: str
    http_port: int
    transport_port: int
    dir: Path

    @property
    def config_dir(self) -> Path:
        return self.dir / "config"

    @property
    def data_dir(self) -> Path:
        return self.dir / "data"

    @property
    def logs_dir(self) -> Path:
        return self.dir / "logs"

    @property
    def pid_file(self) -> Path:
        return self.dir / "data" / "opensearch.pid"

    @property
    def console_log(self) -> Path:
        return self.dir / "console.log"


@dataclass(frozen=True)
class NodeStatus:
    name: str
    http_port: int
    pid: int | None
    alive: bool
    answering: bool


def _http_json(url: str, timeout: float = 2.0) -> dict | None:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as resp:
            return json.loads(resp.read().decode())
    except (urllib.error.URLError, OSError, ValueError):
        return None


def _port_open(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.settimeout(0.3)
        return s.connect_ex(("127.0.0.1", port)) == 0


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # a zombie child still "exists"; treat it as dead
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split()[2] != "Z"
    except OSError:
        return False


def _tail(path: Path, lines: int = LOG_TAIL_LINES) -> str:
    if not path.is_file():
        return ""
    return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])


def diagnose(log_text: str) -> str:
    """Turn a node's log into the most likely human reason it did not start."""
    checks = [
        (
            "can not run opensearch as root",
            "OpenSearch refuses to run as root (the run-as user was not applied)",
        ),
        ("BindException", "a port is already taken by another process"),
        ("Address already in use", "a port is already taken by another process"),
        ("OutOfMemoryError", "the JVM ran out of memory: raise BRAIN_OPENSEARCH_HEAP"),
        ("Cannot allocate memory", "the machine has too little free memory for the heap"),
        ("UnsupportedClassVersionError", "the Java version is too old for this OpenSearch"),
        ("was built for OpenSearch version", "the k-NN plugin does not match the OpenSearch version"),
        ("max virtual memory areas vm.max_map_count", "vm.max_map_count is too low"),
        ("AccessDeniedException", "a file or folder is not writable by the node's user"),
        (
            "UnsatisfiedLinkError",
            "a native library is missing (faiss needs the plugin's native libs; use lucene)",
        ),
    ]
    for needle, reason in checks:
        if needle in log_text:
            return reason
    return "the node exited or did not become healthy in time"


class LocalCluster:
    """N OpenSearch nodes on loopback, ports ``http_port .. http_port+N-1``."""

    def __init__(
        self,
        settings: Settings,
        nodes: int = 1,
        http_port: int | None = None,
        transport_port: int | None = None,
        *,
        cluster_name: str | None = None,
        log: Callable[[str], None] = print,
    ) -> None:
        if nodes < 1:
            raise SetupError("a cluster needs at least one node")
        self.settings = settings
        self.http_port = http_port or settings.opensearch_http_port
        self.transport_port = transport_port or settings.opensearch_transport_port
        self.cluster_name = cluster_name or f"brain-local-{self.http_port}"
        self.log = log
        base = settings.cache_dir / "clusters" / self.cluster_name
        self.nodes = [
            NodeSpec(f"node-{i + 1}", self.http_port + i, self.transport_port + i, base / f"node-{i + 1}")
            for i in range(nodes)
        ]

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.http_port}"

    # ---------------------------------------------------------------- preparation
    def _run_as(self) -> pwd.struct_passwd | None:
        if os.geteuid() != 0:
            return None
        user = self.settings.opensearch_run_as
        try:
            return pwd.getpwnam(user)
        except KeyError:
            useradd = shutil.which("useradd")
            if not useradd:
                raise SetupError(f"running as root and user {user!r} is missing; useradd is not available") from None
            subprocess.run(
                [useradd, "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", user],
                check=True,
                capture_output=True,
            )
            return pwd.getpwnam(user)

    def _write_config(self, home: Path, node: NodeSpec) -> None:
        for d in (node.config_dir, node.data_dir, node.logs_dir):
            d.mkdir(parents=True, exist_ok=True)
        # start from the distribution's config (log4j2, jvm.options), then ours on top
        for f in (home / "config").iterdir():
            target = node.config_dir / f.name
            if f.is_file() and f.name != "opensearch.yml" and not target.exists():
                shutil.copy2(f, target)
        if (home / "config" / "jvm.options.d").is_dir():
            (node.config_dir / "jvm.options.d").mkdir(exist_ok=True)
        # the stock jvm.options points GC logs, heap dumps and error files at relative paths
        jvm = (home / "config" / "jvm.options").read_text()
        jvm = jvm.replace("file=logs/gc.log", f"file={node.logs_dir}/gc.log")
        jvm = jvm.replace("-XX:HeapDumpPath=data", f"-XX:HeapDumpPath={node.data_dir}")
        jvm = jvm.replace("-XX:ErrorFile=logs/", f"-XX:ErrorFile={node.logs_dir}/")
        (node.config_dir / "jvm.options").write_text(jvm)
        lines = [
            f"cluster.name: {self.cluster_name}",
            f"node.name: {node.name}",
            "network.host: 127.0.0.1",
            f"http.port: {node.http_port}",
            f"transport.port: {node.transport_port}",
            f"path.data: {node.data_dir}",
            f"path.logs: {node.logs_dir}",
            "cluster.routing.allocation.disk.threshold_enabled: false",
            "action.auto_create_index: false",
            # an index is named in the path only, never in a _bulk/_msearch/_mget body: the path
            # rules of the engine gateway (gateway/rules.py) then bound what a role reaches
            "rest.action.multi.allow_explicit_index: false",
        ]
        if len(self.nodes) == 1:
            lines.append("discovery.type: single-node")
        else:
            seeds = ", ".join(f'"127.0.0.1:{n.transport_port}"' for n in self.nodes)
            managers = ", ".join(f'"{n.name}"' for n in self.nodes)
            lines += [
                f"discovery.seed_hosts: [{seeds}]",
                f"cluster.initial_cluster_manager_nodes: [{managers}]",
            ]
        (node.config_dir / "opensearch.yml").write_text("\n".join(lines) + "\n")

    def _chown_tree(self, path: Path, user: pwd.struct_passwd) -> None:
        for root, dirs, files in os.walk(path):
            os.chown(root, user.pw_uid, user.pw_gid)
            for n in dirs + files:
                os.lchown(os.path.join(root, n), user.pw_uid, user.pw_gid)

    # ---------------------------------------------------------------- lifecycle
    def health(self, timeout: float = 2.0) -> dict | None:
        return _http_json(f"{self.url}/_cluster/health", timeout)

    def is_ours_running(self) -> bool:
        info = _http_json(self.url)
        return bool(info and info.get("cluster_name") == self.cluster_name)

    def start(self, timeout_s: float | None = None) -> dict:
        """Start every node (reusing nodes already running) and wait for green/yellow health.

        Returns the cluster health. Raises SetupError with a reason and the log tail on failure.
        """
        timeout_s = timeout_s or self.settings.opensearch_start_timeout_s
        java = find_java(required_java(self.settings.opensearch_version), self.settings.java_home)
        home = ensure_distribution(self.settings.cache_dir, self.settings.opensearch_version, java, self.log)
        user = self._run_as()
        to_wait: list[tuple[NodeSpec, subprocess.Popen[bytes]]] = []
        for node in self.nodes:
            st = self._node_status(node)
            # our live process, or a node of this cluster answering on its port: running (a busy
            # node may miss the 1 s probe; the health wait below covers it)
            if st.alive or st.answering:
                continue
            for port in (node.http_port, node.transport_port):
                if _port_open(port):
                    info = _http_json(f"http://127.0.0.1:{node.http_port}")
                    who = f" (a node of cluster {info.get('cluster_name')!r})" if info else ""
                    raise SetupError(f"port {port} for {node.name} is already taken by another process{who}")
            self._write_config(home, node)
            if user:
                self._chown_tree(node.dir, user)
                os.chown(node.dir.parent, user.pw_uid, user.pw_gid)
            to_wait.append((node, self._spawn(home, java, node, user)))
        deadline = time.monotonic() + timeout_s
        want = "yellow" if len(self.nodes) == 1 else "green"
        while time.monotonic() < deadline:
            for node, proc in to_wait:
                if proc.poll() is not None:
                    log_text = _tail(node.logs_dir / f"{self.cluster_name}.log", 400) + _tail(node.console_log, 200)
                    raise SetupError(
                        f"OpenSearch {node.name} exited (code {proc.returncode}): {diagnose(log_text)}",
                        "\n".join(log_text.splitlines()[-LOG_TAIL_LINES:]),
                    )
            health = self.health()
            if (
                health
                and health.get("number_of_nodes", 0) >= len(self.nodes)
                and health.get("status") in ("green", want)
            ):
                return health
            time.sleep(0.5)
        node = self.nodes[0]
        log_text = _tail(node.logs_dir / f"{self.cluster_name}.log", 400) + _tail(node.console_log, 200)
        raise SetupError(
            f"OpenSearch did not become healthy within {timeout_s:.0f}s: {diagnose(log_text)}",
            "\n".join(log_text.splitlines()[-LOG_TAIL_LINES:]),
        )

    def _spawn(self, home: Path, java: Path, node: NodeSpec, user: pwd.struct_passwd | None) -> subprocess.Popen[bytes]:
        heap = self.settings.opensearch_heap
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "JAVA_HOME": str(java),
            "OPENSEARCH_JAVA_HOME": str(java),
            "OPENSEARCH_PATH_CONF": str(node.config_dir),
            "OPENSEARCH_JAVA_OPTS": f"-Xms{heap} -Xmx{heap} {self.settings.opensearch_java_opts}".strip(),
            "HOME": str(node.dir),
        }
        cmd = [str(home / "bin" / "opensearch"), "-p", str(node.pid_file)]
        if user:
            setpriv = shutil.which("setpriv")
            if not setpriv:
                raise SetupError("running as root needs setpriv (util-linux) to drop to the node's user")
            cmd = [setpriv, f"--reuid={user.pw_uid}", f"--regid={user.pw_gid}", "--init-groups", *cmd]
        node.pid_file.unlink(missing_ok=True)
        self.log(f"starting {node.name} on 127.0.0.1:{node.http_port} (heap {heap})")
        with node.console_log.open("wb") as out:
            return subprocess.Popen(
                cmd,
                env=env,
                cwd=node.dir,
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )

    def pid(self, node: NodeSpec) -> int | None:
        try:
            return int(node.pid_file.read_text().strip())
        except (OSError, ValueError):
            return None

    def _node_status(self, node: NodeSpec) -> NodeStatus:
        pid = self.pid(node)
        alive = pid is not None and _pid_alive(pid)
        info = _http_json(f"http://127.0.0.1:{node.http_port}", 1.0)
        answering = bool(info and info.get("cluster_name") == self.cluster_name)
        return NodeStatus(node.name, node.http_port, pid, alive, answering)

    def status(self) -> list[NodeStatus]:
        return [self._node_status(n) for n in self.nodes]

    def stop_node(self, node: NodeSpec, sig: int = signal.SIGTERM, timeout_s: float = 60.0) -> None:
        pid = self.pid(node)
        if pid is None or not _pid_alive(pid):
            node.pid_file.unlink(missing_ok=True)
            return
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline and _pid_alive(pid):
            time.sleep(0.2)
        if _pid_alive(pid):
            os.kill(pid, signal.SIGKILL)
            while _pid_alive(pid):
                time.sleep(0.1)
        node.pid_file.unlink(missing_ok=True)

    def kill_node(self, index: int) -> None:
        """SIGKILL one node (fault tests)."""
        self.stop_node(self.nodes[index], signal.SIGKILL, 10.0)

    def stop(self) -> None:
        for node in self.nodes:
            self.stop_node(node)

    def wipe(self) -> None:
        """Stop and delete every node's data (the downloaded distribution stays cached)."""
        self.stop()
        shutil.rmtree(self.settings.cache_dir / "clusters" / self.cluster_name, ignore_errors=True)
