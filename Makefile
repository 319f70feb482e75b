# The few verbs people type. Each one sets itself up (scripts/bootstrap.sh is idempotent).
VENV := .venv/bin
export HF_HUB_OFFLINE := 1

.PHONY: setup run up down test test-unit validate-deploy lint typecheck fmt opensearch-start opensearch-stop opensearch-status

setup:
	@bash scripts/bootstrap.sh

run: setup   ## the main job: stack + worker + API, sample memories, the spec's tiered views
	$(VENV)/brain-search demo

up: setup
	$(VENV)/brain-search up

down:
	$(VENV)/brain-search down

test: setup validate-deploy   ## everything CI runs: lint, types, unit + integration tests on the real stack
	$(VENV)/ruff check .
	$(VENV)/mypy
	$(VENV)/python -m pytest

validate-deploy:   ## the Helm chart: lint, render 3 value sets, Kubernetes schemas (compose: tests/unit)
	bash scripts/validate_deploy.sh

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
