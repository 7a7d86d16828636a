"""``mfu-tracker run`` on a GPU: an unmodified script measured with no change.

Run by benchmarks/gpu/run.sh. Launches ``mfu-tracker run --log
OUTDIR/run-agent.jsonl -- python examples/train_plain.py --device cuda:N
--autocast bf16`` (``make run``'s GPT-2, a bare loop that knows nothing of
mfu_tracker) and checks what a person would look at:

* the command's exit status is 0 and the agent never stopped;
* the detection line says dtype bf16 from autocast and a datasheet peak;
* the log's run record has the datasheet peak (bf16) and every metrics line
  has an MFU in (0, 1] and tokens per step = batch x sequence;
* the ledger's FLOPs per step equal the count of the same step on this GPU
  by a ``FlopCounter`` in this process (the model built the same way);
* OFU beside MFU: on a device with NVML's GPM counters (compute capability
  9.0 or later), every metrics line after the first (whose window may open
  before the first reading) has ``throughput/hw/tensor_active``, and MFU's
  self-check ``throughput/hw/mfu_consistency`` where the pipes were busy
  (the agent's tracker reads NVML as any CUDA-clock tracker does); on an
  older device it is not asked;
* ``mfu-tracker report`` reads the log;
* the live page (served from the finished log as ``run`` serves it, read at
  ``/api/state``) shows MFU equal to the log's last line, and OFU beside it on
  a device with GPM.

Everything goes to OUTDIR/run-agent.json (and .txt: the command's output).
Exit status 1 when a check fails; 0 with a note where there is no CUDA device.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# 4 windows of 50 steps: each long enough for a GPM reading (>= 0.1 s) on a fast GPU
STEPS, LOG_EVERY, BATCH, SEQ = 200, 50, 8, 128


def _launch(out_dir: Path, device: int) -> subprocess.CompletedProcess:
    log = out_dir / "run-agent.jsonl"
    if log.exists():
        log.unlink()
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    cmd = [sys.executable, "-m", "mfu_tracker", "run", "--log", str(log), "--log-every", str(LOG_EVERY),
           "--", sys.executable, str(ROOT / "examples" / "train_plain.py"),
           "--device", f"cuda:{device}", "--autocast", "bf16", "--steps", str(STEPS),
           "--batch-size", str(BATCH), "--seq-len", str(SEQ), "--quiet"]
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)


def _reference_flops(device: int) -> float:
    """One training step of the same model counted here (forward + backward)."""
    import argparse

    import torch

    sys.path.insert(0, str(ROOT / "examples"))
    from train_plain import build_model

    from mfu_tracker import FlopCounter

    args = argparse.Namespace(vocab_size=8192, seq_len=SEQ, hidden=256, layers=4, heads=4)
    model = build_model(args).to(f"cuda:{device}")
    ids = torch.randint(0, 8192, (BATCH, SEQ), device=f"cuda:{device}")
    with FlopCounter(modules=False) as counter:
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = model(input_ids=ids, labels=ids).loss
        loss.backward()
    return float(counter.model_flops)


def _report(out_dir: Path) -> subprocess.CompletedProcess:
    """``mfu-tracker report --numbers`` on the run's log (its figures as text)."""
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.run([sys.executable, "-m", "mfu_tracker", "report",
                           str(out_dir / "run-agent.jsonl"), "--out", str(out_dir / "run-agent.png"),
                           "--numbers"], env=env, capture_output=True, text=True, timeout=120)


def _page_problems(out_dir: Path, rows: list, gpm: bool) -> list:
    """The page's MFU and OFU against the log (the document ``run`` serves)."""
    import urllib.request

    from mfu_tracker.cli.view import serve

    server = serve(str(out_dir / "run-agent.jsonl"))
    try:
        with urllib.request.urlopen(server.url + "api/state", timeout=60) as response:
            state = json.loads(response.read())
    finally:
        server.close()
    (out_dir / "run-agent-page.json").write_text(json.dumps(state, indent=1))
    problems = []
    head = {f["id"]: f for f in state["head"]["figures"]}
    if not rows or head.get("mfu", {}).get("value") != rows[-1].get("throughput/mfu"):
        problems.append(f"page MFU {head.get('mfu', {}).get('value')} is not the log's")
    ofu = (state.get("ladder") or {}).get("ofu") or {}
    if gpm and ofu.get("value") is None:
        problems.append(f"page: no OFU beside MFU on a device with GPM ({ofu})")
    return problems


def main(out_dir: str, device: int = 0) -> int:
    import torch

    out = Path(out_dir)
    if not torch.cuda.is_available():
        print("run_check: no CUDA device: nothing to check")
        return 0
    done = _launch(out, device)
    (out / "run-agent.txt").write_text(done.stdout + "\n--- stderr ---\n" + done.stderr)
    records = [json.loads(line) for line in (out / "run-agent.jsonl").read_text().splitlines()] \
        if (out / "run-agent.jsonl").exists() else []
    rows = [r for r in records if "record" not in r]
    run = next((r for r in records if r.get("record") == "run"), {})
    reference = _reference_flops(device)
    problems = []
    if done.returncode != 0:
        problems.append(f"exit status {done.returncode}")
    if "the agent stopped" in done.stderr:
        problems.append("the agent stopped (see run-agent.txt)")
    if "dtype bf16 (autocast)" not in done.stderr or "(datasheet: " not in done.stderr:
        problems.append("the detection line lacks dtype bf16 (autocast) or a datasheet peak")
    if (run.get("peak_source"), run.get("dtype")) != ("datasheet", "bf16"):
        problems.append(f"run record: peak {run.get('peak_source')} {run.get('dtype')}")
    for row in rows:
        mfu = row.get("throughput/mfu")
        tokens = row.get("throughput/tokens_per_sec", 0) * row.get("throughput/step_time_s", 0)
        ledger = row["ledger"]
        if mfu is None or not 0 < mfu <= 1:
            problems.append(f"step {row['step']}: MFU {mfu}")
        if abs(tokens - BATCH * SEQ) > 1e-6 * BATCH * SEQ:
            problems.append(f"step {row['step']}: tokens/step {tokens}")
        if ledger["model_flops"] != reference * ledger["flops_steps"]:
            problems.append(f"step {row['step']}: FLOPs {ledger['model_flops']} for "
                            f"{ledger['flops_steps']} steps, counted here {reference} each")
    if not rows:
        problems.append("no metrics line in the log")
    gpm = torch.cuda.get_device_capability(device) >= (9, 0)
    for row in rows[1:] if gpm else ():
        active = row.get("throughput/hw/tensor_active")
        if active is None or (active > 0 and "throughput/hw/mfu_consistency" not in row):
            problems.append(f"step {row['step']}: OFU (hw/tensor_active) {active}, self-check "
                            f"{row.get('throughput/hw/mfu_consistency')} on a device with GPM "
                            "(see the warnings in run-agent.txt)")
    if rows:
        problems += _page_problems(out, rows, gpm)
    report = _report(out)
    if report.returncode != 0:
        problems.append(f"mfu-tracker report exited {report.returncode}: {report.stderr[-500:]}")
    results = {"device": torch.cuda.get_device_name(device), "exit_status": done.returncode,
               "reference_flops_per_step": reference, "gpm": gpm,
               "ofu": [row.get("throughput/hw/tensor_active") for row in rows],
               "mfu": [row.get("throughput/mfu") for row in rows],
               "report": report.stdout, "lines": rows, "problems": problems}
    (out / "run-agent.json").write_text(json.dumps(results, indent=1))
    print(json.dumps({k: v for k, v in results.items() if k not in ("lines", "report")}, indent=1))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 0))
