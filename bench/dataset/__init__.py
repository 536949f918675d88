"""The benchmark's dataset: its shape (``rules``) and the set-based seed (``seed``)."""
