"""Reproducible speed measurements; `klent bench <name>` runs `benchmarks.<name>.main`."""
