# The few verbs people type. Each one sets itself up (scripts/bootstrap.sh is idempotent).
VENV := .venv/bin
export HF_HUB_OFFLINE := 1

.PHONY: setup run up down test test-client test-secured test-unit validate-deploy lint typecheck fmt opensearch-start opensearch-stop opensearch-status

setup:
	@bash scripts/bootstrap.sh

run: setup   ## the main job: stack + worker + API, sample memories, the spec's tiered views
	$(VENV)/brain-search demo

up: setup
	$(VENV)/brain-search up

down:
	$(VENV)/brain-search down

# the integration tests that run a second time with the engine behind the gateway (TLS, roles)
SECURED_TESTS := tests/integration/test_engine_gateway.py tests/integration/test_tenant_isolation.py \
	tests/integration/test_ingest_workers.py tests/integration/test_forget.py tests/integration/test_mcp.py \
	tests/integration/test_api_admin.py tests/integration/test_recall.py tests/integration/test_memory_versions.py \
	tests/integration/test_graph_ops.py tests/integration/test_rate_limits.py tests/integration/test_memory_identity.py \
	tests/integration/test_tenant_index.py

test: setup validate-deploy   ## everything CI runs: lint, types, unit + integration tests on the real stack
	$(VENV)/ruff check .
	$(VENV)/mypy
	$(MAKE) test-client
	$(VENV)/python -m pytest
	@echo "· the same integration paths on the secured engine (gateway: verified TLS, api/worker roles)"
	BRAIN_TEST_SECURED=1 $(VENV)/python -m pytest -q $(SECURED_TESTS)

test-secured: setup   ## only the secured-engine pass
	BRAIN_TEST_SECURED=1 $(VENV)/python -m pytest -q $(SECURED_TESTS)

validate-deploy:   ## the Helm chart: lint, render 3 value sets, Kubernetes schemas (compose: tests/unit)
	bash scripts/validate_deploy.sh

test-client: setup   ## the client (client/): its sync twin is the async source's, its tests, a fresh install of it
	$(VENV)/python client/scripts/unasync.py --check
	$(VENV)/python -m pytest -q client/tests

test-unit: setup
	$(VENV)/python -m pytest tests/unit

lint:
	$(VENV)/ruff check . && $(VENV)/ruff format --check .

fmt:
	$(VENV)/ruff check --fix . && $(VENV)/ruff format .

typecheck:
	$(VENV)/mypy

opensearch-start: setup
	$(VENV)/brain-search opensearch start

opensearch-stop:
	$(VENV)/brain-search opensearch stop

opensearch-status:
	$(VENV)/brain-search opensearch status
