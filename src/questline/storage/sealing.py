"""Secrets at rest (webhook signing secrets, an LRS's credentials): sealed with AES-256-GCM.

* **One key per organization**, derived with HKDF-SHA256 from the service's signing
  secret (``QUESTLINE_JWT_SECRET``, else the one kept in the data directory) and the
  organization's id: a copy of the database or of its backups alone opens nothing, and
  a value copied into another organization's row does not open there.
* **The service's own secrets** (the LTI tool's private keys), which belong to no
  organization, are sealed in the scope ``SERVICE``: a key derived the same way with
  another HKDF ``info`` than any organization's, so nothing sealed for an organization
  opens there, nor the other way round.
* **What it is** (``purpose``, e.g. ``"webhook secret"``) is bound as associated
  data: a sealed value moved into a column of another kind does not open either.
* **Key rotation**: the sealed text names the signing secret that sealed it
  (``qs1:<key id>:<nonce + ciphertext, base64url>``, the key id a short HKDF fingerprint
  of that secret, never the secret). ``unseal`` opens values of the current secret and,
  when ``QUESTLINE_JWT_PREVIOUS_SECRET`` is set, of the previous one; callers seal anew
  on their next write (``is_current``), so the previous secret can be dropped once
  everything was rewritten.

**Keyed digests** (``digest``, ``digest_matches``): for a value that must be recognized
but never read back (a task's expected answer), HMAC-SHA256 under a key derived like the
cipher's (the signing secret, the organization, the purpose). A copy of the database
holds digests that cannot be tested offline without the signing secret; comparing is in
constant time. The digest names its signing secret as a sealed value does, so a digest
made under the previous secret still matches while that secret is configured.

Plumbing only: the callers hand in the secrets; nothing here imports a domain.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import hmac
import os
import uuid
from dataclasses import dataclass
from typing import Final, Literal

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

PREFIX = "qs1:"
DIGEST_PREFIX = "qd1:"
"""The format's version; a value without it was not sealed by this module."""
_SALT = b"questline sealing v1"
_NONCE_BYTES = 12

SERVICE: Final = "service"
"""The scope of secrets that belong to the service, not to an organization."""
Scope = uuid.UUID | Literal["service"]
"""An organization's id, or ``SERVICE``."""


def _info(scope: Scope) -> bytes:
    # Distinct by construction: an organization's info is b"org:" + 16 bytes.
    return b"org:" + scope.bytes if isinstance(scope, uuid.UUID) else b"service"


class Unreadable(ValueError):
    """Not sealed by this module, sealed under a signing secret that is neither the
    current nor the previous one, or altered."""


@functools.lru_cache(maxsize=16)
def key_id(signing_secret: str) -> str:
    """A short public name of a signing secret (which secret sealed a value)."""
    digest = hmac.new(signing_secret.encode(), b"questline sealing key id", hashlib.sha256)
    return digest.hexdigest()[:8]


@functools.lru_cache(maxsize=4096)
def _derived(signing_secret: str, info: bytes) -> bytes:
    """A key derived from a signing secret for one scope (and purpose): derived once a
    process for each, as a learner's answer or a webhook's delivery asks for one on
    every write; bounded, as the organizations are many."""
    return HKDF(algorithm=hashes.SHA256(), length=32, salt=_SALT, info=info).derive(
        signing_secret.encode()
    )


@functools.lru_cache(maxsize=4096)
def _cipher_under(signing_secret: str, info: bytes) -> AESGCM:
    """The cipher of a derived key: kept, as a learner's every answer seals one (an
    ``AESGCM`` holds only its key; each call makes its own context)."""
    return AESGCM(_derived(signing_secret, info))


def is_sealed(value: str) -> bool:
    return value.startswith(PREFIX)


@dataclass(frozen=True, slots=True)
class Sealer:
    """Seals with ``current``; opens what ``current`` or ``previous`` sealed."""

    current: str
    previous: str | None = None

    def _cipher(self, signing_secret: str, organization: Scope) -> AESGCM:
        return _cipher_under(signing_secret, _info(organization))

    def _named(self, kid: str) -> str | None:
        """The signing secret (current or previous) whose key id is ``kid``."""
        if kid == key_id(self.current):
            return self.current
        if self.previous and kid == key_id(self.previous):
            return self.previous
        return None

    def seal(self, plaintext: str, *, organization: Scope, purpose: str) -> str:
        nonce = os.urandom(_NONCE_BYTES)
        sealed = self._cipher(self.current, organization).encrypt(
            nonce, plaintext.encode(), purpose.encode()
        )
        body = base64.urlsafe_b64encode(nonce + sealed).decode("ascii")
        return f"{PREFIX}{key_id(self.current)}:{body}"

    def unseal(self, value: str, *, organization: Scope, purpose: str) -> str:
        if not is_sealed(value):
            raise Unreadable("The value is not sealed.")
        kid, _, body = value[len(PREFIX) :].partition(":")
        signing_secret = self._named(kid)
        if signing_secret is None:
            raise Unreadable(
                "The value was sealed under another signing secret (neither the current "
                "nor the previous one)."
            )
        try:
            raw = base64.urlsafe_b64decode(body)
            opened = self._cipher(signing_secret, organization).decrypt(
                raw[:_NONCE_BYTES], raw[_NONCE_BYTES:], purpose.encode()
            )
        except (InvalidTag, ValueError) as exc:
            raise Unreadable("The sealed value does not open here.") from exc
        return opened.decode()

    def is_current(self, value: str) -> bool:
        """Sealed under the current signing secret (else: seal it anew on the next
        write)."""
        return is_sealed(value) and value[len(PREFIX) :].startswith(key_id(self.current) + ":")

    def _digest_key(self, signing_secret: str, organization: uuid.UUID, purpose: str) -> bytes:
        return _derived(signing_secret, b"digest:" + organization.bytes + b":" + purpose.encode())

    def _digest_under(
        self, signing_secret: str, value: str, organization: uuid.UUID, purpose: str
    ) -> str:
        key = self._digest_key(signing_secret, organization, purpose)
        mac = hmac.digest(key, value.encode(), "sha256").hex()
        return f"{DIGEST_PREFIX}{key_id(signing_secret)}:{mac}"

    def digest(self, value: str, *, organization: uuid.UUID, purpose: str) -> str:
        """The keyed digest of ``value`` under the current signing secret."""
        return self._digest_under(self.current, value, organization, purpose)

    def digest_matches(
        self, value: str, stored: str, *, organization: uuid.UUID, purpose: str
    ) -> bool:
        """Whether ``stored`` (a ``digest``) is the digest of ``value``, under the secret
        it names (the current or the previous one); compared in constant time."""
        kid = stored[len(DIGEST_PREFIX) :].partition(":")[0]
        signing_secret = self._named(kid)
        if signing_secret is None or not stored.startswith(DIGEST_PREFIX):
            return False
        expected = self._digest_under(signing_secret, value, organization, purpose)
        return hmac.compare_digest(expected.encode(), stored.encode())

    def digest_is_current(self, stored: str) -> bool:
        """Made under the current signing secret (else: digest anew when the value is
        known again)."""
        return stored.startswith(f"{DIGEST_PREFIX}{key_id(self.current)}:")
