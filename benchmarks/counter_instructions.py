"""What counting a training step costs in instructions: a measure the
machine's noise does not move (counter_overhead.py's end-to-end medians move
by +-0.5% per run on a shared machine).

Runs itself under valgrind's callgrind with instrumentation off, and turns it
on around single steps of the small Llama CPU training step of
counter_overhead.py (forward, backward, AdamW; d=128, L=4, batch 2 x 128):
uncounted and counted with ``FlopCounter()``'s defaults (a new counter per
step, model FLOPs read), ``--pairs`` times; then uncounted and
``FlopCounter(modules=True)`` (the last one kept alive, as a loop's ``with
... as fc`` keeps it: else the next step's first module call puts
``nn.Module.__call__`` back, and that step pays the swap), ``--pairs``
times; after a warm-up, with one counter alive throughout (so the counting
key is on in every step, as in counter_overhead.py). Prints each step's
instruction count and the counted steps' excess over the uncounted ones of
their phase.
Needs ``valgrind`` and its ``valgrind/callgrind.h`` (to build the two-function
library that starts and stops the instrumentation); about 4 minutes per pair
of eager steps on 2 cores.

    .venv/bin/python benchmarks/counter_instructions.py [--pairs 2]
"""
from __future__ import annotations

import argparse
import os
import pathlib
import re
import shutil
import statistics
import subprocess
import sys
import tempfile

_CONTROL = """#include <valgrind/callgrind.h>
void cg_start(void) { CALLGRIND_ZERO_STATS; CALLGRIND_START_INSTRUMENTATION; }
void cg_stop(const char *label) { CALLGRIND_STOP_INSTRUMENTATION; CALLGRIND_DUMP_STATS_AT(label); }
"""
# (label, what it is compared with)
VARIANTS = {"uncounted": None, "FlopCounter()": "uncounted",
            "uncounted, table phase": None, "FlopCounter(modules=True)": "uncounted, table phase"}


def child(library: str, pairs: int) -> None:
    """The steps, under callgrind: one dump per timed step."""
    import ctypes
    import gc

    import torch

    sys.path.insert(0, str(pathlib.Path(__file__).parent))
    from counter_overhead import _llama

    from mfu_tracker.counter import FlopCounter

    torch.set_num_threads(1)
    control = ctypes.CDLL(library)
    model, ids = _llama(128, 2, 128)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)

    def step() -> None:
        model(input_ids=ids, labels=ids).loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    last: list = []

    def counted(**kwargs: bool) -> None:
        with FlopCounter(**kwargs) as fc:
            step()
        fc.model_flops
        if kwargs:
            last[:] = [fc]

    keep = FlopCounter()
    with keep:  # the counting key on in every step
        pass
    labels = list(VARIANTS)
    for phase in ({labels[0]: step, labels[1]: counted},
                  {labels[2]: step, labels[3]: lambda: counted(modules=True)}):
        for _ in range(3):
            for fn in phase.values():
                fn()
        gc.disable()
        for _ in range(pairs):
            for name, fn in phase.items():
                control.cg_start()
                fn()
                control.cg_stop(name.encode())
        gc.enable()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=2, help="rounds of the three steps")
    parser.add_argument("--child", metavar="LIBRARY", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child, args.pairs)
        return
    if shutil.which("valgrind") is None or shutil.which("gcc") is None:
        sys.exit("counter_instructions.py needs valgrind and gcc")
    with tempfile.TemporaryDirectory() as tmp:
        source = pathlib.Path(tmp, "control.c")
        source.write_text(_CONTROL)
        library = str(pathlib.Path(tmp, "libcontrol.so"))
        subprocess.run(["gcc", "-O1", "-shared", "-fPIC", "-o", library, str(source)], check=True)
        out = pathlib.Path(tmp, "cg.out")
        subprocess.run(["valgrind", "--tool=callgrind", "--instr-atstart=no",
                        f"--callgrind-out-file={out}", sys.executable, __file__,
                        "--pairs", str(args.pairs), "--child", library],
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                       env={**os.environ, "PYTHONWARNINGS": "ignore"})
        counts: dict[str, list[int]] = {name: [] for name in VARIANTS}
        for dump in sorted(pathlib.Path(tmp).glob("cg.out.*"), key=lambda p: int(p.suffix[1:])):
            text = dump.read_text(errors="replace")
            label = re.search(r"^desc: Trigger: Client Request: (.*)$", text, re.M)
            total = re.search(r"^totals: (\d+)", text, re.M)
            if label and total and label.group(1) in counts:
                counts[label.group(1)].append(int(total.group(1)))
    print(f"Small Llama CPU training step, eager (d=128, L=4, batch 2 x 128, AdamW), "
          f"instructions per step under callgrind, {args.pairs} of each")
    for name, base in VARIANTS.items():
        med = statistics.median(counts[name])
        line = (f"  {name:<28}{med / 1e6:>10.2f} M  "
                f"({', '.join(f'{v / 1e6:.2f}' for v in counts[name])})")
        if base is not None:
            ref = statistics.median(counts[base])
            line += f"  {100 * (med - ref) / ref:+.3f}% vs {base}"
        print(line)


if __name__ == "__main__":
    main()
