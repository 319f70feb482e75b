"""Index templates as JSON (data only), shipped inside the wheel as package data and read through
``importlib.resources`` by ``brain_search.store.templates``."""
