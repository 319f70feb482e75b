"""brain-search: three-dimensional memory retrieval on OpenSearch."""
