/*
 * mfu_limits.h -- every bound the library puts on a size or a count, in one
 * place. The core checks against these, the CPython bindings export them as
 * _C constants (LIMIT_<NAME>), and the Python layer validates with those
 * constants: a bound is never written twice.
 *
 * Why each bound exists:
 *   MFU_WINDOW_MAX        a window's ring is allocated up front; 2^24 steps
 *                         (16.8 M) keeps it below 1 GiB and every index
 *                         product in 32 bits.
 *   MFU_WARMUP_MAX        warm-up steps; 10^12 is far past any run and keeps
 *                         counts exact in a double.
 *   MFU_NUM_GPUS_MAX      devices behind one figure (num_gpus, and num_gpus
 *                         x the model-parallel degrees); 10^9 keeps the
 *                         product exact in an int.
 *   MFU_PARALLEL_DEGREE_MAX  one model-parallel degree (tensor, sequence,
 *                         context, pipeline).
 *   MFU_TIMER_SIZE_MAX    a mark timer's pool and history (events_*,
 *                         history); same reason as the window.
 *   MFU_TIMER_EVENTS_INITIAL_DEFAULT / _MAX_DEFAULT / MFU_TIMER_HISTORY_DEFAULT
 *                         a timer's default pool start, pool cap and history.
 *   MFU_COUNTERS_MAX      FLOP counters active at once in a process (each
 *                         takes one observer slot; nested counters count).
 *   MFU_GPU_NAME_MAX      bytes of a device name (without the NUL); the
 *                         lookup never reads past MAX + 1 bytes of a name.
 *                         Driver names are < 100 bytes; 256 leaves room.
 *   MFU_GPU_CC_MAX        a CUDA compute capability's major or minor number
 *                         (0..99): two digits, as the driver reports them.
 *   MFU_DTYPE_NAME_MAX    bytes of a dtype name ("bf16"): any longer text
 *                         is not a dtype and is not scanned further.
 *   MFU_PEAK_OVERRIDE_MAX bytes of MFU_TRACKER_PEAK_TFLOPS: one number per
 *                         dtype fits many times over.
 *   MFU_PHASE_DEPTH_MAX   phases open at once in a step tracker (nested
 *                         phase() blocks); one per phase name nests every
 *                         phase in every other.
 *   MFU_COMM_INFLIGHT_MAX collectives a step tracker times at once (launched,
 *                         not yet completed); a training step keeps a few
 *                         dozen in flight (DDP buckets, FSDP prefetches).
 *   MFU_COMM_SINKS_MAX    step trackers receiving the process's
 *                         communication at once (one per Tracker).
 *   MFU_TIMELINE_INTERVALS_MAX  intervals of one profiled step the kernel
 *                         breakdown reduces (timeline.h: 25 bytes each in
 *                         the sweep, so at most ~400 MiB); a training step
 *                         launches thousands to a few hundred thousand
 *                         kernels and ops. Past it the step is not broken
 *                         down (one warning), never cut short silently.
 *   MFU_TIMELINE_LANES_MAX  streams or threads of one profiled step.
 *   MFU_STEPS_KEPT        pushed steps a step tracker keeps beyond its
 *                         window (steps.h, "Booking"), so FLOPs resolved at
 *                         logging time can be booked onto steps that left
 *                         the window since the last log: an integration
 *                         logging up to 1024 steps past its window.
 *   MFU_GPU_CANDIDATES_MAX  rows an ambiguous device name lists (gpu_lookup.h):
 *                         a model has at most 4 rows (A100: SXM4/PCIe x
 *                         40/80 GB); a name carrying several model tokens
 *                         can fit more, which are counted, not listed.
 */
#ifndef MFU_LIMITS_H
#define MFU_LIMITS_H

#define MFU_WINDOW_MAX (1u << 24)
#define MFU_WARMUP_MAX 1000000000000ULL
#define MFU_NUM_GPUS_MAX 1000000000
#define MFU_PARALLEL_DEGREE_MAX 1000000

#define MFU_TIMER_SIZE_MAX (1u << 24)
#define MFU_TIMER_EVENTS_INITIAL_DEFAULT 16u
#define MFU_TIMER_EVENTS_MAX_DEFAULT 1024u
#define MFU_TIMER_HISTORY_DEFAULT 1024u

#define MFU_COUNTERS_MAX 8

#define MFU_GPU_NAME_MAX 256
#define MFU_GPU_CC_MAX 99
#define MFU_DTYPE_NAME_MAX 32
#define MFU_PEAK_OVERRIDE_MAX 1024

#define MFU_PHASE_DEPTH_MAX 16

#define MFU_COMM_INFLIGHT_MAX 4096u
#define MFU_COMM_SINKS_MAX 8

#define MFU_STEPS_KEPT 1024u

#define MFU_GPU_CANDIDATES_MAX 8

#define MFU_TIMELINE_INTERVALS_MAX (1u << 24)
#define MFU_TIMELINE_LANES_MAX 65536

#endif /* MFU_LIMITS_H */
