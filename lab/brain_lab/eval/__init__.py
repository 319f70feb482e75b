"""The evaluation harness: public data (LoCoMo, BEIR SciFact, RealMem) run through the real index.

One job per module: ``datasets`` (loaders and splits), ``realmem`` (the RealMem loader),
``metrics`` (pure IR metrics), ``fusion`` (pure score fusion, as OpenSearch's hybrid search does
it), ``embed_cache`` (vectors on disk by model + text hash), ``indexing`` (bulk-load a dataset
under an index prefix), ``baselines`` (systems over the engine), ``retrieval_eval`` (run systems,
score them), ``exact_match`` (the spec's exact-match precision), ``intent_eval`` (intent-detection
accuracy), ``report`` (Markdown and plots). The CLI is ``brain-search eval`` (``lab/brain_lab/commands/eval.py``).
"""
