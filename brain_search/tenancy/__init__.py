"""Tenants: API keys, rate limits, the audit log and erasure."""
