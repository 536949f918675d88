"""How long a test waits for something that must happen before it fails instead."""

HANG_GUARD = 300.0
"""Seconds after which a missing answer or event fails the test rather than hanging the
suite: a guard against a hang, far beyond any wait on a loaded machine, never a timing."""
