"""The engine stage of a recall: everything that builds, sends or reads an engine request. The
query bodies (``queries``, with the tenant's BM25 clauses), the tenant's statistics they weigh
with (``tenant_stats``, counted ahead by ``count_ahead``), the one ``_msearch`` (``search``), the
shards that did not answer (``shards``), superseded versions (``supersede``), the stored sources a
hit reads (``sources``) and the candidates it returns (``candidates``). Nothing here ranks."""
