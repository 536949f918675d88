"""The read model: what is read far more than written, kept as ready-to-send bytes.

``versions.bump`` (in every write transaction), ``model.ReadModel`` (one per process, on
``AppState.readmodel``), ``http.serve`` (cached reads with ETag / 304). docs/performance.md
describes the consistency rules.
"""
