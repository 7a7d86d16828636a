/*
 * phases.h -- the phases of a training step (data, forward, backward,
 * optimizer, exposed communication by kind, the pipeline bubble), the
 * badput phases beside them (checkpoint, eval, compile), and a step's record
 * of the seconds each took, for the MFU waterfall (steps.h, "Phases") and
 * the job ledger.
 *
 * A phase is marked by the loop (or an integration) on the step tracker's
 * mark timer; the tracker (steps.c) turns the marks into seconds per phase
 * per step, kept in the step's record (records.h). Units: seconds.
 *
 * A phase that was never marked in a step is *unmarked* there (its bit is
 * clear in `marked`), which is not the same as marked for 0 s: on a GPU
 * clock a data phase the GPU never waited for lasts 0 s and is reported as
 * such, while an unmarked phase is left out (its time falls into `other`).
 */
#ifndef MFU_PHASES_H
#define MFU_PHASES_H

#include <stdint.h>

#include "mfu_status.h"

/* The phases, in the order their keys are reported.
 *
 * COMMUNICATION and the six kind phases after it are exposed (not
 * overlapped) communication: time the compute stream (on the CPU clock: the
 * host) waited for a collective. The communication observer
 * (mfu_tracker/distributed/_comm_observer.py, csrc/torch/comm.cpp) marks a
 * kind's phase around each wait for a collective of that kind (comm.h);
 * COMMUNICATION is the hand-marked phase, the DDP hook's without the
 * observer, and the `other` kind's (barrier, reduce, gather, scatter).
 * PIPELINE_BUBBLE is the time a pipeline stage waited for its neighbours'
 * activations or gradients inside a schedule: the bubble, never also
 * communication.
 *
 * CHECKPOINT, EVAL and COMPILE are *badput phases* (docs/goodput.md): work a
 * training job does besides training -- saving a checkpoint, evaluating,
 * compiling. Their time leaves the step they fall in, by the mechanism that
 * leaves out the tracker's own time (steps.h, "Excluded intervals"), so the
 * step's MFU is not charged for them; the job ledger books them
 * (mfu_steps_get_ledger). mfu_phase_leaves_step() tells them apart. */
typedef enum mfu_phase {
    MFU_PHASE_DATA, MFU_PHASE_FORWARD, MFU_PHASE_BACKWARD, MFU_PHASE_OPTIMIZER,
    MFU_PHASE_COMMUNICATION,
    MFU_PHASE_ALL_GATHER, MFU_PHASE_REDUCE_SCATTER, MFU_PHASE_ALL_REDUCE,
    MFU_PHASE_ALL_TO_ALL, MFU_PHASE_BROADCAST, MFU_PHASE_P2P,
    MFU_PHASE_PIPELINE_BUBBLE,
    MFU_PHASE_CHECKPOINT, MFU_PHASE_EVAL, MFU_PHASE_COMPILE,
    MFU_PHASE_COUNT,                 /* the number of phases */
    MFU_PHASE_NONE = MFU_PHASE_COUNT /* no phase: time falls into `other` */
} mfu_phase;

/* "data", "forward", "backward", "optimizer", "communication",
 * "all_gather", "reduce_scatter", "all_reduce", "all_to_all", "broadcast",
 * "p2p", "pipeline_bubble", "checkpoint", "eval", "compile"; NULL for a
 * value out of range (MFU_PHASE_NONE included). */
const char *mfu_phase_name(mfu_phase phase);

/* 1 for a badput phase (checkpoint, eval, compile): its time is left out of
 * the step's period; 0 for a step phase and for any other value. */
int mfu_phase_leaves_step(mfu_phase phase);

/* The phase called `name` (NUL-terminated, compared exactly).
 * MFU_ERR_INVALID_ARGUMENT for NULL or any other text. */
mfu_status mfu_phase_from_name(const char *name, mfu_phase *phase);

/* One step's phase seconds. */
typedef struct mfu_phase_times {
    double seconds[MFU_PHASE_COUNT]; /* 0 where unmarked */
    unsigned marked;                 /* bit (1u << phase) per marked phase */
    double excluded_s;               /* time left out of the step's period
                                        (steps.h): the tracker's own and the
                                        badput phases' (also in seconds[]) */
} mfu_phase_times;

/* Sums over the steps of a window (records.h). */
typedef struct mfu_phase_summary {
    uint32_t steps;                   /* steps in the window */
    double seconds[MFU_PHASE_COUNT];  /* sum over them, per phase */
    unsigned marked;                  /* phases marked in any of them */
    double excluded_s;                /* sum of the excluded time (the
                                         tracker's own and the badput phases') */
} mfu_phase_summary;

#endif /* MFU_PHASES_H */
