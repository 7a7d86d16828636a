"""Tests of mfu_tracker/device (a package, so file names may repeat across folders)."""
