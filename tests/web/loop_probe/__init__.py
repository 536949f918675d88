"""What a live server's event loop did in one stretch, measured in CPU time (see
``sitecustomize``): tests assert a bounded amount of work per loop slice instead of a
latency, which a loaded machine stretches whatever the code does."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).parent

SLICE_BOUND = 0.25
"""CPU seconds the loop may spend in one stretch. What is left on the loop for the
heaviest request (a 5 MiB document's event payload: ``model_dump`` and ``json.dumps``
in single calls, statement parameters, a garbage collection) stays well under it;
doing the heavy work itself on the loop (validating a 5 MiB discipline, parsing an
8 MiB CSV, serializing a 20,000-team list at once) is seconds."""


def env(path: Path) -> dict[str, str]:
    """The environment a ``LiveServer`` needs to load the probe, writing to ``path``."""
    inherited = os.environ.get("PYTHONPATH")
    return {
        "PYTHONPATH": os.pathsep.join([str(HERE), *([inherited] if inherited else [])]),
        "QUESTLINE_TEST_LOOP_PROBE": str(path),
    }


@dataclass
class Window:
    """The loop's stretches recorded between ``started`` and ``ended`` (monotonic)."""

    slices: list[float] = field(default_factory=list)
    started: float = 0.0
    ended: float = 0.0

    @property
    def longest(self) -> float:
        return max(self.slices, default=0.0)


def read(path: Path, started: float, ended: float) -> list[float]:
    if not path.exists():
        return []
    found = []
    for line in path.read_text().splitlines():
        at, _, spent = line.partition(" ")
        try:
            when, cpu = float(at), float(spent)
        except ValueError:
            continue  # a line being written
        if started <= when <= ended:
            found.append(cpu)
    return found


@contextmanager
def watching(path: Path) -> Iterator[Window]:
    """The stretches of the loop while the block runs (plus the probe's last tick)."""
    window = Window(started=time.monotonic())
    yield window
    # The stretch that ends with the block ends at the next tick: let it be written.
    time.sleep(0.05)
    window.ended = time.monotonic() + 0.05
    time.sleep(0.05)
    window.slices = read(path, window.started, window.ended)


def loaded(path: Path) -> bool:
    """The server runs the probe (else every bound would hold vacuously)."""
    return path.exists() and "probing" in path.read_text()
