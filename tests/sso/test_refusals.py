"""Every reason a login through the provider is refused has its message on the
dashboard's sign-in page (``frontend/src/views/sso.ts``), not the generic one."""

from __future__ import annotations

import re
from pathlib import Path

from questline.sso.refusals import REASONS

SIGN_IN_PAGE = Path(__file__).resolve().parents[2] / "frontend" / "src" / "views" / "sso.ts"


def test_every_refusal_code_has_a_message_on_the_sign_in_page() -> None:
    source = SIGN_IN_PAGE.read_text(encoding="utf-8")
    table = source.split("export const SSO_ERRORS", 1)[1].split("};", 1)[0]
    codes = set(re.findall(r"^\s*'?([a-z-]+)'?:\s*'", table, flags=re.MULTILINE))
    assert codes == set(REASONS)
