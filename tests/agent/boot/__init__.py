"""Tests of mfu_tracker/agent/_boot, the startup hook of mfu-tracker run."""
