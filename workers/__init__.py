"""Celery workers: embed memories and bulk-index them.

- ``app``      the Celery app factory (settings in, nothing at import time)
- ``tasks``    the ingest task: one attempt of a job, retried with what is still pending
- ``runtime``  what a worker process holds (client, model, pipeline), built on first use
- ``spool``    dead letters and task states kept in Redis while OpenSearch cannot take them
- ``probes``   the liveness file for Kubernetes
- ``cli``      ``brain-search worker``

The API side (submit a job, read a task's status) is ``brain_search.ingest.broker``.
"""
