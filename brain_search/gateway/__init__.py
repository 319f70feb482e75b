"""The engine gateway: nginx in front of OpenSearch, a deployed component of its own."""
