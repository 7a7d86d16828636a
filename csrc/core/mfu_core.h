/*
 * mfu_core.h -- the mfu_tracker C core: pure C11, no Python, no torch.
 * Every public header of the core, included below in this order; the
 * CPython extension includes this file (csrc/python/mfu_module.h), and
 * tests/test_core_header.py checks that the lists below match the headers
 * in csrc/core.
 *
 * The core sits in concept folders, lowest first; a file includes and calls
 * only its own folder and the ones above it in this list
 * (tests/test_c_layout.py). Each folder is an include directory of every
 * build: a header is named by its file name.
 *
 * Topics, one file pair each, by folder:
 * base/        the vocabulary every concept shares
 *   mfu_status.h  status codes returned by every fallible function
 *   mfu_limits.h  every bound on a size or a count
 *   dtypes.h      the compute dtypes a peak is given for, and their names
 *   phases.h      the phases of a step (data, forward, backward, optimizer,
 *                 communication by kind, the bubble, the badput phases) and
 *                 a step's seconds in each
 * peaks/       what a device can do
 *   gpu_table.h   the dense peak table (one row per device, datasheet cited)
 *   gpu_name.h    device-name normalisation (the token form lookups read)
 *   gpu_lookup.h  device lookup by name + compute capability + SMs + memory,
 *                 MIG slices and AMD partitions
 *   peak_override.h  the MFU_TRACKER_PEAK_TFLOPS text (the user's own peak)
 * ops/         one op call's FLOPs
 *   flops.h       FLOP formulas per op (matmul, conv, attention)
 *   pairs.h       the attention pairs rule (windows, chunks, causal) that
 *                 the op formulas and the analytic spans both count with
 *   ops.h         the table of counted aten ops and mfu_op_count: one op
 *                 call's arguments -> executed and model FLOPs
 *   nodes.h       which autograd node a backward call runs in (the site
 *                 rule's input, one rule for both counters)
 * model/       a model's count from its dimensions
 *   transformer.h the analytic count of a model from its dimensions (6N,
 *                 PaLM, per-matmul), from its parts:
 *     blocks.h    decoder blocks (GQA / MLA attention, MLP, MoE with latent
 *                 experts, gated DeltaNet, Mamba-2) and the chunked scans
 *     family_mla.h     the MLA family's blocks beyond blocks.h (Kimi
 *                      delta attention) and the linear-attention dispatch
 *     family_hybrid.h  the Mamba / convolution hybrids' further blocks
 *                      (Mamba-1, short conv) and their layer layouts
 *     spans.h     attention spans of a batch (full, sliding, chunked) under
 *                 both causal conventions
 *     vision.h    VLM vision towers (Qwen2.5-VL, Qwen3-VL)
 *     vision_tiles.h  fixed-resolution towers on tiles (SigLIP / Gemma 3,
 *                     CLIP and SigLIP under LLaVA, Llama 4)
 *     families.h  which blocks each HuggingFace model_type uses
 *   conventions.h other frameworks' MFU formulas as presets of choices with
 *                 rules by model type and their quirks, and the difference
 *                 from ours item by item
 *   context_parallel.h  one rank's share of a batch under context
 *                 parallelism (Ulysses, ring / all-gather KV)
 *   generation.h  the prefill and decode of a generation with a KV cache:
 *                 forward FLOPs, weights and KV-cache bytes
 * device/      the machine's clocks and readings
 *   gpu_driver.h  the CUDA / HIP driver, dlopen'd at first GPU use
 *   timing.h      clocks: the monotonic CPU clock and the mark timer (GPU
 *                 events resolved without blocking, or the CPU clock)
 *   nvml.h        NVML (device telemetry), dlopen'd: energy, power, clocks
 *   gpm.h         NVML's GPM counters at window edges (tensor pipes, DRAM
 *                 bandwidth, SM activity and occupancy, NVLink)
 * comm/        communication between devices
 *   comm.h        communication: collective kinds, the c10d operators, bus
 *                 bandwidth (nccl-tests), the per-step record and its ratios
 *   links.h       the link table (NVLink, xGMI, PCIe, InfiniBand, RoCE; one
 *                 row per link, source cited) and its lookups
 * steps/       step accounting
 *   step_fields.h the record of a step's sums, declared once: one row per
 *                 field (FLOPs of each kind, bytes, tokens, seconds), the
 *                 value type mfu_work made from it
 *   waterfall.h   the MFU waterfall's losses, their inputs, and the exact
 *                 sums that close them to 1
 *   stats.h       the one formula of every figure: the ratios (MFU, HFU,
 *                 MBU, tokens/s, mfu_mixed, mfu_language, ...) of a record
 *                 of sums and the waterfall's shares; a window's figures
 *   records.h     one record per step (period, work, phases, communication)
 *                 in a ring keyed by step id; windows are views over it
 *   steps.h       step accounting: boundaries on a mark timer, the marks
 *                 ring, late booking, fallback to the CPU clock, windowed
 *                 figures
 *   mixed.h       mixed precision: ideal seconds, each dtype's FLOPs at its peak
 * breakdown/   a profiled step by kernel class
 *   kernels.h     kernel classes: the table of name rules that puts a
 *                 profiled kernel, op or annotation in its class
 *   timeline.h    a profiled step split by class on the union timeline
 *                 (overlap resolved by class priority), and its idle time
 *
 * Private to csrc/core (shared by some of its files, not included here):
 *   mfu_text.h    ASCII text helpers of the name and value parsers (base/)
 *   checked.h     checked int64 arithmetic of the op formulas (ops/)
 *   op_internal.h what the files behind mfu_op_count share (ops/)
 *   steps_internal.h  what the files behind the step tracker (steps*.c)
 *                 share (steps/)
 *
 * Conventions: symbols are prefixed mfu_; nothing prints or exits; results go
 * through out-parameters and the return value is an mfu_status.
 */
#ifndef MFU_CORE_H
#define MFU_CORE_H

#include "mfu_status.h"
#include "mfu_limits.h"
#include "dtypes.h"
#include "phases.h"
#include "gpu_table.h"
#include "gpu_name.h"
#include "gpu_lookup.h"
#include "peak_override.h"
#include "flops.h"
#include "pairs.h"
#include "ops.h"
#include "nodes.h"
#include "transformer.h"
#include "blocks.h"
#include "family_mla.h"
#include "family_hybrid.h"
#include "spans.h"
#include "vision.h"
#include "vision_tiles.h"
#include "families.h"
#include "conventions.h"
#include "context_parallel.h"
#include "generation.h"
#include "gpu_driver.h"
#include "timing.h"
#include "nvml.h"
#include "gpm.h"
#include "comm.h"
#include "links.h"
#include "step_fields.h"
#include "waterfall.h"
#include "stats.h"
#include "records.h"
#include "steps.h"
#include "mixed.h"
#include "kernels.h"
#include "timeline.h"

#endif /* MFU_CORE_H */
