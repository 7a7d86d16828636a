"""The commands that read a metrics log, against the length of the log.

A long pretraining job logs for weeks: at one window record every 10 steps,
a million steps is 100,000 lines. This builds such logs from a real run's
record -- a tiny ``Tracker`` run a few steps with ``log_path=`` (CPU clock,
the data / forward / backward / optimizer phases marked, so the waterfall is
in it), its metrics line replicated with the steps, times and ledger steps
advanced and the window's figures and the interval's seconds jittered by up
to 2% (a real run's figures move; identical lines would flatter the report's
sample and the ledger's median) -- at 10^4, 10^5 and
10^6 lines (10^5 to 10^7 steps), and runs, as separate processes:

* a bare pass of ``json.loads`` over every line of the same file (the
  reference: what reading the file costs at all);
* ``mfu-tracker goodput LOG``, ``mfu-tracker advise LOG``,
  ``mfu-tracker report LOG --out r.png``, ``mfu-tracker view LOG --json``
  (the live page's document: what its first load reads) and
  ``mfu-tracker passport LOG`` (the model card's compute section);
* each command on the run's own short log (its fixed cost: start-up,
  imports, drawing).

Each is run ``--repeats`` times, interleaved (the machine may be shared: one
slow spell hits every command alike), and the median is printed with the
spread (min-max). Times are CPU seconds of the child (user + system, from
``wait4``; the wall time is printed beside, it moves with the machine's
load), the ratio is against the bare pass's median at the same length, and
the peak memory is the child's maximum resident set (``ru_maxrss``).

    .venv/bin/python benchmarks/log_scale.py                     # 10k, 100k, 1M lines
    .venv/bin/python benchmarks/log_scale.py --lines 10000 100000 --repeats 5
    .venv/bin/python benchmarks/log_scale.py --lines 100000 --source /tmp/other-checkout

The logs are written under ``--dir`` (default ``build/log_scale``; 1.2 GB at
10^6 lines) and reused when there (delete them to rebuild).
"""
from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Dict, List, Tuple

ROOT = Path(__file__).resolve().parent.parent
CLI = [sys.executable, "-c", "import sys; from mfu_tracker.cli import main; sys.exit(main())"]
EVERY = 10                 # steps per metrics line
BARE = ("import json, sys\n"
        "with open(sys.argv[1], 'rb') as lines:\n"
        "    for line in lines:\n"
        "        json.loads(line)\n")
#: The window's figures that move from line to line (jittered), by key suffix.
MOVING = ("/mfu", "/tokens_per_sec", "/achieved_tflops", "/step_time_s", "/step_time_min_s",
          "/step_time_max_s")


def real_run(out: Path) -> Path:
    """A tiny Tracker's log: a run record, three metrics lines, a run end."""
    script = f"""
import time
from mfu_tracker import Tracker
t = Tracker(1e9, dtype="bf16", peak_tflops=100.0, clock="cpu", window={EVERY}, warmup=0,
            log_path={str(out)!r})
t.step()
for i in range({3 * EVERY}):
    for phase, seconds in (("data", 2e-4), ("forward", 4e-4), ("backward", 6e-4),
                           ("optimizer", 2e-4)):
        with t.phase(phase):
            time.sleep(seconds)
    t.step(num_tokens=1024)
    if (i + 1) % {EVERY} == 0:
        t.metrics()
t.close()
"""
    if out.exists():
        out.unlink()
    subprocess.run([sys.executable, "-c", script], check=True, cwd=ROOT,
                   env={**os.environ, "PYTHONPATH": str(ROOT)})
    return out


def variants(line: Dict, count: int, rng: random.Random) -> List[Dict]:
    """``count`` copies of a metrics line, its moving figures jittered (the
    ledger interval's seconds by one factor per line)."""
    out = []
    for _ in range(count):
        copy = {k: (v * (1 + 0.02 * (rng.random() - 0.5))
                    if isinstance(v, float) and (k.endswith(MOVING) or "/mfu_lost/" in k) else v)
                for k, v in line.items()}
        scale = 1 + 0.02 * (rng.random() - 0.5)
        ledger = dict(copy["ledger"])
        ledger["step_s"] *= scale
        ledger["phase_s"] = {k: v * scale for k, v in ledger["phase_s"].items()}
        copy["ledger"] = ledger
        out.append(copy)
    return out


def build(real: Path, out: Path, lines: int) -> Path:
    """``lines`` metrics lines from the real run's record (module docstring)."""
    records = [json.loads(x) for x in real.read_text().splitlines()]
    run, line = records[0], records[2]
    rng = random.Random(lines)
    pool = variants(line, 1000, rng)
    step_s = line["ledger"]["step_s"]
    t0 = line["time"]
    partial = out.with_suffix(".partial")
    with open(partial, "w", encoding="utf-8") as f:
        f.write(json.dumps(run) + "\n")
        for i in range(lines):
            record = dict(pool[i % len(pool)])
            ledger = dict(record["ledger"])
            record["step"] = (i + 1) * EVERY
            record["time"] = t0 + i * step_s
            ledger["from_step"], ledger["to_step"] = i * EVERY, (i + 1) * EVERY
            record["ledger"] = ledger
            f.write(json.dumps(record) + "\n")
        f.write(json.dumps({"record": "run_end", "time": t0 + lines * step_s,
                            "step": lines * EVERY}) + "\n")
    partial.replace(out)
    return out


#: The source tree the commands run from, as their working directory and on
#: PYTHONPATH (``--source``: another checkout, to compare; its ``mfu_tracker``
#: needs its built extensions).
SOURCE = ROOT


def child(argv: List[str]) -> Tuple[float, float, float]:
    """(CPU s, wall s, peak RSS MB) of one child process."""
    start = time.perf_counter()
    proc = subprocess.Popen(argv, cwd=SOURCE, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            env={**os.environ, "PYTHONPATH": str(SOURCE)})
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    err = proc.stderr.read().decode() if proc.stderr else ""
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} failed: {err}")
    return usage.ru_utime + usage.ru_stime, wall, usage.ru_maxrss / 1024


def commands(log: Path, png: Path) -> Dict[str, List[str]]:
    return {"json.loads": [sys.executable, "-c", BARE, str(log)],
            "goodput": CLI + ["goodput", str(log)],
            "advise": CLI + ["advise", str(log)],
            "report": CLI + ["report", str(log), "--out", str(png)],
            "view --json": CLI + ["view", str(log), "--json"],
            "passport": CLI + ["passport", str(log)]}


def measure(log: Path, png: Path, repeats: int) -> Dict[str, List[Tuple[float, float, float]]]:
    runs: Dict[str, List[Tuple[float, float, float]]] = {}
    for _ in range(repeats):
        for name, argv in commands(log, png).items():
            runs.setdefault(name, []).append(child(argv))
    return runs


def summary(runs: Dict[str, List[Tuple[float, float, float]]]) -> Dict[str, Dict[str, float]]:
    bare = statistics.median(cpu for cpu, _, _ in runs["json.loads"])
    out = {}
    for name, values in runs.items():
        cpus = [cpu for cpu, _, _ in values]
        out[name] = {"cpu": statistics.median(cpus), "min": min(cpus), "max": max(cpus),
                     "ratio": statistics.median(cpus) / bare,
                     "wall": statistics.median(w for _, w, _ in values),
                     "rss": max(r for _, _, r in values)}
    return out


def table(rows: List[Tuple[str, int, Dict[str, Dict[str, float]]]]) -> str:
    names = list(commands(Path("log"), Path("png")))
    head = f"{'log':>22} | " + " | ".join(f"{n:>30}" for n in names)
    lines = [head, "-" * len(head)]
    for label, size, figures in rows:
        cells = []
        for n in names:
            f = figures[n]
            cells.append(f"{f['cpu']:6.2f} s x{f['ratio']:4.2f} "
                         f"({f['min']:.2f}-{f['max']:.2f}) {f['rss']:4.0f} MB")
        lines.append(f"{label:>22} | " + " | ".join(f"{c:>30}" for c in cells))
    lines.append("CPU seconds (user + system) of each process, median of the repeats, "
                 "x = over json.loads at the same length, (min-max), peak RSS")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lines", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--dir", default=str(ROOT / "build" / "log_scale"))
    parser.add_argument("--source", default=str(ROOT),
                        help="run the commands from this source tree (default: this checkout)")
    parser.add_argument("--skip-fixed", action="store_true",
                        help="leave out the commands on the run's own short log")
    args = parser.parse_args()
    global SOURCE
    SOURCE = Path(args.source).resolve()
    where = Path(args.dir)
    where.mkdir(parents=True, exist_ok=True)
    real = real_run(where / "real.jsonl")
    png = Path(tempfile.mkdtemp()) / "r.png"
    rows = [] if args.skip_fixed else \
        [("the run's own (fixed)", 3, summary(measure(real, png, args.repeats)))]
    for lines in args.lines:
        log = where / f"log_{lines}.jsonl"
        if not log.exists():           # written whole or not at all (build: rename)
            build(real, log, lines)
        size = log.stat().st_size
        label = f"{lines:,} lines {size / 1e6:,.0f} MB"
        rows.append((label, lines, summary(measure(log, png, args.repeats))))
        print(table(rows), flush=True)
        print(flush=True)
    for label, lines, figures in rows:
        wall = ", ".join(f"{n} {f['wall']:.2f}" for n, f in figures.items())
        print(f"wall s (median) {label}: {wall}")


if __name__ == "__main__":
    main()
