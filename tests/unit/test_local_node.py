from pathlib import Path

import pytest

from brain_search.config import load_settings
from brain_search.errors import SetupError
from brain_search.local.distribution import find_java, java_major, required_java
from brain_search.local.node import LocalCluster, diagnose


def test_required_java_by_major_version() -> None:
    assert required_java("3.5.0") == 21
    assert required_java("2.19.1") == 17


def test_java_major_reads_release_file(tmp_path: Path) -> None:
    (tmp_path / "release").write_text('IMPLEMENTOR="x"\nJAVA_VERSION="25.0.1"\n')
    assert java_major(tmp_path) == 25
    (tmp_path / "release").write_text('JAVA_VERSION="1.8.0_392"\n')
    assert java_major(tmp_path) == 8
    assert java_major(tmp_path / "missing") is None


def test_find_java_rejects_too_old_configured_jdk(tmp_path: Path) -> None:
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "java").write_text("")
    (tmp_path / "release").write_text('JAVA_VERSION="17.0.2"\n')
    with pytest.raises(SetupError, match="Java 99"):
        find_java(99, tmp_path)


@pytest.mark.parametrize(
    ("log", "reason"),
    [
        ("java.net.BindException: Address already in use", "port is already taken"),
        ("java.lang.OutOfMemoryError: Java heap space", "ran out of memory"),
        ("can not run opensearch as root", "root"),
        ("plugin [opensearch-knn] was built for OpenSearch version 2.19.1", "does not match"),
        ("UnsupportedClassVersionError: class file version 65.0", "too old"),
        ("nothing recognisable", "did not become healthy"),
    ],
)
def test_diagnose_names_the_cause(log: str, reason: str) -> None:
    assert reason in diagnose(log)


def test_multi_node_config_forms_one_cluster(tmp_path: Path) -> None:
    settings = load_settings(cache_dir=tmp_path)
    cluster = LocalCluster(settings, nodes=3, http_port=9500, transport_port=9600, cluster_name="c3")
    home = tmp_path / "home"
    (home / "config").mkdir(parents=True)
    (home / "config" / "jvm.options").write_text("-Xlog:gc*:file=logs/gc.log\n-XX:HeapDumpPath=data\n")
    (home / "config" / "log4j2.properties").write_text("x")
    for node in cluster.nodes:
        cluster._write_config(home, node)
    n2 = cluster.nodes[1]
    yml = (n2.config_dir / "opensearch.yml").read_text()
    assert "http.port: 9501" in yml and "transport.port: 9601" in yml
    assert '"127.0.0.1:9600", "127.0.0.1:9601", "127.0.0.1:9602"' in yml
    assert "network.host: 127.0.0.1" in yml and "single-node" not in yml
    jvm = (n2.config_dir / "jvm.options").read_text()
    assert f"file={n2.logs_dir}/gc.log" in jvm and f"HeapDumpPath={n2.data_dir}" in jvm
    assert (n2.config_dir / "log4j2.properties").is_file()


def test_single_node_config_is_single_node(tmp_path: Path) -> None:
    cluster = LocalCluster(load_settings(cache_dir=tmp_path), nodes=1, http_port=9500, transport_port=9600)
    home = tmp_path / "home"
    (home / "config").mkdir(parents=True)
    (home / "config" / "jvm.options").write_text("")
    cluster._write_config(home, cluster.nodes[0])
    assert "discovery.type: single-node" in (cluster.nodes[0].config_dir / "opensearch.yml").read_text()
