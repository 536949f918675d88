"""Outbound HTTP deliveries, whatever they carry (webhooks, xAPI statements).

The parts every dispatcher of the outbox shares: where a delivery may go
(``addresses``: SSRF checks and the pinned address), how many may be in flight and for
whom (``fairness``), and how long a failed attempt waits before the next
(``retry``). Domain-free: it imports no domain package.
"""
