"""The score stage of a recall: pure functions over the candidates the engine returned. The Z
placement (``zaxis``, its numbers read from ``retrieval/zscale.py``), the ranking's formulas
(``ranking``), the stages that apply them and the relevance floor (``scoring``), the answer check
the floor reads (``answer_check``), conversations asked for (``conversations``), the tiered
views (``tiers``) and which ranking and calibration an encoder scores with (``tuning``). No engine
call."""
