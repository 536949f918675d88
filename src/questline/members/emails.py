"""E-mail addresses validated and normalized exactly as ``pydantic.EmailStr`` does, fast.

``EmailStr`` (email-validator) spends most of its time on an address on the domain, and
a bulk import checks tens of thousands of addresses that share a handful of domains
(figures: docs/performance.md, "Figures behind the code"). For an address of the plain
form — a dot-atom ASCII local part, an ASCII host name — email-validator's verdict is
its rules on the local part (the dot-atom syntax, checked here the same way), on the
whole length (at most 254), and on the domain, which email-validator itself checks here,
once a domain. Every other address (also a local part over 64 characters, which a strict
email-validator would refuse), and every address that fails, goes through ``EmailStr``
as it is, so results and messages are ``EmailStr``'s; a property test holds the two
together.
"""

from __future__ import annotations

import functools
import re
from typing import Annotated

from pydantic import EmailStr, Field, TypeAdapter, ValidationError

_ATEXT = r"[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]"
_PLAIN = re.compile(rf"({_ATEXT}+(?:\.{_ATEXT}+)*)@([A-Za-z0-9][A-Za-z0-9.-]*)")
MAX_LOCAL_PART = 64
MAX_ADDRESS = 254

EMAIL = TypeAdapter(Annotated[EmailStr, Field(max_length=320)])
"""The e-mail type of ``POST /team/{id}/members``."""


@functools.lru_cache(maxsize=1024)
def _normalized_domain(domain: str) -> str | None:
    """The domain as email-validator writes it, or None when it refuses the domain."""
    try:
        return EMAIL.validate_python(f"a@{domain}").rpartition("@")[2]
    except ValidationError:
        return None


def normalize_email(value: str) -> str:
    """The address as ``EmailStr`` normalizes it; ``ValidationError`` (its own) otherwise."""
    plain = _PLAIN.fullmatch(value)
    if plain is not None and len(plain[1]) <= MAX_LOCAL_PART and len(value) <= MAX_ADDRESS:
        domain = _normalized_domain(plain[2])
        if domain is not None:
            return f"{plain[1]}@{domain}"
    return EMAIL.validate_python(value)
