"""What following a growing log costs the process that serves the live page.

A copy of LOG (its run-end record left out: a run still going) is read by a
``PageState`` (``mfu-tracker view``'s document), then its newest metrics line
is appended ``--lines`` times, one line at a time, each followed by a
snapshot (what a poll of the page does when the log grew); then polls with
nothing new. Prints the CPU seconds of the first snapshot, the median (min,
max) of one appended line's, and a poll's with nothing new.

    .venv/bin/python benchmarks/view_follow.py build/log_scale/log_100000.jsonl

(``benchmarks/log_scale.py`` writes the logs of 10^4..10^6 lines.)
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time

from mfu_tracker.cli.view import _state
from mfu_tracker.cli.view._state import PageState


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("log")
    parser.add_argument("--lines", type=int, default=20)
    args = parser.parse_args()
    _state.MIN_READ_INTERVAL_S = 0.0          # every snapshot reads (the page polls every 2 s)
    with tempfile.TemporaryDirectory() as folder:
        copy = os.path.join(folder, "follow.jsonl")
        last, count = None, 0
        with open(args.log, encoding="utf-8") as src, open(copy, "w", encoding="utf-8") as dst:
            for line in src:
                if '"run_end"' not in line:
                    dst.write(line)
                    last, count = line, count + 1
        record = json.loads(last)
        state = PageState(copy)
        start = time.process_time()
        state.snapshot()
        first = time.process_time() - start
        costs = []
        with open(copy, "a", encoding="utf-8") as out:
            for i in range(args.lines):
                record["step"] += 10
                record["time"] += 10.0
                out.write(json.dumps(record) + "\n")
                out.flush()
                start = time.process_time()
                doc = state.snapshot()
                costs.append(time.process_time() - start)
                assert doc["log"]["lines"] >= count - 1 + i + 1
        start = time.process_time()
        for _ in range(args.lines):
            state.snapshot()
        idle = (time.process_time() - start) / args.lines
    print(f"{count:,} lines: first snapshot {first:.2f} s CPU; one appended line: median "
          f"{statistics.median(costs) * 1e3:.1f} ms CPU (min {min(costs) * 1e3:.1f}, max "
          f"{max(costs) * 1e3:.1f}); a poll with nothing new {idle * 1e3:.2f} ms")


if __name__ == "__main__":
    main()
