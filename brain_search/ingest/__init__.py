"""Ingestion: validate memories, queue them, embed them in batches and bulk-index them.

- ``models``       the typed edges: API request/response models and the task payload
- ``prepare``      request → job (limits, node resolution, chunking); raises InvalidInput
- ``chunking``     pure: long text → overlapping pieces
- ``bulk``         pure: bulk request builders, chunking by count and bytes, per-item outcomes
- ``pipeline``     embed + bulk with per-item retries (one attempt of a job)
- ``execute``      one attempt → done or retry later, dead-lettering permanent failures
- ``dead_letters`` the dead-letter store (an OpenSearch index)
- ``inprocess``    embedded mode: the same attempt code on a thread pool in the API
- ``service``      the queue protocol and the choice between embedded and worker mode
"""
