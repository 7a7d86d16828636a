/*
 * mfu_core.h -- the mfu_tracker C core: pure C11, no Python, no torch.
 *
 * Topics, one file pair each:
 *   mfu_status.h  status codes returned by every fallible function
 *   dtypes.h      the compute dtypes a peak is given for, and their names
 *   gpu_table.h   the dense peak table (one row per device, datasheet cited)
 *   gpu_name.h    device-name normalisation (the token form lookups read)
 *   gpu_lookup.h  device lookup by name + compute capability + SMs + memory,
 *                 MIG slices and AMD partitions
 *   peak_override.h  the MFU_TRACKER_PEAK_TFLOPS text (the user's own peak)
 *   flops.h       FLOP formulas per op (matmul, conv, attention)
 *   transformer.h the analytic count of a model from its dimensions (6N,
 *                 PaLM, per-matmul), from its parts:
 *     blocks.h    decoder blocks (GQA / MLA attention, MLP, MoE, gated
 *                 DeltaNet, Mamba-2) and the chunked scans
 *     spans.h     attention spans of a batch (full, sliding, chunked) under
 *                 both causal conventions
 *     vision.h    VLM vision towers (Qwen2.5-VL, Qwen3-VL)
 *     families.h  which blocks each HuggingFace model_type uses
 *   ops.h         the table of counted aten ops and mfu_op_count: one op
 *                 call's arguments -> executed and model FLOPs
 *   gpu_driver.h  the CUDA / HIP driver, dlopen'd at first GPU use
 *   timing.h      clocks: the monotonic CPU clock and the mark timer (GPU
 *                 events resolved without blocking, or the CPU clock)
 *   stats.h       utilization arithmetic: MFU, HFU, MBU, tokens/s; the window
 *   steps.h       step accounting: boundaries on a mark timer, the pending
 *                 ring, fallback to the CPU clock, windowed figures
 *   mixed.h       mixed precision: ideal seconds, each dtype's FLOPs at its peak
 *   comm.h        communication: collective kinds, the c10d operators, bus
 *                 bandwidth (nccl-tests), the per-step record and its ratios
 *   links.h       the link table (NVLink, xGMI, PCIe, InfiniBand, RoCE; one
 *                 row per link, source cited) and its lookups
 *   nvml.h        NVML (device telemetry), dlopen'd: energy, power, clocks
 *   kernels.h     kernel classes: the table of name rules that puts a
 *                 profiled kernel, op or annotation in its class
 *   timeline.h    a profiled step split by class on the union timeline
 *                 (overlap resolved by class priority), and its idle time
 *   mfu_limits.h  every bound on a size or a count
 *
 * Conventions: symbols are prefixed mfu_; nothing prints or exits; results go
 * through out-parameters and the return value is an mfu_status.
 */
#ifndef MFU_CORE_H
#define MFU_CORE_H

#include "mfu_status.h"
#include "dtypes.h"
#include "gpu_table.h"
#include "gpu_name.h"
#include "gpu_lookup.h"
#include "peak_override.h"
#include "flops.h"
#include "transformer.h"
#include "blocks.h"
#include "families.h"
#include "ops.h"
#include "timing.h"
#include "stats.h"
#include "phases.h"
#include "steps.h"
#include "mixed.h"
#include "comm.h"
#include "links.h"
#include "nvml.h"
#include "gpm.h"
#include "kernels.h"
#include "timeline.h"
#include "mfu_limits.h"

#endif /* MFU_CORE_H */
