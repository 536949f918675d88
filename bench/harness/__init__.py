"""What the benchmark runs share: rows, load generator, service, measuring and reports."""
