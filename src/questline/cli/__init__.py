"""The ``questline`` command."""
