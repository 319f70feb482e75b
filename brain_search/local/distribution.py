"""Obtain OpenSearch and the matching k-NN plugin from Maven Central (through ``mvn``), unpack
them into the user cache and install the plugin once.

Why Maven: the machines this runs on reach package registries only; the integ-test zip of
OpenSearch and the k-NN plugin zip are both published there. The two versions must match
exactly (k-NN ``<v>.0`` for OpenSearch ``<v>``).
"""

from __future__ import annotations

import fcntl
import os
import re
import shutil
import subprocess
import zipfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from brain_search.encoders.maven import mvn_fetch
from brain_search.errors import SetupError

DIST_ARTIFACT = "org.opensearch.distribution.integ-test-zip:opensearch:{v}:zip"
KNN_ARTIFACT = "org.opensearch.plugin:opensearch-knn:{v}.0:zip"
JVM_SEARCH_DIRS = (Path("/usr/lib/jvm"), Path("/usr/local/lib/jvm"), Path("/opt/java"))
INSTALLED_MARKER = ".brain-search-installed"


def required_java(version: str) -> int:
    """OpenSearch 3.x needs Java 21+, 2.x runs on 17."""
    return 21 if int(version.split(".")[0]) >= 3 else 17


def java_major(java_home: Path) -> int | None:
    """Major version of a JDK, read from its ``release`` file (no process started)."""
    release = java_home / "release"
    if not release.is_file():
        return None
    m = re.search(r'JAVA_VERSION="(\d+)(?:\.(\d+))?', release.read_text(errors="replace"))
    if not m:
        return None
    major = int(m.group(1))
    return int(m.group(2)) if major == 1 and m.group(2) else major


def find_java(minimum: int, preferred: Path | None = None) -> Path:
    """A JDK home with at least ``minimum`` major version: the setting, JAVA_HOME, then the
    usual system locations (newest first)."""
    candidates: list[Path] = []
    if preferred:
        candidates.append(preferred)
    if os.environ.get("JAVA_HOME"):
        candidates.append(Path(os.environ["JAVA_HOME"]))
    for d in JVM_SEARCH_DIRS:
        if d.is_dir():
            found = [p for p in d.iterdir() if (p / "bin" / "java").exists()]
            candidates.extend(sorted(found, key=lambda p: java_major(p) or 0, reverse=True))
    seen: list[str] = []
    for home in candidates:
        major = java_major(home)
        seen.append(f"{home} ({major or '?'})")
        if major is not None and major >= minimum and (home / "bin" / "java").exists():
            return home
    if preferred:
        raise SetupError(f"Java {minimum}+ is needed; the configured BRAIN_JAVA_HOME is not one. Seen: {seen}")
    raise SetupError(
        f"Java {minimum}+ is missing: no JDK of that version in JAVA_HOME or {[str(d) for d in JVM_SEARCH_DIRS]}."
        f" Seen: {seen or 'none'}. Install one or set BRAIN_JAVA_HOME."
    )


@contextmanager
def _file_lock(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _unpack(zip_path: Path, into: Path) -> Path:
    """Unzip keeping the executable bits (zipfile drops them)."""
    with zipfile.ZipFile(zip_path) as zf:
        top = zf.namelist()[0].split("/")[0]
        for info in zf.infolist():
            target = zf.extract(info, into)
            mode = (info.external_attr >> 16) & 0o777
            if mode:
                os.chmod(target, mode)
    return into / top


def ensure_distribution(cache_dir: Path, version: str, java_home: Path, log: Callable[[str], None] = print) -> Path:
    """Return the OpenSearch home for ``version`` with the k-NN plugin installed, fetching and
    installing on first use. Safe to call from several processes at once (file lock)."""
    root = cache_dir / "opensearch" / version
    with _file_lock(root.parent / f".{version}.lock"):
        home = root / f"opensearch-{version}"
        if (home / INSTALLED_MARKER).is_file():
            return home
        if home.exists():
            shutil.rmtree(home)  # a half-finished earlier install
        downloads = cache_dir / "downloads"
        log(f"fetching OpenSearch {version} and opensearch-knn {version}.0 from Maven Central (mvn)")
        dist_zip = mvn_fetch(DIST_ARTIFACT.format(v=version), downloads)
        knn_zip = mvn_fetch(KNN_ARTIFACT.format(v=version), downloads)
        log(f"unpacking {dist_zip.name}")
        home = _unpack(dist_zip, root)
        log(f"installing the k-NN plugin from {knn_zip.name}")
        env = {**os.environ, "JAVA_HOME": str(java_home)}
        proc = subprocess.run(
            [str(home / "bin" / "opensearch-plugin"), "install", "--batch", knn_zip.resolve().as_uri()],
            capture_output=True,
            text=True,
            env=env,
            check=False,
        )
        if proc.returncode != 0:
            tail = "\n".join((proc.stdout + proc.stderr).splitlines()[-25:])
            reason = "k-NN plugin install failed"
            if "was built for OpenSearch version" in tail:
                reason += ": plugin/OpenSearch version mismatch"
            raise SetupError(reason, tail)
        (home / INSTALLED_MARKER).write_text(f"opensearch {version}\nopensearch-knn {version}.0\n")
        return home
