"""Tests of mfu_tracker/_native (a package, so file names may repeat across folders)."""
