#!/usr/bin/env bash
# benchmarks/gpu/run.sh OUTDIR -- build mfu_tracker in place and run the full
# `mfu-tracker doctor` on this machine's GPU; table, JSON and logs go to OUTDIR.
#
# For a fresh checkout on a machine with an NVIDIA GPU and torch already
# installed (any torch >= 2.1; no package index needed): it builds both
# extensions in place against that torch (`setup.py build_ext --inplace`, the
# same build `pip install --no-build-isolation -e .` does, without installing
# anything), then runs the doctor with the checkout first on PYTHONPATH.
# transformers is optional: without it the counting and end-to-end sections
# are SKIPped (and say so).
#
# Budget: 10 minutes in all -- the build is cut at BUILD_TIMEOUT (default
# 240 s), a first `doctor --quick` at QUICK_TIMEOUT (90 s), the full doctor
# at DOCTOR_TIMEOUT (240 s). Environment:
#   PYTHON          the interpreter with torch (default: python3)
#   DEVICE          the device index (default 0)
#   DOCTOR_ARGS     extra doctor arguments (e.g. --quick)
#
# OUTDIR gets: doctor.txt (the table), doctor.json (every check and its
# figures), doctor.log (stderr), the same three for the quick pass
# (doctor-quick.*), env.txt (machine, driver, torch, setuptools, git
# revision), build.log, run.log, status (the full doctor's exit status:
# 0 = no FAIL), hardware.json (benchmarks/gpu/hardware_check.py: a bf16 GEMM
# loop must show hw/tensor_active high and MFU consistent with it, a
# memory-bound copy loop hw/dram_bw_util high and MFU near 0; its status in
# hardware.status, limit HARDWARE_TIMEOUT, default 60 s), breakdown.json
# (benchmarks/gpu/breakdown_check.py, same limit), decode.json
# (benchmarks/gpu/decode_check.py: generate() on a 1.6e9-parameter bf16 model,
# its exact prefill and decode FLOPs against generation_flops, and the decode
# bytes per second it computes beside GPM's measured DRAM bandwidth; status in
# decode.status, limit DECODE_TIMEOUT, default 60 s; needs transformers), run-agent.json
# (benchmarks/gpu/run_check.py: examples/train_plain.py, an unmodified bf16
# loop, through `mfu-tracker run`; its log has MFU on every line, OFU
# (hw/tensor_active) beside it where GPM exists, and the counted FLOPs of
# the same step, and `report` reads it; status in run-agent.status, limit
# RUN_TIMEOUT, default 90 s).
# Exit status: the full doctor's (0 none failed, 1 a check failed), 2 usage,
# 3 the build failed, 124 a time limit was hit.
set -euo pipefail

if [ "$#" -ne 1 ]; then
    echo "usage: $0 OUTDIR" >&2
    exit 2
fi
OUTDIR=$1
mkdir -p "$OUTDIR"
OUTDIR=$(cd "$OUTDIR" && pwd)
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
PYTHON=${PYTHON:-python3}
DEVICE=${DEVICE:-0}
BUILD_TIMEOUT=${BUILD_TIMEOUT:-240}
QUICK_TIMEOUT=${QUICK_TIMEOUT:-90}
DOCTOR_TIMEOUT=${DOCTOR_TIMEOUT:-240}
HARDWARE_TIMEOUT=${HARDWARE_TIMEOUT:-60}
DECODE_TIMEOUT=${DECODE_TIMEOUT:-60}
RUN_TIMEOUT=${RUN_TIMEOUT:-90}
read -r -a EXTRA <<< "${DOCTOR_ARGS:-}"

log() { printf '[run.sh %s] %s\n' "$(date -u +%H:%M:%S)" "$*" | tee -a "$OUTDIR/run.log" >&2; }

cd "$ROOT"
log "checkout $ROOT -> $OUTDIR"
{
    echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "host: $(uname -a)"
    echo "git: $(git rev-parse HEAD 2>/dev/null || echo 'not a git checkout')"
    echo "python: $("$PYTHON" --version 2>&1)"
    "$PYTHON" - <<'PY' 2>&1 || true
import torch
print("torch:", torch.__version__, "cuda:", torch.version.cuda,
      "hip:", getattr(torch.version, "hip", None))
print("devices:", [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]
      if torch.cuda.is_available() else "none visible")
try:
    import setuptools
    print("setuptools:", setuptools.__version__, "(pyproject.toml needs >= 77)")
except Exception as exc:
    print("setuptools: not importable:", exc)
try:
    import transformers
    print("transformers:", transformers.__version__)
except Exception as exc:
    print("transformers: not importable:", exc)
PY
    if command -v nvidia-smi >/dev/null 2>&1; then
        timeout 30 nvidia-smi || true
    else
        echo "nvidia-smi: not found"
    fi
} > "$OUTDIR/env.txt" 2>&1
log "environment recorded in env.txt"

log "building in place (limit ${BUILD_TIMEOUT}s), log in build.log"
set +e
timeout "$BUILD_TIMEOUT" "$PYTHON" setup.py build_ext --inplace > "$OUTDIR/build.log" 2>&1
status=$?
set -e
if [ "$status" -ne 0 ]; then
    log "build failed (status $status); tail of build.log:"
    tail -n 30 "$OUTDIR/build.log" >&2
    echo "$status" > "$OUTDIR/status"
    [ "$status" -eq 124 ] && exit 124
    exit 3
fi

# A quick pass first (seconds): if the full run is cut short, this table stands.
log "quick doctor on device $DEVICE (limit ${QUICK_TIMEOUT}s): doctor-quick.txt"
set +e
PYTHONPATH="$ROOT${PYTHONPATH:+:$PYTHONPATH}" timeout "$QUICK_TIMEOUT" \
    "$PYTHON" -m mfu_tracker doctor --quick --device "$DEVICE" --json "$OUTDIR/doctor-quick.json" \
    > "$OUTDIR/doctor-quick.txt" 2> "$OUTDIR/doctor-quick.log"
log "quick doctor exited $?"
set -e

# check NAME LIMIT WHAT: benchmarks/gpu/NAME_check.py on the device, cut at LIMIT
# seconds; its output in NAME.txt (and its NAME.json), its exit status in NAME.status.
check() {
    local name=$1 limit=$2
    log "$3 on device $DEVICE (limit ${limit}s): $name.json"
    set +e
    PYTHONPATH="$ROOT${PYTHONPATH:+:$PYTHONPATH}" timeout "$limit" \
        "$PYTHON" "benchmarks/gpu/${name}_check.py" "$OUTDIR" "$DEVICE" > "$OUTDIR/$name.txt" 2>&1
    echo $? > "$OUTDIR/$name.status"
    log "$name check exited $(cat "$OUTDIR/$name.status")"
    set -e
}
# The hardware counters against loops of known character (Hopper or later).
check hardware "$HARDWARE_TIMEOUT" "hardware counters check"
# The kernel breakdown of a GEMM-heavy and an elementwise-heavy bf16 step.
check breakdown "$HARDWARE_TIMEOUT" "kernel breakdown check"
# Decode MBU: generate()'s computed bytes/s beside the measured DRAM bandwidth.
check decode "$DECODE_TIMEOUT" "decode check"
# The skewed-router MoE step: imbalance, straggler, padding by hand; the sampled step's cost.
check moe "$DECODE_TIMEOUT" "MoE load check"

# An unmodified training script measured through `mfu-tracker run`.
log "mfu-tracker run on an unmodified script, device $DEVICE (limit ${RUN_TIMEOUT}s): run-agent.json"
set +e
PYTHONPATH="$ROOT${PYTHONPATH:+:$PYTHONPATH}" timeout "$RUN_TIMEOUT" \
    "$PYTHON" benchmarks/gpu/run_check.py "$OUTDIR" "$DEVICE" > "$OUTDIR/run-agent.stdout" 2>&1
echo $? > "$OUTDIR/run-agent.status"
log "run check exited $(cat "$OUTDIR/run-agent.status")"
set -e

log "running the doctor on device $DEVICE (limit ${DOCTOR_TIMEOUT}s)"
set +e
PYTHONPATH="$ROOT${PYTHONPATH:+:$PYTHONPATH}" timeout "$DOCTOR_TIMEOUT" \
    "$PYTHON" -m mfu_tracker doctor --device "$DEVICE" --json "$OUTDIR/doctor.json" \
    ${EXTRA[@]+"${EXTRA[@]}"} > "$OUTDIR/doctor.txt" 2> "$OUTDIR/doctor.log"
status=$?
set -e
echo "$status" > "$OUTDIR/status"
cat "$OUTDIR/doctor.txt"
case "$status" in
    0) log "doctor: no check failed" ;;
    1) log "doctor: a check FAILED (see doctor.txt / doctor.json)" ;;
    124) log "doctor: hit the ${DOCTOR_TIMEOUT}s limit (doctor.log has what it printed)" ;;
    *) log "doctor exited $status; tail of doctor.log:"; tail -n 30 "$OUTDIR/doctor.log" >&2 ;;
esac
exit "$status"
