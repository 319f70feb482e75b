"""Celery workers: embed memories and bulk-index them (see issue: ingestion)."""
