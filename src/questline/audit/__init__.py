"""The audit log: every change made through the API, the dashboard or a provider, in
the organization, written in the transaction of the change (``record``)."""

from questline.audit.service import record, record_many

__all__ = ["record", "record_many"]
