"""docker-compose.yml against the Compose Specification's JSON schema, plus the rules the schema
cannot express (health-gated start order, no default secrets). There is no Docker engine here:
this is the CI check of the file.

The schema is ``tests/data/compose-spec.json``: the Compose Specification schema
(``"$id": "compose_spec.json"``) as shipped in the npm package ``dclint@3.1.0``
(``schemas/compose.schema.json``); see ``tests/data/README.md``.
"""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from jsonschema import Draft7Validator

ROOT = Path(__file__).resolve().parents[2]
COMPOSE = ROOT / "docker-compose.yml"
SCHEMA = ROOT / "tests" / "data" / "compose-spec.json"
ENV_EXAMPLE = ROOT / "deploy" / ".env.example"

GATEWAY_PASSWORDS = ("BRAIN_GATEWAY_ADMIN_PASSWORD", "BRAIN_GATEWAY_API_PASSWORD", "BRAIN_GATEWAY_WORKER_PASSWORD")
SECRET_NAMES = ("REDIS_PASSWORD", "BRAIN_ADMIN_KEY", "BRAIN_JOB_SIGNING_KEYS", *GATEWAY_PASSWORDS)
ASSIGNED_SECRETS = (*SECRET_NAMES, "BRAIN_OPENSEARCH_PASSWORD", "BRAIN_REDIS_URL")
ONE_SHOT = ("gateway-certs", "index-setup")


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    return yaml.safe_load(COMPOSE.read_text())


@pytest.fixture(scope="module")
def validator() -> Draft7Validator:
    schema = json.loads(SCHEMA.read_text())
    Draft7Validator.check_schema(schema)
    return Draft7Validator(schema)


def _errors(validator: Draft7Validator, doc: dict[str, Any]) -> list[str]:
    return [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in validator.iter_errors(doc)]


def test_compose_file_matches_the_compose_specification(compose: dict[str, Any], validator: Draft7Validator) -> None:
    assert _errors(validator, compose) == []


@pytest.mark.parametrize(
    "mutate",
    [
        lambda c: c["services"]["api"].update(replicas=2),  # not a service key (deploy.replicas is)
        lambda c: c["services"]["redis"]["healthcheck"].update(interval=5),  # durations are strings
        lambda c: c["services"]["api"]["depends_on"]["redis"].update(condition="service_ready"),
    ],
    ids=["unknown-service-key", "wrong-type", "bad-enum"],
)
def test_the_schema_check_catches_mistakes(compose: dict[str, Any], validator: Draft7Validator, mutate: Any) -> None:
    broken = copy.deepcopy(compose)
    mutate(broken)
    assert _errors(validator, broken), "the schema accepted a broken file: the check cannot fail"


def test_the_stack_has_every_part(compose: dict[str, Any]) -> None:
    s = compose["services"]
    os_nodes = [n for n, svc in s.items() if str(svc.get("image", "")).startswith("opensearchproject/opensearch:")]
    assert len(os_nodes) == 2
    assert all(s[n]["image"] == "opensearchproject/opensearch:3.5.0" for n in os_nodes)
    assert s["redis"]["image"] == "redis:7"
    assert "--appendonly yes" in " ".join(s["redis"]["command"])
    assert s["api"]["deploy"]["replicas"] == 2
    assert "ports" not in s["api"], "the replicas sit behind the load balancer's one port"
    assert len(s["lb"]["ports"]) == 1
    assert s["worker"]["command"] == ["brain-search", "worker"]


def test_start_order_is_gated_on_health(compose: dict[str, Any]) -> None:
    s = compose["services"]
    for name, svc in s.items():
        for dep, cond in (svc.get("depends_on") or {}).items():
            if dep in ONE_SHOT:
                assert cond["condition"] == "service_completed_successfully", f"{name} → {dep}"
                continue
            assert cond["condition"] == "service_healthy", f"{name} → {dep}"
            assert "healthcheck" in s[dep], f"{name} waits for {dep}, which has no healthcheck"
    for name in ("opensearch-1", "opensearch-2", "opensearch-gateway", "redis", "api", "lb"):
        assert s[name]["healthcheck"]["test"], name
    for name in ("api", "worker"):
        assert set(s[name]["depends_on"]) == {"opensearch-gateway", "index-setup", "redis"}
    assert set(s["opensearch-gateway"]["depends_on"]) == {"gateway-certs", "opensearch-1", "opensearch-2"}


def test_the_engine_is_reached_only_through_the_gateway_with_a_role_each(compose: dict[str, Any]) -> None:
    """The nodes sit on an internal network only the gateway joins; the app connects over verified
    TLS as the role of its job; the workers get neither the admin role nor the API's admin key."""
    s = compose["services"]
    assert compose["networks"]["engine"]["internal"] is True
    for name, svc in s.items():
        on_engine = "engine" in (svc.get("networks") or [])
        assert on_engine == (name in ("opensearch-1", "opensearch-2", "opensearch-gateway")), name
        assert "env_file" not in svc, f"{name}: a shared env file would hand every secret to every container"
    for n in ("opensearch-1", "opensearch-2"):
        env = s[n]["environment"]
        assert env["DISABLE_SECURITY_PLUGIN"] == "true" and env["rest.action.multi.allow_explicit_index"] == "false"
        assert "ports" not in s[n]
    roles = {"index-setup": "admin", "api": "api", "worker": "worker"}
    for name, role in roles.items():
        env = s[name]["environment"]
        assert env["BRAIN_OPENSEARCH_URL"] == "https://opensearch-gateway:9200", name
        assert env["BRAIN_OPENSEARCH_VERIFY_CERTS"] == "true" and env["BRAIN_OPENSEARCH_CA_CERTS"], name
        assert env["BRAIN_OPENSEARCH_USER"] == role, name
        assert f"BRAIN_GATEWAY_{role.upper()}_PASSWORD" in env["BRAIN_OPENSEARCH_PASSWORD"], name
        assert env["BRAIN_INDEX_SETUP"] == ("install" if role == "admin" else "verify"), name
    text = yaml.safe_dump(s["worker"]["environment"])
    assert "ADMIN" not in text, "the workers hold no admin secret"
    assert "BRAIN_GATEWAY_ADMIN_PASSWORD" not in yaml.safe_dump(s["api"]["environment"])
    gw = s["opensearch-gateway"]
    assert gw["command"] == ["brain-search", "gateway", "run"]
    assert set(GATEWAY_PASSWORDS) <= set(gw["environment"])
    assert all(":ro" in v for v in gw["volumes"]), "the gateway only reads its certificate"


def test_no_secret_has_a_value_in_the_repository(compose: dict[str, Any]) -> None:
    text = COMPOSE.read_text()
    assigned = 0
    for name in ASSIGNED_SECRETS:
        # an assignment (not a ${NAME} reference) must take its value from a reference:
        # ${NAME:?message} for compose, $${NAME} for a container's shell
        for m in re.finditer(rf"(?<![{{$\w]){name}\s*[:=]\s*(\S+)", text):
            assigned += 1
            assert re.search(r"\$\{[A-Z_]+:\?", m.group(1)), m.group(0)
    assert assigned >= 10, "every secret is assigned from a ${NAME:?} reference"
    example = dict(
        line.split("=", 1) for line in ENV_EXAMPLE.read_text().splitlines() if line and not line.startswith("#")
    )
    assert set(SECRET_NAMES) <= set(example)
    assert all(v == "" for v in example.values()), "deploy/.env.example must not carry values"
    assert "deploy/.env" in (ROOT / ".gitignore").read_text().splitlines()
