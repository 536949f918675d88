"""Questline's benchmarks: a tool beside the package, run from the repository's root.

    .venv/bin/python -m bench.run [--quick]     # make bench, make bench-quick: BENCHMARKS.md
    .venv/bin/python -m bench.scaleout          # make bench-scale: docs/deploy.md

* ``bench.harness`` — what the runs share: the rows (endpoints) and wrk scripts, the
  service under test and its load generator, the measuring, the results and BENCHMARKS.md;
* ``bench.dataset`` — the benchmark's dataset: its rules and the set-based seed;
* ``bench.probes`` — measurements run by hand when a figure needs explaining (one layer's
  cost, a profile, the load test, the bulk and events benchmarks, uvicorn against granian),
  each ``python -m bench.probes.<name> --help``.
"""
