"""One-off measurements, run by hand: ``python -m bench.probes.<name> --help``."""
