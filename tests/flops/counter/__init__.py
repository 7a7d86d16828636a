"""Tests of mfu_tracker/flops/counter (a package, so file names may repeat across folders)."""
