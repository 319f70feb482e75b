# Generated from _async/__init__.py by client/scripts/unasync.py: edit that file, then run the script.
"""The async client, the source the sync one is generated from (``client/scripts/unasync.py``)."""
