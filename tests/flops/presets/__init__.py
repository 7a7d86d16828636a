"""Tests of mfu_tracker/flops/presets (a package, so file names may repeat across folders)."""
