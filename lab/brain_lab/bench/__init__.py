"""Benchmarks: corpus loader, workload, bare-engine baseline, load runner, scale and recall figures.

Nothing here runs at import time; ``brain-search bench ...`` (``commands/bench.py``) drives it.
"""
