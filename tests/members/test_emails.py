"""The fast e-mail check agrees with ``EmailStr`` on every address: result and message."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from questline.members.emails import EMAIL, normalize_email

ATEXT = "abcXYZ019!#$%&'*+/=?^_`{|}~-"
LOCAL_CHARS = ATEXT + '. "(),:;<>@[\\]é'
LABEL_CHARS = "abcxyzABCXYZ0189-_é"
TLDS = ["com", "ORG", "de", "local", "localhost", "test", "invalid", "onion", "arpa", "123", "x"]


def outcome(check: object, value: str) -> tuple[str, object]:
    try:
        return "ok", check(value)  # type: ignore[operator]
    except ValidationError as exc:
        return "error", [d["msg"] for d in exc.errors()]


labels = st.text(LABEL_CHARS, min_size=0, max_size=70)
domains = st.builds(
    lambda parts, tld, dot: ".".join([*parts, tld]) + dot,
    st.lists(labels, min_size=0, max_size=4),
    st.sampled_from(TLDS),
    st.sampled_from(["", "", "", "."]),
)
addresses = st.one_of(
    st.builds(
        lambda local, domain: f"{local}@{domain}", st.text(ATEXT + ".", max_size=80), domains
    ),
    st.builds(
        lambda local, domain: f"{local}@{domain}", st.text(LOCAL_CHARS, max_size=20), domains
    ),
    st.text(LOCAL_CHARS + LABEL_CHARS, max_size=40),
)


@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(addresses)
def test_the_fast_path_agrees_with_emailstr(address: str) -> None:
    assert outcome(normalize_email, address) == outcome(EMAIL.validate_python, address)


def test_known_cases() -> None:
    assert normalize_email("Ada.Lovelace+q@Example.ORG") == "Ada.Lovelace+q@example.org"
    assert normalize_email("zoë@bücher.de") == EMAIL.validate_python("zoë@bücher.de")
    for bad in ("a@localhost", "a..b@example.org", "a@example", "a@-x.org", "a@x.org."):
        assert outcome(normalize_email, bad)[0] == "error", bad
    long_local = "x" * 65 + "@example.org"  # the slow path decides, as EmailStr does
    assert outcome(normalize_email, long_local) == outcome(EMAIL.validate_python, long_local)
