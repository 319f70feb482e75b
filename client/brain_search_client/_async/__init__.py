"""The async client, the source the sync one is generated from (``client/scripts/unasync.py``)."""
