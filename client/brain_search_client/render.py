"""Plain-text views of a recall response for the terminal (spec 5.3)."""

from __future__ import annotations

from datetime import datetime

from brain_search_client.models import MemoryResult, RecallResponse

# The tiers as the JSON names them (`semantic_matches` is "Semantic matches" on screen too), with
# the spec 3.4 boundaries.
TIERS = (
    ("exact_matches", "🎯", "Z < 0.3"),
    ("precise_matches", "📍", "Z 0.3-0.5"),
    ("semantic_matches", "💭", "Z 0.5-0.7"),
    ("conceptual_matches", "🌐", "Z > 0.7"),
)
ID_CHARS = 12  # the column of ids in the result list (a longer id is printed whole)


def tier_heading(field: str, emoji: str, span: str) -> str:
    """``semantic_matches`` → "💭 Semantic matches (Z 0.5-0.7)": the JSON field's own words."""
    return f"{emoji} {field.replace('_', ' ').capitalize()} ({span})"


def short_date(ts: datetime | None) -> str:
    return ts.strftime("%b %d, %Y").replace(" 0", " ") if ts else "undated"


def snippet(text: str, width: int = 70) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 3].rstrip() + "..."


def short_id(memory_id: str, width: int = ID_CHARS) -> str:
    return memory_id if len(memory_id) <= width else memory_id[: width - 1] + "…"


def score_line(r: MemoryResult) -> str:
    """Z, relevance, both scores and the kind of match of a result, on one line."""
    s = r.scores
    return (
        f"Z {s.z_position:.2f}  rel {s.relevance:.3f}  lex {s.lexical:.2f}  sem {s.semantic:.2f}  "
        f"{r.match_kind.value:<7}"
    )


def render_list(resp: RecallResponse, columns: int = 80) -> str:
    """The ranked results within ``columns``: rank, full id (what `memories get` takes), scores
    and date on one line (the id on a line of its own when the three do not fit); then its node
    and a cut of its text."""
    out: list[str] = []
    qa = resp.query_analysis
    if qa.nothing_matched:
        out += [
            f"∅ Nothing matched: no memory clears the relevance floor (best match {qa.best_match:.2f}, "
            f"floor {qa.floor:.2f})" + (": the closest ones, none of them a match:" if resp.results else "."),
        ]
    elif not resp.results and qa.withheld_matches:
        out.append(f"∅ {qa.matched} matched; none reaches --min-relevance ({qa.withheld_matches} withheld).")
    elif not resp.results and qa.withheld:
        out.append(f"∅ No result clears --min-relevance ({qa.withheld} withheld).")
    ruled = False
    for i, r in enumerate(resp.results, 1):
        if not r.scores.clears_floor and not ruled and not qa.nothing_matched:
            out.append("   ── below the relevance floor: not a match ──"[:columns])
            ruled = True
        facts = f"{score_line(r)}  {short_date(r.metadata.timestamp)}"
        head = f"{i:>2} {r.id:<{ID_CHARS}}  {facts}"
        if len(head) > columns:
            out += [f"{i:>2} {r.id}", ("   " + facts)[:columns].rstrip()]
        else:
            out.append(head.rstrip())
        node = f"[{r.node.label}] " if r.node.label else ""
        replaced = f"(replaced by {r.metadata.superseded_by}) " if r.metadata.superseded_by else ""
        out.append("   " + snippet(replaced + node + r.content, columns - 3))
    return "".join(line + "\n" for line in out)


def render_line(r: MemoryResult, width: int = 70) -> str:
    return f'"{snippet(r.content, width)}" [{short_date(r.metadata.timestamp)}]'


def render_tiered(resp: RecallResponse, width: int = 70, scores: bool = True, columns: int | None = None) -> str:
    """The tiered view (spec 5.3), headed by the JSON's tier names. ``columns``: the text is cut to
    fit; with ``scores`` each memory has a second line (scores and id)."""
    if resp.tiers is None:
        raise ValueError("the response has no tiers (ask with tiered=true)")
    if columns is not None:
        width = max(20, columns - 24)  # indent, branch, quotes and the date
    out: list[str] = []
    if resp.query_analysis.nothing_matched:
        out += [
            f"∅ Nothing matched: no memory is close enough to show (best match {resp.query_analysis.best_match:.2f}).",
            "",
        ]
    for field, emoji, span in TIERS:
        items: list[MemoryResult] = getattr(resp.tiers, field)
        out.append(tier_heading(field, emoji, span))
        if not items:
            out.append("   └─ (none)")
        for i, r in enumerate(items):
            last = i == len(items) - 1
            out.append(f"   {'└─' if last else '├─'} {render_line(r, width)}")
            if scores:  # the full id, what `memories get` takes: on its own line when it does not fit
                bar = f"   {' ' if last else '│'}     "
                line = f"{bar}{score_line(r).rstrip()}  {r.id}"
                if columns and len(line) > columns:
                    out += [f"{bar}{score_line(r).rstrip()}"[:columns], f"{bar}{r.id}"]
                else:
                    out.append(line)
        out.append("")
    return "\n".join(out).rstrip() + "\n"


def render_conversations(resp: RecallResponse, columns: int = 80) -> str:
    """The conversations of a recall (``context``), best first, within ``columns``: a heading
    line each (rank, conversation, node, score, hits of its turns, the best hit's date), then its
    turns in order, one line each, the hits marked ``*``."""
    convs = resp.conversations or []
    if not convs:
        return "💬 Conversations: none\n"
    out = ["💬 Conversations"]
    for i, c in enumerate(convs, 1):
        best = next((t for t in c.turns if t.id == c.best_hit), None)
        when = short_date(best.timestamp if best else None)
        node = f"  [{c.node.label or c.node.id}]" if (c.node.label or c.node.id) else ""
        head = (
            f"{i:>2} {short_id(c.conversation_id, 24)}{node}  score {c.score:.2f}  "
            f"{len(c.hits)} hit{'s' if len(c.hits) != 1 else ''} · {c.turns_total} turns  {when}"
        )
        out.append(head[:columns].rstrip())
        for t in c.turns:
            out.append(f"   {'*' if t.hit else ' '} " + snippet(t.content, columns - 5))
    return "".join(line + "\n" for line in out)


def render_analysis(resp: RecallResponse) -> str:
    qa = resp.query_analysis
    cues = ", ".join(qa.cues) or "none"
    matched = "nothing matched" if qa.nothing_matched else f"best match {qa.best_match:.2f}"
    z = "" if qa.z_formula.value == "calibrated" else f" · Z formula {qa.z_formula.value}"
    return (
        f"intent {qa.detected_intent.value} · target Z {qa.target_z:.2f} ± {qa.z_tolerance:.2f} · "
        f"confidence {qa.confidence:.2f} · cues: {cues} · {matched}{z} · {resp.timings.total_ms:.0f} ms"
    )
