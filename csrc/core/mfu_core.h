/*
 * mfu_core.h -- the mfu_tracker C core: pure C11, no Python, no torch.
 *
 * Topics, one file pair each:
 *   mfu_status.h  status codes returned by every fallible function
 *   gpu_specs.h   the dense peak table (one row per device, datasheet cited)
 *                 and device lookup by name + compute capability + SMs + memory
 *   flops.h       FLOP formulas: per-op (matmul, conv, attention) and analytic
 *                 transformer counts (6N, PaLM, per-matmul)
 *   ops.h         the table of counted aten ops and mfu_op_count: one op
 *                 call's arguments -> executed and model FLOPs
 *   timing.h      clocks (monotonic CPU clock; GPU events come with the driver)
 *   stats.h       utilization arithmetic: MFU, HFU, MBU, tokens/s
 *
 * Conventions: symbols are prefixed mfu_; nothing prints or exits; results go
 * through out-parameters and the return value is an mfu_status.
 */
#ifndef MFU_CORE_H
#define MFU_CORE_H

#include "mfu_status.h"
#include "gpu_specs.h"
#include "flops.h"
#include "ops.h"
#include "timing.h"
#include "stats.h"

#endif /* MFU_CORE_H */
