"""The typed edges of feedback: what a caller sends about a recall, and what the service answers."""

from __future__ import annotations

import re
from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field, model_validator

MAX_MARKS = 200  # results marked in one request (a recall shows at most 100, tiers a few more)
MAX_MEMORY_ID_CHARS = 512
RECALL_ID_RE = re.compile(r"^rc_[0-9a-f]{24}$")
WORST_QUERIES = 10  # the worst-rated recent queries a summary lists


class ResultMark(BaseModel):
    """One result of the recall judged relevant (thumbs up) or not (thumbs down)."""

    model_config = ConfigDict(extra="forbid")

    memory_id: str = Field(..., min_length=1, max_length=MAX_MEMORY_ID_CHARS, description="a result's `id`")
    relevant: bool


class FeedbackRequest(BaseModel):
    """A rating of the recall as a whole, marks on single results, or both. Sent again, the rating
    is replaced and each result's mark is replaced (the last word counts)."""

    model_config = ConfigDict(extra="forbid")

    rating: int | None = Field(None, ge=1, le=5, description="the recall as a whole: 1 (useless) … 5 (exactly right)")
    results: list[ResultMark] = Field(default_factory=list, max_length=MAX_MARKS)

    @model_validator(mode="after")
    def _something(self) -> FeedbackRequest:
        if self.rating is None and not self.results:
            raise ValueError("send a rating (1–5), results marked relevant or not, or both")
        return self


class MarkOut(BaseModel):
    memory_id: str
    relevant: bool
    tier: str = Field(..., description="the Z tier the result was shown in (exact_matches …)")
    rank: int = Field(..., description="its place in the results, from 1")


class FeedbackAnswer(BaseModel):
    """The recall's feedback as stored after this request."""

    recall_id: str
    rating: int | None
    results: list[MarkOut]
    updated_at: datetime
    expires_at: datetime = Field(..., description="when the recall and its feedback are deleted")


class RatingStats(BaseModel):
    count: int
    mean: float | None = Field(None, description="mean rating, 1–5 (null without ratings)")
    low: float | None = Field(None, description="95 % interval of the mean (Student t), within 1–5")
    high: float | None = None
    distribution: dict[str, int] = Field(default_factory=dict, description="ratings given, by value 1–5")


class Share(BaseModel):
    marked: int = Field(..., description="results marked relevant or not")
    relevant: int
    share: float | None = Field(None, description="relevant / marked, 0–1")
    low: float | None = Field(None, description="95 % Wilson interval of the share")
    high: float | None = None


class WorstQuery(BaseModel):
    recall_id: str
    query: str
    rating: int
    intent: str
    at: datetime


class FeedbackSummary(BaseModel):
    """The tenant's feedback over the last ``days`` (within what is kept)."""

    days: int
    recalls_kept: int = Field(..., description="recalls kept in the window, rated or not")
    rating: RatingStats
    relevant: Share = Field(..., description="share of marked results that were relevant")
    relevant_by_tier: dict[str, Share]
    relevant_by_intent: dict[str, Share] = Field(..., description="by the recall's detected intent")
    rating_by_intent: dict[str, RatingStats]
    worst: list[WorstQuery] = Field(..., description="the worst-rated recent queries, worst and newest first")
