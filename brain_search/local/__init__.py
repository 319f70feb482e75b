"""The local stack `make run` and the tests start (node, Redis, processes, demo); a deployment never imports it."""
