"""The two hand-written sets through the real recall, for each encoder (issue 68): the multilingual
set (``lab/data/multilingual_set.json``: same-language and cross-lingual R@5, quoted phrases in
Exact) and the user-memory set (``lab/data/user_memory_set.json``: right first, strict keeps the
answer, strict returns nothing for an unanswerable question). Each encoder indexes the sets under
its own prefix on the configured engine.

    PYTHONPATH=.:lab .venv/bin/python lab/scripts/encoder_sets.py [--encoders a,b] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from brain_lab.eval import multilingual, user_memory

from brain_search.config import load_settings
from brain_search.encoders.base import ENCODERS
from brain_search.store.client import make_client
from brain_search.store.templates import delete_indices

SHORT = {
    "all-MiniLM-L6-v2": "minilm",
    "multilingual-e5-small": "e5",
    "bge-small-en-v1.5": "bge",
    "e5-small-v2": "e5v2",
}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--encoders", default=",".join(ENCODERS))
    ap.add_argument("--index-prefix", default="bt-sets")
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args()
    base = load_settings()
    client = make_client(base)
    figures: dict[str, dict[str, object]] = {}
    for encoder in [e for e in args.encoders.split(",") if e]:
        out: dict[str, object] = {}
        for name in ("multilingual", "user-memory"):
            s = base.model_copy(
                update={"index_prefix": f"{args.index_prefix}-{name[:2]}-{SHORT[encoder]}", "embedding_model": encoder}
            )
            if name == "multilingual":
                ml = multilingual.run_multilingual(client, s)
                out[name], text = multilingual.summary(ml), multilingual.report(encoder, ml)
            else:
                um = user_memory.run_user_memory(client, s)
                out[name], text = user_memory.summary(um), user_memory.report(encoder, um)
            print(text, flush=True)
            delete_indices(client, s)
        figures[encoder] = out
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
