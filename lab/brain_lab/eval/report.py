"""The evaluation report: Markdown tables, PNG plots (matplotlib, Agg) and ``results.json``.

Comparisons are computed, not written by hand: wherever Brain Z-aware trails a baseline the
report says so in its "Where Z-aware loses" section.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from brain_lab.eval.brain_systems import Z_AWARE, Z_NAIVE
from brain_lab.eval.datasets import ADVERSARIAL
from brain_lab.eval.exact_match import PHRASINGS, ExactMatchResult
from brain_lab.eval.intent_eval import TIERS, IntentResult
from brain_lab.eval.metrics import mean, paired_interval
from brain_lab.eval.retrieval_eval import RetrievalResult
from brain_lab.eval.time_report import time_words_md
from brain_lab.eval.z_report import z_json, z_markdown, z_plots
from brain_lab.eval.z_run import ZResult

TOLERANCE = 0.0005  # differences below this are ties (metric noise from float sums)
MAX_FAILURES_LISTED = 40  # per system in exact_match_failures_<split>.md


@dataclass
class EvalReport:
    command: str
    meta: dict[str, str]
    retrieval: list[RetrievalResult] = field(default_factory=list)
    exact: list[ExactMatchResult] = field(default_factory=list)
    intent: list[IntentResult] = field(default_factory=list)
    z: list[ZResult] = field(default_factory=list)
    """the Z axis figures per LoCoMo split (``z_run``)"""
    detected: dict[str, str] = field(default_factory=dict)
    """query text → intent tier detected by the project (for the per-tier A/B)."""
    skipped: list[str] = field(default_factory=list)


def _f(x: float) -> str:
    return f"{x:.3f}"


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    out = ["| " + " | ".join(header) + " |", "|" + "|".join(" --- " for _ in header) + "|"]
    out += ["| " + " | ".join(r) + " |" for r in rows]
    return [*out, ""]


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _bold_best(values: dict[str, float]) -> dict[str, str]:
    best = max(values.values()) if values else 0.0
    return {k: (f"**{_f(v)}**" if abs(v - best) < TOLERANCE else _f(v)) for k, v in values.items()}


# ------------------------------------------------------------------------------------------
# comparisons


def losses(report: EvalReport) -> list[str]:
    """Every place where Z-aware is below the best baseline (or below Z-naive), in words."""
    out: list[str] = []
    for res in report.retrieval:
        if Z_AWARE not in res.systems:
            continue
        cuts: list[tuple[str, Any]] = [(res.main_label, None)]
        cuts += [(f"category {c}", c) for c in res.categories()]
        for label, cat in cuts:
            qs = res.select(cat) if cat else res.select()
            if not qs:
                continue
            table = res.table(qs)
            for m in res.metrics:
                aware = table[Z_AWARE][m]
                rivals = {s: v[m] for s, v in table.items() if s != Z_AWARE}
                best_sys = max(rivals, key=lambda s: rivals[s])
                if rivals[best_sys] - aware > TOLERANCE:
                    out.append(
                        f"{res.dataset} {res.split}, {label}, {m}: Z-aware {_f(aware)} < {best_sys} "
                        f"{_f(rivals[best_sys])} (Δ {aware - rivals[best_sys]:+.3f}, n={len(qs)}; "
                        f"{_paired(res, qs, m, best_sys)})"
                    )
    for ex in report.exact:
        if Z_AWARE not in ex.hits:
            continue
        aware = ex.precision(Z_AWARE)
        for s in ex.hits:
            if s != Z_AWARE and ex.precision(s) - aware > TOLERANCE:
                out.append(f"exact match {ex.split}: Z-aware P@1 {_f(aware)} < {s} {_f(ex.precision(s))}")
    return out


def _paired(res: RetrievalResult, qs: Sequence[Any], metric: str, rival: str) -> str:
    """How much a loss means: the queries each system wins, and the 95 % paired-bootstrap
    interval of Z-aware's mean difference (an interval holding 0 is within query sampling noise)."""
    aware = [res.run(Z_AWARE).per_query[q.query_id][metric] for q in qs]
    other = [res.run(rival).per_query[q.query_id][metric] for q in qs]
    worse = sum(a < o for a, o in zip(aware, other, strict=True))
    better = sum(a > o for a, o in zip(aware, other, strict=True))
    lo, hi = paired_interval(aware, other)
    return (
        f"Z-aware better on {better} queries, worse on {worse}; "
        f"95 % paired-bootstrap interval of Δ [{lo:+.3f}, {hi:+.3f}]"
    )


def tier_ab(report: EvalReport, split: str) -> list[list[str]]:
    """Rows: detected tier, queries, n, Z-naive, Z-aware, Δ — nDCG@10 per retrieval dataset,
    P@1 on the exact-match phrases. Tiers with no query are left out."""
    acc: dict[tuple[str, str], tuple[list[float], list[float]]] = defaultdict(lambda: ([], []))
    for res in report.retrieval:
        if res.split != split or Z_AWARE not in res.systems:
            continue
        naive, aware = res.run(Z_NAIVE), res.run(Z_AWARE)
        for q in res.select():
            tier = report.detected.get(q.text)
            if tier:
                pair = acc[(tier, f"{res.dataset} nDCG@10")]
                pair[0].append(naive.per_query[q.query_id]["nDCG@10"])
                pair[1].append(aware.per_query[q.query_id]["nDCG@10"])
    for ex in report.exact:
        if ex.split != split or Z_AWARE not in ex.hits:
            continue
        for pq in ex.queries:
            tier = report.detected.get(pq.query)
            if tier:
                pair = acc[(tier, "exact-match P@1")]
                pair[0].append(float(ex.hits[Z_NAIVE][pq.phrase.phrase_id]))
                pair[1].append(float(ex.hits[Z_AWARE][pq.phrase.phrase_id]))
    rows = []
    for tier in TIERS:
        for (t, source), (naive_vals, aware_vals) in sorted(acc.items()):
            if t != tier:
                continue
            nv, av = mean(naive_vals), mean(aware_vals)
            rows.append([tier, source, str(len(naive_vals)), _f(nv), _f(av), f"{av - nv:+.3f}"])
    return rows


# ------------------------------------------------------------------------------------------
# plots


def _plots(report: EvalReport, out: Path) -> dict[str, str]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    made: dict[str, str] = {}

    def save(fig: Any, name: str) -> None:
        fig.tight_layout()
        fig.savefig(out / name, dpi=110)
        plt.close(fig)
        made[name] = name

    for res in report.retrieval:
        table = res.table()
        systems = res.systems
        fig, ax = plt.subplots(figsize=(10, 4.2))
        width = 0.8 / len(systems)
        for i, s in enumerate(systems):
            xs = [j + i * width for j in range(len(res.metrics))]
            ax.bar(xs, [table[s][m] for m in res.metrics], width, label=s)
        ax.set_xticks([j + 0.4 - width / 2 for j in range(len(res.metrics))], list(res.metrics))
        ax.set_ylim(0, 1)
        ax.set_title(f"{res.dataset} ({res.split} split, {len(res.select())} queries)")
        ax.legend(fontsize=7, ncol=2)
        save(fig, f"retrieval_{res.dataset}_{res.split}.png")
        cats = res.categories()
        if cats:
            fig, ax = plt.subplots(figsize=(10, 4.2))
            for i, s in enumerate(systems):
                xs = [j + i * width for j in range(len(cats))]
                ax.bar(xs, [res.table(res.select(c))[s]["nDCG@10"] for c in cats], width, label=s)
            ax.set_xticks([j + 0.4 - width / 2 for j in range(len(cats))], cats)
            ax.set_ylim(0, 1)
            ax.set_ylabel("nDCG@10")
            ax.set_title(f"{res.dataset} {res.split}: nDCG@10 per question category")
            ax.legend(fontsize=7, ncol=2)
            save(fig, f"categories_{res.dataset}_{res.split}.png")
    for ex in report.exact:
        systems = list(ex.hits)
        names = list(PHRASINGS)
        fig, ax = plt.subplots(figsize=(10, 4.2))
        width = 0.8 / len(systems)
        for i, s in enumerate(systems):
            xs = [j + i * width for j in range(len(names) + 1)]
            ax.bar(xs, [ex.precision(s, p) for p in names] + [ex.precision(s)], width, label=s)
        ax.set_xticks([j + 0.4 - width / 2 for j in range(len(names) + 1)], [*names, "all"], fontsize=7)
        ax.set_ylim(0, 1.05)
        ax.set_ylabel("precision@1")
        ax.set_title(f"exact match ({ex.split}, {len(ex.queries)} phrases)")
        ax.legend(fontsize=7, ncol=2)
        save(fig, f"exact_match_{ex.split}.png")
    for ir in report.intent:
        fig, ax = plt.subplots(figsize=(5.2, 4.4))
        ax.imshow(ir.confusion, cmap="Blues")
        for r, row in enumerate(ir.confusion):
            for c, v in enumerate(row):
                ax.text(c, r, str(v), ha="center", va="center", fontsize=9)
        ax.set_xticks(range(len(TIERS)), TIERS, rotation=30, fontsize=8)
        ax.set_yticks(range(len(TIERS)), TIERS, fontsize=8)
        ax.set_xlabel("detected")
        ax.set_ylabel("label")
        ax.set_title(f"intent ({ir.split}): acc {ir.accuracy:.2f}, ±1 tier {ir.within_one:.2f}")
        save(fig, f"intent_confusion_{ir.split}.png")
    for split in sorted({r.split for r in report.retrieval}):
        rows = tier_ab(report, split)
        if not rows:
            continue
        fig, ax = plt.subplots(figsize=(max(7, len(rows) * 0.9), 4.2))
        xs = list(range(len(rows)))
        ax.bar([x - 0.2 for x in xs], [float(r[3]) for r in rows], 0.4, label=Z_NAIVE)
        ax.bar([x + 0.2 for x in xs], [float(r[4]) for r in rows], 0.4, label=Z_AWARE)
        ax.set_xticks(xs, [f"{r[0]}\n{r[1]}\n(n={r[2]})" for r in rows], fontsize=6)
        ax.set_ylim(0, 1.05)
        ax.set_title(f"Z-aware vs Z-naive by detected intent ({split})")
        ax.legend(fontsize=7)
        save(fig, f"z_ab_{split}.png")
    return made


# ------------------------------------------------------------------------------------------
# Markdown

HEADLINE = {"locomo": ("nDCG@10", "R@10"), "scifact": ("nDCG@10", "R@100"), "realmem": ("R@10", "nDCG@10", "MRR@10")}


def headline(report: EvalReport, split: str) -> tuple[list[str], list[list[str]]]:
    """One row per system: the key metrics of every dataset and exact-match P@1 on ``split``."""
    cols: list[tuple[str, dict[str, float]]] = []
    for res in report.retrieval:
        if res.split != split:
            continue
        table = res.table()
        for m in HEADLINE.get(res.dataset, res.metrics[:2]):
            cols.append((f"{res.dataset} {m}", {s: table[s][m] for s in res.systems}))
    for ex in report.exact:
        if ex.split == split:
            cols.append(("exact-match P@1", {s: ex.precision(s) for s in ex.hits}))
    systems = list(dict.fromkeys(s for _, col in cols for s in col))
    bold = [_bold_best(col) for _, col in cols]
    rows = [[s, *(b.get(s, "–") for b in bold)] for s in systems]
    return ["system", *(name for name, _ in cols)], rows


def targets(report: EvalReport, split: str) -> list[str]:
    """The issue's goals, checked on ``split``: met or missed, with the number."""
    out = []
    for ex in report.exact:
        if ex.split == split and Z_AWARE in ex.hits:
            p = ex.precision(Z_AWARE)
            verdict = "met" if p >= 0.99 else "MISSED"
            out.append(f"exact-match P@1 (Z-aware) ≥ 0.99 (spec > 0.90): {verdict}, {p:.3f}")
    for ir in report.intent:
        if ir.split == split:
            verdict = "met" if ir.accuracy >= 0.90 else "MISSED"
            line = f"intent accuracy ≥ 0.90 (spec > 0.80): {verdict}, {ir.accuracy:.3f}"
            if ir.parts:
                each = [f"{p.part} {p.accuracy:.3f} (n={p.n})" for p in ir.parts if p.batch is None]
                line += f" pooled over {ir.n} rows; " + ", ".join(each)
            out.append(line)
    if any(r.split == split and Z_AWARE in r.systems for r in report.retrieval):
        lost = [x for x in losses(report) if f" {split}," in x or f" {split}:" in x]
        verdict = "met" if not lost else f"MISSED in {len(lost)} comparisons (listed below)"
        out.append(f"Z-aware at least as good as every other system: {verdict}")
    return out


def bm25_fields(report: EvalReport) -> list[str]:
    """Which BM25 field wins on dev, per dataset (decides the field of the fusion baselines)."""
    out = []
    for res in report.retrieval:
        if res.split != "dev" or "BM25 (content)" not in res.systems or "BM25 (content.en)" not in res.systems:
            continue
        t = res.table()
        a, b = t["BM25 (content)"]["nDCG@10"], t["BM25 (content.en)"]["nDCG@10"]
        better = "content.en" if b > a else "content"
        out.append(f"{res.dataset}: `{better}` is better on dev (nDCG@10 content {_f(a)}, content.en {_f(b)})")
    return out


def _ab_sets(report: EvalReport) -> str:
    """The query sets of the per-tier A/B, in words (RealMem named only where it ran)."""
    sets = ["LoCoMo categories 1–4", "SciFact claims"]
    if any(r.dataset == "realmem" for r in report.retrieval):
        sets.append("RealMem queries")
    return ", ".join([*sets, "exact-match phrases"])


def _retrieval_md(res: RetrievalResult) -> list[str]:
    lines = [f"### {res.dataset} — {res.split} split ({len(res.select())} queries, limit {res.limit})", ""]
    if res.counts:
        lines += ["Loader: " + "; ".join(f"{k}: {v}" for k, v in sorted(res.counts.items())) + ".", ""]
    table = res.table()
    cols = {m: _bold_best({s: table[s][m] for s in res.systems}) for m in res.metrics}
    lines += _table(["system", *res.metrics], [[s, *(cols[m][s] for m in res.metrics)] for s in res.systems])
    cats = res.categories()
    if cats:
        left_out = "; adversarial = category 5, not in the table above" if ADVERSARIAL in cats else ""
        lines += [f"nDCG@10 per question category ({res.split}{left_out}):", ""]
        per = {c: _bold_best({s: res.table(res.select(c))[s]["nDCG@10"] for s in res.systems}) for c in cats}
        header = ["system", *(f"{c} (n={len(res.select(c))})" for c in cats)]
        lines += _table(header, [[s, *(per[c][s] for c in cats)] for s in res.systems])
    lines += [f"![{res.dataset} {res.split}](retrieval_{res.dataset}_{res.split}.png)", ""]
    return lines


def _exact_md(ex: ExactMatchResult) -> list[str]:
    counts = ex.counts()
    lines = [
        f"### Exact match — {ex.split} split ({len(ex.queries)} phrases: "
        + ", ".join(f"{n} from {c}" for c, n in sorted(counts.items()))
        + ")",
        "",
    ]
    names = list(PHRASINGS)
    header = ["system", "all", *sorted(counts), *names]
    rows = []
    for s in ex.hits:
        rows.append(
            [s, _f(ex.precision(s))]
            + [_f(ex.precision(s, corpus=c)) for c in sorted(counts)]
            + [_f(ex.precision(s, p)) for p in names]
        )
    lines += _table(header, rows)
    lines += ["Phrasings: " + "; ".join(f"`{k}` = `{v.format(p='…')}`" for k, v in PHRASINGS.items()) + ".", ""]
    brain_fail = [f for f in ex.failures if f.system == Z_AWARE]
    if brain_fail:
        where = f"exact_match_failures_{ex.split}.md"
        lines += [
            f"Z-aware failures ({len(brain_fail)}; every system's, up to {MAX_FAILURES_LISTED} each, in `{where}`):",
            "",
        ]
        lines += _table(
            ["query", "top result", "rank of the phrase's memory"],
            [[_cell(f.query), _cell(f.top_content[:90]), str(f.rank_of_expected or "–")] for f in brain_fail[:25]],
        )
    lines += [f"![exact match {ex.split}](exact_match_{ex.split}.png)", ""]
    return lines


def _intent_md(ir: IntentResult) -> list[str]:
    lines = [
        f"### Intent detection — {ir.split} split ({ir.n} labelled queries)",
        "",
        f"Accuracy **{ir.accuracy:.3f}**, within one tier **{ir.within_one:.3f}**. "
        "Recall per label: " + ", ".join(f"{t} {ir.per_label_recall[t]:.2f}" for t in TIERS) + ".",
        "",
    ]
    lines += _table(["label \\ detected", *TIERS], [[t, *map(str, ir.confusion[i])] for i, t in enumerate(TIERS)])
    if ir.parts:
        lo, hi = ir.interval
        lines += [f"By writer group (95 % Wilson intervals; all rows: {ir.accuracy:.3f} [{lo:.3f}, {hi:.3f}]):", ""]
        rows = [
            [p.part, str(p.n), f"{p.accuracy:.3f}", "[{:.3f}, {:.3f}]".format(*p.interval), f"{p.within_one:.3f}"]
            for p in ir.parts
        ]
        lines += _table(["rows", "n", "accuracy", "interval", "within one tier"], rows)
    return [*lines, f"![intent {ir.split}](intent_confusion_{ir.split}.png)", ""]


def render_markdown(report: EvalReport) -> str:
    m = report.meta
    lines = ["# brain-search evaluation", "", f"Produced by `{report.command}`.", ""]
    lines += [f"- {k}: {v}" for k, v in m.items()]
    lines += [""]
    for s in report.skipped:
        lines += [f"> skipped: {s}", ""]
    for split in [x for x in ("test", "dev") if any(r.split == x for r in report.retrieval + report.exact)]:
        header, rows = headline(report, split)
        held = " (held out)" if split == "test" else " (patterns and ranking may be tuned on it)"
        lines += [f"## Headline — {split} split{held}", ""]
        lines += _table(header, rows)
        lines += [f"- {t}" for t in targets(report, split)] + [""]
        for ir in report.intent:
            if ir.split == split:
                parts = "".join(f"; {p.part} {p.accuracy:.3f} (n={p.n})" for p in ir.parts if p.batch is None)
                lines += [
                    f"Intent detection on {split}: accuracy {ir.accuracy:.3f}, within one tier "
                    f"{ir.within_one:.3f} (n={ir.n}{parts}).",
                    "",
                ]
    fields = bm25_fields(report)
    if fields:
        lines += ["## BM25 field (decided on dev)", ""]
        lines += [f"- {x}" for x in fields]
        lines += [f"- the fusion baselines in this run use `{m.get('fusion field', 'content')}`.", ""]
    lost = losses(report)
    lines += ["## Where Z-aware loses", ""]
    if any(Z_AWARE in r.systems for r in report.retrieval) or any(Z_AWARE in e.hits for e in report.exact):
        lines += [f"- {x}" for x in lost] if lost else ["Nowhere: Z-aware is at least as good as every other system."]
    else:
        lines += ["Brain systems were not part of this run."]
    lines += [""]
    lines += time_words_md(report.retrieval)
    splits = sorted({r.split for r in report.retrieval})
    if any(Z_AWARE in r.systems for r in report.retrieval):
        lines += ["## Z-aware vs Z-naive per detected intent tier (the spec's A/B)", ""]
        for split in splits:
            lines += [f"{split} split ({_ab_sets(report)}):", ""]
            header = ["detected tier", "queries (metric)", "n", "Z-naive", "Z-aware", "Δ"]
            lines += _table(header, tier_ab(report, split))
            lines += [f"![A/B {split}](z_ab_{split}.png)", ""]
    if report.retrieval:
        lines += ["## Retrieval quality", ""]
        for res in report.retrieval:
            lines += _retrieval_md(res)
    if report.exact:
        lines += ["## Exact-match precision (spec: the top result contains the quoted phrase)", ""]
        for ex in report.exact:
            lines += _exact_md(ex)
    if report.z:
        lines += z_markdown(report.z)
    if report.intent:
        lines += ["## Intent detection", ""]
        for ir in report.intent:
            lines += _intent_md(ir)
        lines += ["Misclassified dev queries are listed in `intent_errors_dev.md` (test errors are not listed).", ""]
    return "\n".join(lines)


def _results_json(report: EvalReport) -> dict[str, Any]:
    return {
        "command": report.command,
        "meta": report.meta,
        "retrieval": [
            {
                "dataset": r.dataset,
                "split": r.split,
                "queries": len(r.select()),
                "main": r.table(),
                "categories": {c: r.table(r.select(c)) for c in r.categories()},
                "counts": r.counts,
            }
            for r in report.retrieval
        ],
        "exact_match": [
            {
                "split": e.split,
                "phrases": len(e.queries),
                "precision_at_1": {s: e.precision(s) for s in e.hits},
                "by_phrasing": {s: {p: e.precision(s, p) for p in PHRASINGS} for s in e.hits},
            }
            for e in report.exact
        ],
        "intent": [
            {
                "split": i.split,
                "n": i.n,
                "accuracy": i.accuracy,
                "within_one": i.within_one,
                "confusion": i.confusion,
                "parts": [
                    {"group": p.group, "batch": p.batch, "n": p.n, "correct": p.correct, "near": p.near}
                    for p in i.parts
                ],
            }
            for i in report.intent
        ],
        "z": [z_json(z) for z in report.z],
        "losses": losses(report),
    }


def write_report(report: EvalReport, out: Path) -> Path:
    """Write ``README.md`` (the report), the plots, ``results.json`` and failure listings."""
    out.mkdir(parents=True, exist_ok=True)
    _plots(report, out)
    z_plots(report.z, out)
    path = out / "README.md"
    path.write_text(render_markdown(report))
    (out / "results.json").write_text(json.dumps(_results_json(report), indent=2, sort_keys=True) + "\n")
    for ex in report.exact:
        body = [f"# Exact-match failures ({ex.split})", ""]
        for system in ex.hits:
            fails = [f for f in ex.failures if f.system == system]
            body += [f"## {system}: {len(fails)} of {len(ex.queries)} failed", ""]
            if fails:
                shown = fails[:MAX_FAILURES_LISTED]
                rows = [[_cell(f.query), _cell(f.top_content[:100]), str(f.rank_of_expected or "–")] for f in shown]
                body += _table(["query", "top result", "rank of the phrase's memory"], rows)
                if len(fails) > len(shown):
                    body += [f"… and {len(fails) - len(shown)} more.", ""]
        (out / f"exact_match_failures_{ex.split}.md").write_text("\n".join(body))
    for ir in report.intent:
        if ir.split == "dev":
            body = ["# Misclassified intent queries (dev)", ""]
            body += _table(["query", "label", "detected"], [[_cell(q), lab, got] for q, lab, got in ir.errors])
            (out / "intent_errors_dev.md").write_text("\n".join(body))
    return path
