"""``make bench-platform``: Questline over many organizations (issue 30).

    .venv/bin/python -m bench.platform [--quick] [--backend sqlite|postgresql|both]

* ``bench.platform.run`` — the run: seed many organizations (bench/dataset/tenants.py),
  start ``questline serve``, measure, write bench/results/<date>-platform-<backend>.json
  and the platform section of BENCHMARKS.md;
* ``bench.platform.traffic`` — the mixed, skewed traffic (wrk, bench/harness/lua/platform.lua);
* ``bench.platform.cold`` — a read whose entry was evicted: statements and latency, in-process;
* ``bench.platform.streams`` — thousands of open ``GET /leaderboard/stream``: write → event
  time, memory per stream, the caps;
* ``bench.platform.memory`` — the workers' resident memory;
* ``bench.platform.report`` — results, goals and the BENCHMARKS.md section.
"""
