"""Retrieval satisfaction: what a recall returned is kept (``recorder``) so that a user or an agent
can rate it 1–5 and mark single results relevant or not (``service``); the feedback index
(``store``) answers the tenant's summary (``summary``: pure math) and is replayed by the lab
(``brain-search feedback-eval``). docs/feedback.md says what is kept, where and for how long."""
