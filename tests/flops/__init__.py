"""Tests of mfu_tracker/flops (a package, so file names may repeat across folders)."""
