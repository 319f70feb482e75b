"""The knowledge graph (X axis): its store and its operations."""
