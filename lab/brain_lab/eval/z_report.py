"""The Z section of the evaluation report: goals met or missed, both Z formulas side by side,
the calibration fit (dev), and a plot of Z per labelled kind of match."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from brain_lab.eval.intent_eval import wilson_interval
from brain_lab.eval.z_eval import LABELLED_KINDS, NothingMatchedResult, reliability
from brain_lab.eval.z_run import ZResult
from brain_search.models import MatchKind
from brain_search.retrieval.score.tiers import TIER_NAMES

TIER_LABELS = {
    "exact_matches": "Exact (< 0.3)",
    "precise_matches": "Precise (0.3–0.5)",
    "semantic_matches": "0.5–0.7",
    "conceptual_matches": "≥ 0.7",
}
GOALS = {"placement": 0.95, "precision": 0.95, "spread": 0.10, "auroc": 0.80}


def _iv(lo_hi: tuple[float, float]) -> str:
    return f"[{lo_hi[0]:.3f}, {lo_hi[1]:.3f}]"


def _verdict(ok: bool) -> str:
    return "met" if ok else "MISSED"


def goal_lines(z: ZResult) -> list[str]:
    """The issue's Z goals on this split, for the calibrated Z."""
    ex = z.exact["calibrated"]
    sp = z.spread["calibrated"].shares()
    out = [
        f"Exact-tier placement ≥ {GOALS['placement']}: {_verdict(ex.placement >= GOALS['placement'])}, "
        f"{ex.placement:.3f} {_iv(ex.placement_interval())} (n={len(ex.placed)})",
        f"Exact-tier precision ≥ {GOALS['precision']}: {_verdict(ex.precision >= GOALS['precision'])}, "
        f"{ex.precision:.3f} {_iv(ex.precision_interval())} ({ex.literal}/{ex.shown} items)",
        "tier spread, every tier ≥ 10 % of shown results (LoCoMo questions): "
        + _verdict(min(sp.values()) >= GOALS["spread"])
        + ", "
        + ", ".join(f"{TIER_LABELS[t]} {sp[t]:.3f}" for t in TIER_NAMES),
    ]
    spread = z.spread["calibrated"]
    if spread.with_holder or spread.n_queries:
        out.append(
            "Exact where an exact match exists (spec: always show exact matches when they exist): "
            f"{spread.holder_shown}/{spread.with_holder} questions show it in Exact; only "
            f"{spread.with_holder}/{spread.n_queries} questions "
            f"({spread.with_holder / max(spread.n_queries, 1):.1%}) have a memory that holds all their content "
            "words at all, which caps the Exact share on questions far below 10 %"
        )
    if z.removed is not None:
        r = z.removed
        out.append(
            f"nothing-matched AUROC ≥ {GOALS['auroc']} (evidence present vs removed): "
            f"{_verdict(r.auroc >= GOALS['auroc'])}, {r.auroc:.3f} {_iv(r.interval())} (n={r.n})"
        )
    return out


def _nm_row(name: str, r: NothingMatchedResult) -> list[str]:
    return [
        name,
        str(r.n),
        f"{r.auroc:.3f} {_iv(r.interval())}",
        f"{r.said_nothing_present / max(r.n, 1):.3f} {_iv(wilson_interval(r.said_nothing_present, r.n))}",
        f"{r.said_nothing_removed / max(r.n, 1):.3f} {_iv(wilson_interval(r.said_nothing_removed, r.n))}",
    ]


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    out = ["| " + " | ".join(header) + " |", "|" + "|".join(" --- " for _ in header) + "|"]
    out += ["| " + " | ".join(r) + " |" for r in rows]
    return [*out, ""]


def z_markdown(results: Sequence[ZResult]) -> list[str]:
    lines = ["## The Z axis (LoCoMo; tiered mode through the recall pipeline)", ""]
    share = results[0].calibration.precise_share if results else 0.5
    lines += [
        "Z says *how* a memory matches (`brain_search/retrieval/score/zaxis.py`): Exact holds the quoted "
        f"phrase or every content word literally; Precise holds at least {share:.0%} of the weight of the "
        "query's terms (each weighs its idf over the tenant's memories); "
        "0.5–0.7 and ≥ 0.7 are matches in other words, by calibrated closeness in meaning. Tiers show "
        "only memories above the relevance floor. `spec` is the spec's literal formula "
        "semantic / (lexical + semantic), kept selectable (`z_formula`).",
        "",
    ]
    for z in sorted(results, key=lambda r: r.split != "test"):
        held = " (held out)" if z.split == "test" else " (the calibration is fitted here)"
        lines += [f"### {z.split} split{held}", ""]
        lines += [f"- {g}" for g in goal_lines(z)] + [""]
        rows = []
        for formula in ("calibrated", "spec"):
            ex, sp = z.exact[formula], z.spread[formula]
            shares = sp.shares()
            rows.append(
                [
                    formula,
                    f"{ex.placement:.3f}",
                    " / ".join(f"{v:.3f}" for v in ex.by_form().values()),
                    f"{ex.precision:.3f}",
                    *(f"{shares[t]:.3f}" for t in TIER_NAMES),
                    f"{sp.total / max(sp.n_queries, 1):.1f}",
                ]
            )
        forms = " / ".join(z.exact["calibrated"].by_form())
        header = ["Z formula", "Exact placement", f"by form ({forms})", "Exact precision"]
        header += [TIER_LABELS[t] for t in TIER_NAMES] + ["shown per question"]
        lines += _table(header, rows)
        rel_rows = [
            [formula, *(f"{z.spread[formula].relevant_shares()[t]:.3f}" for t in TIER_NAMES)]
            for formula in ("calibrated", "spec")
        ]
        lines += [
            "Share of what each tier shows that is an evidence turn of the question (LoCoMo marks 1–3 "
            "turns per question, so every tier also shows related turns that are not marked):",
            "",
        ]
        lines += _table(["Z formula", *(TIER_LABELS[t] for t in TIER_NAMES)], rel_rows)
        nm_rows = []
        if z.removed is not None:
            nm_rows.append(_nm_row("evidence present vs removed", z.removed))
        if z.foreign is not None:
            nm_rows.append(_nm_row("own conversation vs another one", z.foreign))
        if z.realmem is not None:
            nm_rows.append(_nm_row("RealMem: evidence present vs removed", z.realmem))
        if nm_rows:
            lines += ["Nothing matched: the signal is `query_analysis.best_match`; the flag is `nothing_matched`.", ""]
            header = [
                "protocol",
                "questions",
                "AUROC [95 %]",
                "said nothing (present/own)",
                "said nothing (removed/other)",
            ]
            lines += _table(header, nm_rows)
        if z.fit is not None:
            f = z.fit
            cal = f.calibration
            lines += [
                f"Calibration fitted on this split ({f.n_positive} relevant pairs, {f.n_negative} unrelated): "
                f"cos_unrelated {getattr(cal, 'cos_unrelated', 0):.3f} (the median unrelated cosine), "
                f"cos_strong {getattr(cal, 'cos_strong', 0):.3f} (the median relevant cosine), "
                f"floor {getattr(cal, 'floor', 0):.3f} (Youden J {f.youden_j:.3f}: {f.floor_tpr:.3f} of relevant "
                f"pairs clear it, {f.floor_fpr:.3f} of unrelated ones). Unrelated cosines {f.unrelated_percentiles}; "
                f"relevant {f.relevant_percentiles}. The service uses: "
                f"cos_unrelated {z.calibration.cos_unrelated}, cos_strong {z.calibration.cos_strong}, "
                f"floor {z.calibration.floor}.",
                "",
            ]
        lines += _relevance_lines(z)
        lines += [f"![Z per kind of match, {z.split}](z_kinds_{z.split}.png)", ""]
    return lines


def _relevance_lines(z: ZResult) -> list[str]:
    """The calibrated relevance: how the service's curve reads on this split's results (the
    evidence-present recalls, top 10), and on dev the curve fitted there."""
    points = z.removed.points if z.removed is not None else []
    if not points:
        return []
    lines = [
        "Calibrated relevance (`scores.relevance`): predicted against the share of results that are an "
        f"evidence turn, on this split's evidence-present recalls ({len(points)} results, top 10; LoCoMo "
        "marks 1–3 turns a question, so related turns count as misses and the shares read low):",
        "",
    ]
    rows = [
        [f"{p:.3f}", f"{o:.3f}", str(n)]
        for p, o, n in reliability(points, lambda kind, s: z.calibration.relevance(MatchKind(kind), s))
    ]
    lines += _table(["mean predicted", "share relevant", "results"], rows)
    if z.relevance is not None:
        r = z.relevance
        knots = ", ".join(f"({x:.2f}, {y:.3f})" for x, y in r.knots)
        lines += [
            f"Fitted on this split ({r.n_positive} answers among the evidence-present results, {r.n_negative} first "
            f"results of evidence-removed recalls, the two weighted equally): the chance that a result at a match "
            f"strength is the answer rather than the best a tenant without it offers, knots "
            f"(strength, chance) {knots}. The service uses: {z.calibration.relevance_knots}.",
            "",
        ]
    return lines


def z_json(z: ZResult) -> dict[str, Any]:
    return {
        "split": z.split,
        "calibration": asdict(z.calibration),
        "exact_tier": {
            f: {"placement": e.placement, "precision": e.precision, "by_form": e.by_form(), "n": len(e.placed)}
            for f, e in z.exact.items()
        },
        "tier_spread": {f: {"shares": s.shares(), "questions": s.n_queries} for f, s in z.spread.items()},
        "nothing_matched": {
            name: {"auroc": r.auroc, "interval": list(r.interval()), "n": r.n}
            for name, r in (("removed", z.removed), ("foreign", z.foreign), ("realmem_removed", z.realmem))
            if r is not None
        },
        "relevance_fit": None
        if z.relevance is None
        else {"knots": [list(k) for k in z.relevance.knots], "n": [z.relevance.n_positive, z.relevance.n_negative]},
        "fit": None
        if z.fit is None
        else {
            "calibration": asdict(z.fit.calibration),  # type: ignore[call-overload]
            "youden_j": z.fit.youden_j,
            "tpr": z.fit.floor_tpr,
            "fpr": z.fit.floor_fpr,
        },
    }


def z_plots(results: Sequence[ZResult], out: Path) -> None:
    """``z_kinds_<split>.png``: the calibrated Z of each labelled kind of (query, memory) pair."""
    if not results:
        return
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    for z in results:
        fig, axes = plt.subplots(1, 2, figsize=(11, 3.8), sharey=True)
        for ax, formula in zip(axes, ("calibrated", "spec"), strict=True):
            kinds = z.kinds.get(formula, {})
            data = [kinds.get(k, []) or [float("nan")] for k in LABELLED_KINDS]
            ax.boxplot(data, vert=False, whis=(5, 95), showfliers=False)
            ax.set_yticks(range(1, len(LABELLED_KINDS) + 1))
            ax.set_yticklabels([f"{k} (n={len(kinds.get(k, []))})" for k in LABELLED_KINDS], fontsize=8)
            for x in (0.3, 0.5, 0.7):
                ax.axvline(x, color="grey", lw=0.8, ls="--")
            ax.set_xlim(0, 1)
            ax.set_xlabel("Z position (dashed: the tier boundaries 0.3, 0.5, 0.7)", fontsize=8)
            title = "calibrated Z (the service)" if formula == "calibrated" else "spec's formula sem / (lex + sem)"
            ax.set_title(title, fontsize=9)
        fig.suptitle(f"Z per labelled kind of match, LoCoMo {z.split} (box: quartiles, whiskers 5–95 %)", fontsize=10)
        fig.tight_layout()
        fig.savefig(out / f"z_kinds_{z.split}.png", dpi=110)
        plt.close(fig)
