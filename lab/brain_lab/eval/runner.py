"""Orchestration of ``brain-search eval``: load, index, run every part, gather one report.

The command (``lab/brain_lab/commands/eval.py``) only parses options and draws progress bars;
everything else happens here, so the integration test runs the same code.
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Protocol

from opensearchpy import OpenSearch

from brain_lab.eval.baselines import FUSION_FIELD, EngineCandidates, RetrievalSystem, baseline_systems
from brain_lab.eval.datasets import (
    LOCOMO_SPLITS,
    SCIFACT_TENANT,
    Dataset,
    EvalQuery,
    Split,
    load_locomo,
    load_scifact,
    resolve_data_dir,
    spoken_text,
    subsample,
)
from brain_lab.eval.embed_cache import CachedEmbedder
from brain_lab.eval.exact_match import (
    ExactMatchResult,
    doc_split,
    evaluate_exact_match,
    phrase_queries,
    sample_phrases,
)
from brain_lab.eval.indexing import IndexedDataset, index_dataset
from brain_lab.eval.intent_eval import DEFAULT_QUERIES, evaluate_intents, load_labelled_queries, project_detector
from brain_lab.eval.realmem import REALMEM_SPLITS, load_realmem, realmem_files, realmem_tenants
from brain_lab.eval.report import EvalReport
from brain_lab.eval.retrieval_eval import LIMIT_OF, METRICS_OF, evaluate_systems
from brain_lab.eval.z_eval import NothingMatchedResult
from brain_lab.eval.z_run import ZResult
from brain_search.config import Settings
from brain_search.encoders.base import E5_SMALL, E5_SMALL_V2, JAR_ENCODERS, encoder_info
from brain_search.encoders.embedding import Embedder
from brain_search.encoders.factory import e5_side, jar_side, make_embedder, make_query_embedder, query_cut
from brain_search.models import RecallRequest, RecallResponse
from brain_search.store.cache_budget import cache_budgets

PARTS = ("retrieval", "exact", "intent", "z")
DATASETS = ("locomo", "scifact", "realmem")
EXACT_DATASETS = ("locomo", "scifact")
"""the corpora exact-match phrases are drawn from (RealMem's long turns are not sampled)"""
BY_TENANT = ("locomo", "realmem")
"""datasets whose splits are sets of tenants (SciFact's share one corpus)"""
QUICK_QUERIES = 40
SEED = 20260120
REALMEM_NOTE = (
    "one tenant per persona, a turn's content as is; a query is asked at its session's time, over "
    "the turns of the sessions before it (an upper time bound every system honours), its relevant "
    "turns those its answer's memories were extracted from (lab/brain_lab/eval/realmem.py)"
)
FUSION_NOTE = (
    "client-side, exactly as OpenSearch's normalization-processor (min_max + arithmetic_mean, "
    "absent sub-query score 0): the neural-search plugin is not on Maven Central for 3.5.0.0"
)


class _Lazy:
    """A progress callback whose bar appears only when the first step is reported."""

    def __init__(self, factory: ProgressFactory, description: str, total: int) -> None:
        self.factory, self.description, self.total = factory, description, total
        self.bar: Callable[[int], None] | None = None

    def __call__(self, n: int) -> None:
        if self.bar is None:
            self.bar = self.factory(self.description, self.total)
        self.bar(n)


class ProgressFactory(Protocol):
    def __call__(self, description: str, total: int) -> Callable[[int], None]: ...


def no_progress(description: str, total: int) -> Callable[[int], None]:
    return lambda n: None


@dataclass(frozen=True)
class EvalOptions:
    parts: Sequence[str] = PARTS
    datasets: Sequence[str] = DATASETS
    splits: Sequence[Split] = ("dev", "test")
    quick: bool = False
    phrases: int = 600
    brain: bool = True
    reindex: bool = False
    fusion_field: str = FUSION_FIELD
    query_int8: bool = False  # Brain systems encode queries with the API's int8 model (baselines stay fp32)
    intent_queries: Path = DEFAULT_QUERIES
    seed: int = SEED


@dataclass
class RoutedSystem:
    """One system name over several indices: the tenant picks the index (LoCoMo or SciFact)."""

    name: str
    by_tenant: dict[str, RetrievalSystem] = field(default_factory=dict)

    def search(
        self,
        tenant_id: str,
        query: str,
        limit: int,
        *,
        until: datetime | None = None,
        reference_time: datetime | None = None,
    ) -> list[str]:
        system = self.by_tenant[tenant_id]
        return system.search(tenant_id, query, limit, until=until, reference_time=reference_time)


def _git_commit() -> str:
    try:
        out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=False)
        return out.stdout.strip() or "unknown"
    except OSError:
        return "unknown"


def load_locomo_ids(data_dir: Path, indices: Sequence[int]) -> list[str]:
    """The tenant ids (``sample_id``) of these LoCoMo conversations."""
    import json

    samples = json.loads((data_dir / "locomo" / "locomo10.json").read_text())
    return [str(samples[i]["sample_id"]) for i in indices]


def _quick_locomo(data_dir: Path) -> Dataset:
    # one dev and one test conversation, 40 questions each, every turn as a memory
    full = load_locomo(data_dir, conversations=[LOCOMO_SPLITS["dev"][0], LOCOMO_SPLITS["test"][0]])
    keep: list[EvalQuery] = []
    for tenant in full.memories:
        keep += [q for q in full.queries if q.tenant_id == tenant][:QUICK_QUERIES]
    full.queries = keep
    return full


def _quick_realmem(data_dir: Path) -> Dataset:
    # one dev and one test persona, 40 queries each spread over the persona's time line (a
    # query's pool grows with it), every turn as a memory
    full = load_realmem(data_dir, personas=[REALMEM_SPLITS["dev"][0], REALMEM_SPLITS["test"][0]])
    keep: list[EvalQuery] = []
    for tenant in full.memories:
        qs = [q for q in full.queries if q.tenant_id == tenant]
        step = max(1, len(qs) // QUICK_QUERIES)
        keep += qs[::step][:QUICK_QUERIES]
    full.queries = keep
    return full


def eval_embedder(settings: Settings) -> CachedEmbedder:
    """The evaluation's fp32 model, its vectors cached by text under ``<cache dir>/embeddings``:
    what the eval indices are encoded with, and for an encoder whose two sides are one
    (all-MiniLM-L6-v2) the baselines' queries and ``--fit``'s candidates too."""
    return CachedEmbedder(
        settings.cache_dir / "embeddings",
        eval_cache_name(settings.embedding_model),
        settings.embedding_dimension,
        lambda: make_embedder(settings),
    )


def eval_cache_name(encoder: str) -> str:
    """The embedding cache's name of ``encoder``'s passages as the evaluation reads them: e5's,
    bge's and e5-small-v2's int8 models, read to their ``max_tokens`` (the service's documents);
    MiniLM's fp32."""
    if encoder in (E5_SMALL.name, *JAR_ENCODERS):
        return f"{encoder}-passage-int8-{encoder_info(encoder).max_tokens}"
    return encoder


def eval_query_embedder(settings: Settings, passages: CachedEmbedder) -> CachedEmbedder:
    """The evaluation's fp32 query side: ``passages`` itself where the encoder reads queries as
    passages, else the query side (e5's ``query: ``), cached apart; e5-small-v2's int8 query side
    (the service's: its fp32 model is four times the jar)."""
    if settings.embedding_model == E5_SMALL_V2.name:
        return CachedEmbedder(
            settings.cache_dir / "embeddings",
            f"{settings.embedding_model}-query-int8-{E5_SMALL_V2.max_tokens}",
            settings.embedding_dimension,
            lambda: jar_side(settings, "query", intra_op_threads=0),
        )
    if settings.embedding_model != E5_SMALL.name:
        return passages
    return CachedEmbedder(
        settings.cache_dir / "embeddings",
        f"{settings.embedding_model}-query-256",
        settings.embedding_dimension,
        lambda: e5_side(settings, "query", quantized=False, intra_op_threads=0),
    )


class EvalRunner:
    def __init__(
        self,
        client: OpenSearch,
        settings: Settings,
        options: EvalOptions,
        progress: ProgressFactory = no_progress,
        log: Callable[[str], None] = lambda s: None,
    ) -> None:
        self.client = client
        self.settings = settings
        self.options = options
        self.progress = progress
        self.log = log
        self.data_dir = resolve_data_dir(settings)
        self.embedder = eval_embedder(settings)
        self.query_side = eval_query_embedder(settings, self.embedder)
        self.indexed: dict[str, IndexedDataset] = {}
        self.datasets: dict[str, Dataset] = {}
        self.systems: dict[str, list[RetrievalSystem]] = {}
        self.brain_queries: Embedder | None = None
        self.split_queries: dict[tuple[str, str], set[str]] = {}
        """(dataset, split) → ids of that split's queries."""

    # -- data ------------------------------------------------------------------------------------
    def load(self, name: str) -> Dataset:
        """The whole corpus of ``name`` (both splits' queries), indexed once."""
        if name in self.datasets:
            return self.datasets[name]
        if name == "locomo":
            ds = _quick_locomo(self.data_dir) if self.options.quick else load_locomo(self.data_dir)
            for split, indices in LOCOMO_SPLITS.items():
                tenants = set(load_locomo_ids(self.data_dir, indices))
                self.split_queries[(name, split)] = {q.query_id for q in ds.queries if q.tenant_id in tenants}
        elif name == "realmem":
            # one split asked: only its personas are encoded and indexed (RealMem's long turns
            # cost most of an evaluation's encoding)
            only = self.options.splits[0] if len(self.options.splits) == 1 else None
            ds = _quick_realmem(self.data_dir) if self.options.quick else load_realmem(self.data_dir, only)
            for split, indices in REALMEM_SPLITS.items():
                tenants = set(realmem_tenants(self.data_dir, indices))
                self.split_queries[(name, split)] = {q.query_id for q in ds.queries if q.tenant_id in tenants}
        else:
            dev, test = load_scifact(self.data_dir, "dev"), load_scifact(self.data_dir, "test")
            if self.options.quick:
                dev, test = subsample(dev, 40, 600, seed=1), subsample(test, 40, 600, seed=2)
            corpus = {m.memory_id: m for d in (dev, test) for m in d.memories[SCIFACT_TENANT]}
            ds = Dataset(name, "all", {SCIFACT_TENANT: list(corpus.values())}, dev.queries + test.queries, dev.counts)
            self.split_queries[(name, "dev")] = {q.query_id for q in dev.queries}
            self.split_queries[(name, "test")] = {q.query_id for q in test.queries}
        todo = self.embedder.missing([m.content for ms in ds.memories.values() for m in ms])
        if todo:
            self.log(f"encoding {len(todo)} {name} texts (cached under {self.embedder.folder})")
            self.embedder.progress = self.progress(f"encoding {name}", len(todo))
        indexed = index_dataset(
            self.client,
            self.settings,
            ds,
            self.embedder,
            force=self.options.reindex,
            progress=_Lazy(self.progress, f"indexing {name}", ds.n_memories),
        )
        self.embedder.progress = None
        self.log(f"{name}: {indexed.documents} memories in {indexed.index}" + (" (reused)" if indexed.reused else ""))
        self.indexed[name] = indexed
        self.datasets[name] = ds
        return ds

    def split_of(self, name: str, split: Split) -> Dataset:
        """The queries of one split (and, for LoCoMo and RealMem, only that split's tenants)."""
        ds = self.load(name)
        ids = self.split_queries[(name, split)]
        queries = [q for q in ds.queries if q.query_id in ids]
        tenants = {q.tenant_id for q in queries} if name in BY_TENANT else set(ds.memories)
        memories = {t: m for t, m in ds.memories.items() if t in tenants}
        refs = {t: r for t, r in ds.reference_times.items() if t in tenants}
        return Dataset(name, split, memories, queries, ds.counts, refs)

    def brain_query_embedder(self) -> Embedder:
        """What the Brain systems and the intent detector encode queries with: the API's int8
        query encoder under ``--query-int8``, else the cached fp32 model reading the word pieces the
        API's encoder reads (``QueryCut``: a long query's last ``query_max_tokens``)."""
        if self.brain_queries is None:
            self.brain_queries = (
                make_query_embedder(self.settings.model_copy(update={"query_embedding_int8": True}))
                if self.options.query_int8
                else query_cut(self.settings, self.query_side)
            )
        return self.brain_queries

    def systems_for(self, name: str) -> list[RetrievalSystem]:
        if name in self.systems:
            return self.systems[name]
        self.load(name)
        s = self.indexed[name].settings
        systems = baseline_systems(EngineCandidates(self.client, s, self.query_side), self.options.fusion_field)
        if self.options.brain:
            from brain_lab.eval.brain_systems import brain_systems

            systems += brain_systems(
                self.client,
                s,
                self.embedder,
                query_embedder=self.brain_query_embedder(),
                reference_times=self.datasets[name].reference_times,
            )
        self.systems[name] = systems
        return systems

    # -- parts -----------------------------------------------------------------------------------
    def run(self, command: str) -> EvalReport:
        o = self.options
        report = EvalReport(command=command, meta=self._meta())
        detect = project_detector(
            self.brain_query_embedder().encode, self.settings.intent_model, self.settings.embedding_model
        )
        if "retrieval" in o.parts:
            for name in o.datasets:
                for split in o.splits:
                    ds = self.split_of(name, split)
                    self.query_side.encode([q.text for q in ds.queries])
                    systems = self.systems_for(name)
                    metrics, limit = METRICS_OF[name], LIMIT_OF[name]
                    label = f"{name} {split}: {len(ds.queries)} queries × {len(systems)} systems"
                    bar = self.progress(label, len(ds.queries))
                    report.retrieval.append(evaluate_systems(ds, systems, metrics, limit, bar))
                    report.detected.update({q.text: detect(q.text) for q in ds.queries})
        if "exact" in o.parts and not any(d in EXACT_DATASETS for d in o.datasets):
            report.skipped.append("exact match: its phrases come from " + " or ".join(EXACT_DATASETS))
        elif "exact" in o.parts:
            for split in o.splits:
                report.exact.append(self._exact(split))
                report.detected.update({q.query: detect(q.query) for q in report.exact[-1].queries})
        if "z" in o.parts:
            for split in o.splits:
                report.z.append(self._z(split))
        if "intent" in o.parts:
            labelled = load_labelled_queries(o.intent_queries)
            for split in o.splits:
                # per writer batch on the held-out split only: dev rows are in-sample (their
                # first-seen figures come from lab/scripts/first_seen.py)
                report.intent.append(evaluate_intents(labelled, detect, split, batches=split == "test"))
        return report

    def _exact(self, split: Split) -> ExactMatchResult:
        o = self.options
        n = max(10, o.phrases // 10) if o.quick else o.phrases
        names = [d for d in o.datasets if d in EXACT_DATASETS]
        per = {name: n // len(names) for name in names}
        phrases = []
        routed: dict[str, RoutedSystem] = {}
        contents: dict[tuple[str, str], str] = {}
        for i, name in enumerate(names):
            ds = self.split_of(name, split)
            full = self.load(name)
            if name == "locomo":
                pools = ds.memories
                found = sample_phrases(pools, per[name], o.seed + i, "locomo", text_of=spoken_text)
            else:
                found = sample_phrases(
                    full.memories, per[name], o.seed + i, "scifact", eligible=lambda m: doc_split(m.memory_id) == split
                )
            phrases += found
            contents.update(ds.content_by_id())
            for system in self.systems_for(name):
                r = routed.setdefault(system.name, RoutedSystem(system.name))
                for tenant in ds.memories:
                    r.by_tenant[tenant] = system
        # systems of every dataset only ("time words off" exists only where the data has dates)
        tenants = {tenant for tenant, _ in contents}
        covering = [r for r in routed.values() if tenants <= set(r.by_tenant)]
        queries = phrase_queries(phrases, o.seed)
        self.query_side.encode([q.query for q in queries])
        bar = self.progress(f"exact match {split}: {len(queries)} phrases", len(queries))
        return evaluate_exact_match(queries, covering, contents, split, progress=bar)

    def _z(self, split: Split) -> ZResult:
        """The Z figures on LoCoMo ``split`` (and, on dev, the calibration fit with SciFact's
        dev claims when SciFact is part of the run)."""
        from brain_lab.eval.z_run import run_z, scifact_split
        from brain_search.encoders.queries import QueryCache
        from brain_search.retrieval.pipeline import Retriever

        ds = self.split_of("locomo", split)
        s = self.indexed["locomo"].settings
        encoder = self.brain_query_embedder()
        retriever = Retriever(self.client, s, QueryCache(encoder, cache_budgets(s).query_vectors))
        scifact = None
        if split == "dev" and "scifact" in self.options.datasets:
            full = self.load("scifact")
            scifact = scifact_split(full, self.split_queries[("scifact", "dev")])
        quick = self.options.quick
        result = run_z(
            retriever,
            self.embedder,
            ds,
            split,
            self.options.seed,
            n_phrases=20 if quick else 300,
            n_questions=40 if quick else None,
            progress=self.progress,
            scifact=scifact,
            query_embedder=self.query_side,
        )
        if "realmem" in self.options.datasets:
            result.realmem = self._realmem_nothing_matched(split, encoder)
        return result

    def _realmem_nothing_matched(self, split: Split, encoder: Embedder) -> NothingMatchedResult:
        """RealMem's questions of ``split`` asked with their evidence present and left out (issue
        55: the floor should tell them apart), each over the sessions before it."""
        from brain_lab.eval.z_eval import evaluate_nothing_matched, question_sample
        from brain_search.encoders.queries import QueryCache
        from brain_search.retrieval.pipeline import Retriever

        ds = self.split_of("realmem", split)
        s = self.indexed["realmem"].settings
        retriever = Retriever(self.client, s, QueryCache(encoder, cache_budgets(s).query_vectors))
        questions = question_sample(ds.queries, 40 if self.options.quick else len(ds.queries), self.options.seed)
        self.query_side.encode([q.text for q in questions])
        bar = self.progress(f"Z {split}: RealMem nothing matched, evidence removed ({len(questions)})", len(questions))

        def recall(tenant: str, req: RecallRequest, exclude: Sequence[str]) -> RecallResponse:
            return retriever.recall(tenant, req, exclude=exclude)

        return evaluate_nothing_matched(questions, recall, split, progress=bar)

    def _meta(self) -> dict[str, str]:
        o = self.options
        realmem = "realmem" in o.datasets
        meta = {
            "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
            "commit": _git_commit(),
            "splits": "dev = LoCoMo conversations 0–6 + SciFact train qrels"
            + (f" + RealMem {self._personas('dev')}" if realmem else "")
            + "; test (held out) = LoCoMo conversations 7–9 + SciFact test qrels"
            + (f" + RealMem {self._personas('test')}" if realmem else ""),
            "reported splits": ", ".join(o.splits) + (" (quick subset)" if o.quick else ""),
            "embedding model": f"{self.settings.embedding_model} ({self.settings.embedding_dimension} dims)"
            + ("; Brain systems' and intent detection's queries: int8 model" if self.options.query_int8 else "")
            + f"; their query vectors read a long query's {self.settings.query_keep}"
            f" {self.settings.query_max_tokens} word pieces, as the API's do (the baselines' read the first 256)",
            "index": f"prefix {self.settings.index_prefix}-<dataset>, {self.settings.knn_engine} HNSW "
            f"(m={self.settings.hnsw_m}, ef_search={self.settings.hnsw_ef_search}), one shard",
            "min-max fusion / RRF": FUSION_NOTE,
            "fusion field": o.fusion_field,
            "candidates": "baselines: top 100 of BM25 and of kNN per query; LoCoMo ranked to 10, SciFact to 100"
            + (", RealMem to 10 (each query over the sessions before its own)" if realmem else ""),
            "LoCoMo memory": "'<speaker>: <text>' plus '[shared a photo: <caption>]' where the turn has one",
            "Brain ranking": _ranking_note(self.settings),
        }
        if realmem:
            meta["RealMem memory"] = REALMEM_NOTE
        return meta

    def _personas(self, split: Split) -> str:
        """RealMem's personas of ``split``, by file name (``Adeleke_Okonjo, …``)."""
        files = realmem_files(self.data_dir)
        names = [files[i].name.split("_dialogues")[0] for i in REALMEM_SPLITS[split] if i < len(files)]
        return "personas " + ", ".join(names)


def _ranking_note(settings: Settings) -> str:
    """The ranking the Brain systems ran: the encoder's own (``ranking_for``), the defaults' where it has none."""
    from dataclasses import asdict

    from brain_search.retrieval.score.ranking import ranking_for

    params = ", ".join(f"{k}={v}" for k, v in asdict(ranking_for(settings.embedding_model, settings.node_lift)).items())
    return (
        f"{params} ({settings.embedding_model}'s); learned on the dev split only (`brain-search eval --fit`, "
        "see lab/brain_lab/eval/fit.py); "
        "Brain's candidates: one `_msearch`, BM25 and kNN each 3 × the limit deep (30 for LoCoMo, 300 for SciFact)"
    )
