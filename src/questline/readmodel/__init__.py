"""The read model: what is read far more than written, kept as ready-to-send bytes.

``versions.bump`` (in every write transaction), ``service.ReadModel`` (one per process,
on ``app.state.readmodel``, reached with ``readmodel_of``), ``http.serve`` (cached reads
with ETag / 304) and ``http.CachedRead`` (the same, answered early by the fast lane).
docs/performance.md describes the consistency rules.
"""
