"""Plain-text views of a recall response for the terminal (spec 5.3)."""

from __future__ import annotations

from datetime import datetime

from brain_search.models import MemoryResult, RecallResponse

TIER_HEADINGS = (
    ("exact_matches", "🎯 Exact Matches (Z < 0.3)"),
    ("precise_matches", "📍 Precise Matches (Z 0.3-0.5)"),
    ("semantic_matches", "💭 Conceptual Matches (Z 0.5-0.7)"),
    ("conceptual_matches", "🌐 Broad Matches (Z > 0.7)"),
)


def short_date(ts: datetime | None) -> str:
    return ts.strftime("%b %d, %Y").replace(" 0", " ") if ts else "undated"


def snippet(text: str, width: int = 70) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 3].rstrip() + "..."


def render_line(r: MemoryResult, width: int = 70, scores: bool = True) -> str:
    line = f'"{snippet(r.content, width)}" [{short_date(r.metadata.timestamp)}]'
    if scores:
        s = r.scores
        line += f"  lex {s.lexical:.2f} · sem {s.semantic:.2f} · Z {s.z_position:.2f} · {r.match_kind.value}"
    return line


def render_tiered(resp: RecallResponse, width: int = 70, scores: bool = True) -> str:
    if resp.tiers is None:
        raise ValueError("the response has no tiers (ask with tiered=true)")
    out: list[str] = []
    if resp.query_analysis.nothing_matched:
        out += [
            f"∅ Nothing matched: no memory is close enough to show (best match {resp.query_analysis.best_match:.2f}).",
            "",
        ]
    for field, heading in TIER_HEADINGS:
        items: list[MemoryResult] = getattr(resp.tiers, field)
        out.append(heading)
        if not items:
            out.append("   └─ (none)")
        for i, r in enumerate(items):
            branch = "└─" if i == len(items) - 1 else "├─"
            out.append(f"   {branch} {render_line(r, width, scores)}")
        out.append("")
    return "\n".join(out).rstrip() + "\n"


def render_analysis(resp: RecallResponse) -> str:
    qa = resp.query_analysis
    cues = ", ".join(qa.cues) or "none"
    matched = "nothing matched" if qa.nothing_matched else f"best match {qa.best_match:.2f}"
    z = "" if qa.z_formula.value == "calibrated" else f" · Z formula {qa.z_formula.value}"
    return (
        f"intent {qa.detected_intent.value} · target Z {qa.target_z:.2f} ± {qa.z_tolerance:.2f} · "
        f"confidence {qa.confidence:.2f} · cues: {cues} · {matched}{z} · {resp.timings.total_ms:.0f} ms"
    )
