"""onnxruntime session options shared by every encoder (pure construction, no model)."""

from __future__ import annotations

from typing import Any


def session_options(intra_op_threads: int) -> Any:
    """``intra_op_threads`` > 0: that many intra-op threads, one inter-op thread, no spinning
    while idle; 0: None (onnxruntime's default, one spinning thread per core)."""
    if intra_op_threads <= 0:
        return None
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.intra_op_num_threads = intra_op_threads
    opts.inter_op_num_threads = 1
    opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
    return opts
