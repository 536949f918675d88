"""The audit log: every change made through the API, the dashboard or a provider, in
the organization, written in the transaction of the change (``record``)."""

from questline.audit.service import Change, record, record_many, record_on

__all__ = ["Change", "record", "record_many", "record_on"]
