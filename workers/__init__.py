"""Celery workers: embed memories and bulk-index them.

- ``app``      the Celery app factory (settings in, nothing at import time)
- ``tasks``    the ingest task: one attempt of a job, retried with what is still pending
- ``runtime``  what a worker process holds (client, model, pipeline), built on first use
- ``queue``    the API side: submit a job, read a task's status (tenant checked)
"""
