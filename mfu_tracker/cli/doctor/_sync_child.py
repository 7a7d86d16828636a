"""The child process of the zero-synchronization check (:mod:`._shim`).

``python -m mfu_tracker.cli.doctor._sync_child --steps N`` runs N ``Tracker``
steps of real work whose core loads the counting shim as its driver, reads
``metrics()`` every step, and prints one JSON line: the shim's counts, the
steps seen, dropped and pending, and the warnings.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import warnings
from typing import List, Optional

from ...tracker import Tracker
from ._platform import FakeGpuPlatform, open_platform
from ._shim import CUDA_LIBRARY_ENV, shim_counts


def main(argv: Optional[List[str]] = None) -> int:
    """The child: ``steps`` Tracker steps of real work through the shim, one JSON line."""
    parser = argparse.ArgumentParser(prog="python -m mfu_tracker.cli.doctor._sync_child")
    parser.add_argument("--steps", type=int, required=True)
    parser.add_argument("--device", type=int, default=0)
    args = parser.parse_args(argv)
    library = os.environ[CUDA_LIBRARY_ENV]
    with warnings.catch_warnings(record=True) as caught:
        # mfu_tracker warns with RuntimeWarning (a GPU clock falling back, a
        # driver call failing); torch's own UserWarnings are not the check's.
        warnings.simplefilter("ignore")
        warnings.simplefilter("always", RuntimeWarning)
        platform = open_platform(args.device)
        work = platform.step_work(quick=False)
        spec = platform.spec()
        # The check reads no MFU: an unknown device gets a nominal peak, so
        # any warning left is about the clock.
        peak = {"spec": spec} if spec is not None else {"peak_tflops": 1.0}
        tracker = Tracker(work.flops, dtype=work.dtype, clock=platform.clock, device=platform.device,
                          window=args.steps, warmup=1, **peak)
        clock = tracker.clock
        tracker.step(num_tokens=work.tokens)
        for _ in range(args.steps):
            work.run()
            tracker.step(num_tokens=work.tokens)
            tracker.metrics()  # every step: must never wait
        counts = shim_counts(library)  # before close(), which waits by design
        if isinstance(platform, FakeGpuPlatform):  # the fake's own count: the shim's reference
            counts["driver_sync_calls"] = platform.driver_sync_calls()
        summary = tracker.summary()
        tracker.close()
    report = {"steps": args.steps, "clock": clock, "platform": platform.kind,
              "steps_dropped": summary["steps_dropped"], "steps_pending": summary["steps_pending"],
              "steps_seen": summary["steps_seen"],
              "warnings": [str(w.message) for w in caught], **counts}
    print(json.dumps(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
