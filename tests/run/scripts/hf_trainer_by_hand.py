"""``hf_trainer_plain.py`` instrumented by hand: the same Trainer with
``MFUCallback(log_path=LOG)``, the reference ``mfu-tracker run`` is held to.

    python hf_trainer_by_hand.py LOG OUTDIR [hf_trainer_plain.py's flags] [--window 10]
"""
from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from hf_trainer_plain import build_trainer, parse_args  # noqa: E402

from mfu_tracker.integrations import MFUCallback  # noqa: E402


def main() -> None:
    log, argv = sys.argv[1], sys.argv[2:]
    window = 10     # the agent's: its log_every (10 by default); its warm-up, 1 (the same)
    if "--window" in argv:
        at = argv.index("--window")
        window = int(argv[at + 1])
        del argv[at:at + 2]
    build_trainer(parse_args(argv), callbacks=[MFUCallback(log_path=log, window=window)]).train()


if __name__ == "__main__":
    main()
