/*
 * step_fields.h -- the record of a step's sums, declared once.
 *
 * Every number a step carries from its boundary to the figures -- FLOPs of
 * each kind, bytes, tokens, seconds -- is one row of MFU_STEP_FIELDS below,
 * and nowhere else: the value type that carries them (mfu_work), the bits a
 * report gives them by (MFU_STEP_*), a step's record (records.h), a window's
 * sums, the window totals a caller gives at logging time (steps.h), the
 * keywords of StepTracker.step() / book() / summary() and the dict keys of
 * its figures and records (csrc/python/py_step_figures.c), _C.STEP_FIELDS and
 * the Python value type made from it (mfu_tracker/timing/_totals.py), and a
 * rank's row of an aggregation (mfu_tracker/distributed/) are all made from
 * the table. A new per-step fact is one row here, plus the code that
 * measures it when the tracker measures it.
 *
 * Columns: X(ID, name, unit, flags, unknown, loss, meaning)
 *   ID       MFU_FIELD_<ID> (its index), MFU_STEP_<ID> (its bit)
 *   name     the member of mfu_work, the Python keyword and key
 *   unit     "FLOPs", "bytes", "tokens" or "s"
 *   flags    MFU_FIELD_* below
 *   unknown  the value a step records when the field is unknown: not given
 *            (and no per-step default), or given and bad (not finite >= 0);
 *            NaN leaves the figures that need it out while the step is in
 *            the window, 0 stands for "none"
 *   loss     the waterfall's share the field makes (waterfall.h: its seconds
 *            per step over the step time, carved out of `other`, or of
 *            `communication`: MFU_FIELD_IN_COMMUNICATION), or NULL
 *   meaning  one line, for the docs and _C.STEP_FIELDS
 *
 * Flags:
 *   MFU_FIELD_GIVEN      a caller gives it: at a boundary (step()), booked
 *                        onto a step (book()), as a window total
 *                        (summary(), Tracker.metrics()); without it the
 *                        tracker measures the field itself
 *   MFU_FIELD_DEFAULTED  the tracker's configuration gives a per-step
 *                        default (Tracker(flops_per_step, ...)), taken when
 *                        a boundary does not give the field
 *   MFU_FIELD_PAIRS_STEP the per-step default no longer pairs with a model
 *                        count a boundary gives: that step's field is
 *                        unknown unless given too
 *   MFU_FIELD_PAIRS_WINDOW  likewise for a window: a model total given at
 *                        logging time leaves the window's sum unknown
 *                        unless given too
 *   MFU_FIELD_PER_STEP   across ranks, seconds per step (peak-weighted like
 *                        a phase) rather than a rate that adds up over ranks
 *   MFU_FIELD_IN_COMMUNICATION  its seconds are part of exposed communication:
 *                        its loss is carved out of `communication` where a
 *                        communication phase was marked (of `other` where none
 *                        was, as every field's), its seconds there at most
 *                        the communication's (one such field)
 *
 * Units: every value is a double; NaN = unknown.
 */
#ifndef MFU_STEP_FIELDS_H
#define MFU_STEP_FIELDS_H

#include <math.h>
#include <stddef.h>

enum {
    MFU_FIELD_GIVEN = 1u << 0,
    MFU_FIELD_DEFAULTED = 1u << 1,
    MFU_FIELD_PAIRS_STEP = 1u << 2,
    MFU_FIELD_PAIRS_WINDOW = 1u << 3,
    MFU_FIELD_PER_STEP = 1u << 4,
    MFU_FIELD_IN_COMMUNICATION = 1u << 5
};

/* Given, with a per-step default. */
#define MFU_FIELD_GIVEN_DEFAULTED (MFU_FIELD_GIVEN | MFU_FIELD_DEFAULTED)

/* The roles of a post-training step (docs/post-training.md), one row each:
 * R(X, ID, name, meaning). Each role is four fields of the record (below):
 * <name>_flops (its model FLOPs), <name>_bytes (the bytes it moved: decode's
 * weights and KV cache, a sync's weights), <name>_tokens and <name>_s (the
 * seconds it ran); a step that ran no such role records 0 for each. */
#define MFU_ROLES(R, X)                                                                       \
    R(X, ROLLOUT, rollout, "generation: prefill and decode of the policy's samples")          \
    R(X, REFERENCE, reference, "the reference model's forward over the samples")             \
    R(X, REWARD, reward, "a reward model's forward (a rule scored on the host has no FLOPs)") \
    R(X, LEARNER, learner, "the policy's training: forward, backward, optimizer")            \
    R(X, WEIGHT_SYNC, weight_sync, "the learner's weights copied to the generator")

/* One role's four fields. */
#define MFU_ROLE_FIELDS_(X, ID, name, meaning)                                                \
    X(ID##_FLOPS, name##_flops, "FLOPs", MFU_FIELD_GIVEN, NAN, NULL,                          \
      "role " #name ": model FLOPs (its forward; a learner's backward too)")                  \
    X(ID##_BYTES, name##_bytes, "bytes", MFU_FIELD_GIVEN, NAN, NULL,                          \
      "role " #name ": bytes read and written (the MBU numerator)")                           \
    X(ID##_TOKENS, name##_tokens, "tokens", MFU_FIELD_GIVEN, NAN, NULL,                       \
      "role " #name ": tokens processed")                                                     \
    X(ID##_S, name##_s, "s", MFU_FIELD_GIVEN, NAN, NULL, "role " #name ": seconds it ran")

/* The fields, in the order of mfu_work's members. */
#define MFU_STEP_FIELDS(X)                                                                    \
    X(MODEL_FLOPS, model_flops, "FLOPs", MFU_FIELD_GIVEN_DEFAULTED, NAN, NULL,                          \
      "the MFU numerator: each counted op run in the forward, with the backward its "         \
      "trainable inputs need")                                                                \
    X(EXECUTED_FLOPS, executed_flops, "FLOPs", MFU_FIELD_GIVEN_DEFAULTED | MFU_FIELD_PAIRS_STEP, NAN,   \
      NULL, "the HFU numerator: every counted op that ran, recompute included")               \
    X(PARAM_BYTES, param_bytes, "bytes", MFU_FIELD_GIVEN_DEFAULTED, NAN, NULL,                          \
      "the MBU numerator: bytes of parameters read")                                          \
    X(NUM_TOKENS, num_tokens, "tokens", MFU_FIELD_GIVEN, NAN, NULL, "tokens processed")       \
    X(IDEAL_S, ideal_s, "s",                                                                  \
      MFU_FIELD_GIVEN_DEFAULTED | MFU_FIELD_PAIRS_STEP | MFU_FIELD_PAIRS_WINDOW, NAN, NULL,             \
      "mixed precision: the seconds the model FLOPs need at each dtype's peak (mixed.h)")     \
    X(OVERCOMPUTE_FLOPS, overcompute_flops, "FLOPs", MFU_FIELD_GIVEN, 0.0, NULL,              \
      "executed FLOPs beyond the model convention that are not recompute (a kernel "          \
      "computing the full square of a causal attention counted half, ops.h); the "            \
      "waterfall books them to compute; unknown: 0, all of hfu - mfu is recompute")           \
    X(LANGUAGE_FLOPS, language_flops, "FLOPs", MFU_FIELD_GIVEN, NAN, NULL,                    \
      "the language model's part of the model FLOPs (a VLM's vision tower left out), "        \
      "for mfu_language")                                                                     \
    X(IDLE_S, idle_s, "s", MFU_FIELD_PER_STEP, NAN, "idle",                                   \
      "seconds the step's devices sat idle between its phases: from the end of a marked "     \
      "phase to the start of the next, no phase running (steps_marks.c); unknown in a "       \
      "step that marked no phase")                                                            \
    X(WAIT_S, wait_s, "s", MFU_FIELD_GIVEN | MFU_FIELD_PER_STEP, NAN, "wait",                 \
      "seconds of the step its devices ran no role (post-training: the roles below): "        \
      "colocated, reward on the host, scheduling between roles; disaggregated, this "         \
      "pool waiting for the other; unknown in a step that timed no role")                     \
    X(MOE_WAIT_S, moe_wait_s, "s", MFU_FIELD_GIVEN | MFU_FIELD_PER_STEP | MFU_FIELD_IN_COMMUNICATION, \
      NAN, "moe_imbalance",                                                                   \
      "seconds the step's expert-parallel ranks waited for the rank whose experts took "      \
      "longest (an MoE layer's busiest experts), part of exposed communication; the "         \
      "tracker gives the last sampled MoE step's (docs/moe.md)")                               \
    MFU_ROLES(MFU_ROLE_FIELDS_, X)

/* MFU_FIELD_<ID>: a field's index; MFU_FIELD_COUNT of them. */
enum mfu_field_index {
#define MFU_FIELD_INDEX_(ID, name, unit, flags, unknown, loss, meaning) MFU_FIELD_##ID,
    MFU_STEP_FIELDS(MFU_FIELD_INDEX_)
#undef MFU_FIELD_INDEX_
    MFU_FIELD_COUNT
};

/* MFU_STEP_<ID>: a field's bit in a report's `given` and in a `bad` mask
 * (steps.h). */
enum mfu_field_bit {
#define MFU_FIELD_BIT_(ID, name, unit, flags, unknown, loss, meaning) \
    MFU_STEP_##ID = 1u << MFU_FIELD_##ID,
    MFU_STEP_FIELDS(MFU_FIELD_BIT_)
#undef MFU_FIELD_BIT_
    MFU_STEP_ALL = (1u << MFU_FIELD_COUNT) - 1u
};

/* The bits of the fields with a flag (constants: loops over the fields fold
 * into straight code). */
#define MFU_FIELD_FLAG_BIT_(ID, flags, flag) | (((flags) & (flag)) ? (1u << MFU_FIELD_##ID) : 0u)
#define MFU_GIVEN_BIT_(ID, name, unit, flags, unknown, loss, meaning) \
    MFU_FIELD_FLAG_BIT_(ID, flags, MFU_FIELD_GIVEN)
#define MFU_DEFAULTED_BIT_(ID, name, unit, flags, unknown, loss, meaning) \
    MFU_FIELD_FLAG_BIT_(ID, flags, MFU_FIELD_DEFAULTED)
#define MFU_PAIRS_STEP_BIT_(ID, name, unit, flags, unknown, loss, meaning) \
    MFU_FIELD_FLAG_BIT_(ID, flags, MFU_FIELD_PAIRS_STEP)
#define MFU_PAIRS_WINDOW_BIT_(ID, name, unit, flags, unknown, loss, meaning) \
    MFU_FIELD_FLAG_BIT_(ID, flags, MFU_FIELD_PAIRS_WINDOW)
enum {
    MFU_STEP_GIVEN = 0u MFU_STEP_FIELDS(MFU_GIVEN_BIT_),
    MFU_STEP_DEFAULTED = 0u MFU_STEP_FIELDS(MFU_DEFAULTED_BIT_),
    MFU_STEP_PAIRS_STEP = 0u MFU_STEP_FIELDS(MFU_PAIRS_STEP_BIT_),
    MFU_STEP_PAIRS_WINDOW = 0u MFU_STEP_FIELDS(MFU_PAIRS_WINDOW_BIT_)
};
#undef MFU_GIVEN_BIT_
#undef MFU_DEFAULTED_BIT_
#undef MFU_PAIRS_STEP_BIT_
#undef MFU_PAIRS_WINDOW_BIT_
#undef MFU_FIELD_FLAG_BIT_

/* The value type of the record: one double per field, by name or as v[i]
 * (i = MFU_FIELD_<ID>). What one track() block or one step did, a window's
 * sums, the totals a caller gives, the per-step defaults -- all of them are
 * an mfu_work. */
typedef union mfu_work {
    struct {
#define MFU_FIELD_MEMBER_(ID, name, unit, flags, unknown, loss, meaning) double name;
        MFU_STEP_FIELDS(MFU_FIELD_MEMBER_)
#undef MFU_FIELD_MEMBER_
    };
    double v[MFU_FIELD_COUNT];
} mfu_work;

/* Every field at its `unknown` value: a step nothing was given for. */
static const mfu_work MFU_WORK_UNKNOWN = {
    .v = {
#define MFU_FIELD_UNKNOWN_(ID, name, unit, flags, unknown, loss, meaning) unknown,
        MFU_STEP_FIELDS(MFU_FIELD_UNKNOWN_)
#undef MFU_FIELD_UNKNOWN_
    }};

/* One row of the table, as data (step_fields.c). */
typedef struct mfu_step_field {
    const char *name;
    const char *unit;
    unsigned flags;
    double unknown;
    const char *loss;
    const char *meaning;
    size_t offset; /* of the member in mfu_work */
} mfu_step_field;

extern const mfu_step_field mfu_step_fields[MFU_FIELD_COUNT];

/* Field i (< MFU_FIELD_COUNT) of a work value. */
static inline double *mfu_work_at(mfu_work *work, int i)
{
    return &work->v[i];
}

static inline double mfu_work_get(const mfu_work *work, int i)
{
    return work->v[i];
}

/* Every field at its `unknown` value (a step nothing was given for). */
static inline void mfu_work_unknown(mfu_work *work)
{
    *work = MFU_WORK_UNKNOWN;
}

/* Every field NaN (an empty window's sums). */
void mfu_work_nan(mfu_work *work);

/* into += more, field by field (NaN propagates). */
static inline void mfu_work_add(mfu_work *into, const mfu_work *more)
{
    for (int i = 0; i < MFU_FIELD_COUNT; i++)
        into->v[i] += more->v[i];
}

#endif /* MFU_STEP_FIELDS_H */
