"""The question stage of a recall: what the question asks beyond its words, read before anything
is searched. Time words and events (``timewords``, ``events``: the period to recall), the caller's
focus over the detected intent (``presets``) and the theme a broad question names (``theme``).
The intent itself (the Z it asks for) is read by ``retrieval/intent/``."""
