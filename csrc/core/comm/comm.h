/*
 * comm.h -- communication: the kinds of collectives, the c10d operators that
 * issue them, nccl-tests' bus-bandwidth conventions and a training step's
 * communication (bytes, durations, link capacity), part of its record
 * (records.h).
 *
 * Kinds. Every collective a process issues is one of:
 *
 *   kind            payload bytes (nccl-tests)              bus factor
 *   all_gather      the gathered output                     (n - 1) / n
 *   reduce_scatter  the input                               (n - 1) / n
 *   all_reduce      the tensor                              2 (n - 1) / n
 *   all_to_all      the input                               (n - 1) / n
 *   broadcast       the tensor                              1
 *   p2p             the tensor (a send or a receive)        1
 *   other           reduce: the tensor; gather: the input;  none
 *                   scatter: the output; barrier: 0
 *
 * with n the group's size. Bus bandwidth = algorithm bandwidth (payload
 * bytes / the collective's duration) x the factor: the rate each rank's link
 * carried, comparable across group sizes and with a link's peak (nccl-tests,
 * doc/PERFORMANCE.md, https://github.com/NVIDIA/nccl-tests/blob/master/doc/PERFORMANCE.md).
 * `other` mixes rooted collectives with no common convention: it has bytes
 * and exposed seconds, never a bus bandwidth.
 *
 * Exposed seconds are phases (phases.h): each kind has one, and the
 * hand-marked "communication" phase is the `other` kind's.
 *
 * The operator table maps each c10d operator (ProcessGroup's dispatcher
 * ops, "c10d::allreduce_", ...) to its kind and to the argument that holds
 * its payload; the observer (csrc/torch/comm.cpp) registers a kernel for
 * exactly these operators and reads the payload where the row says.
 *
 * A step's record sums, over the step: payload bytes and calls per kind
 * (at launch), and for the collectives that completed, their durations
 * (launch to completion), their bus bytes (payload x factor), and -- for
 * those whose link is known -- the bytes the link could have carried in the
 * same time (duration x link peak). The window's ratios:
 *
 *   comm_busbw_gbs[kind] = bus_bytes[kind] / duration_s[kind] / 1e9
 *   net_utilization      = link_bus_bytes / link_capacity_bytes
 *   comm_overlap         = 1 - exposed_s / sum of duration_s
 *
 * are formed by the functions below, the only place they are. Units:
 * bytes, seconds, bytes per second; GB = 1e9 bytes.
 */
#ifndef MFU_COMM_H
#define MFU_COMM_H

#include <stddef.h>
#include <stdint.h>

#include "mfu_status.h"
#include "phases.h"

typedef enum mfu_comm_kind {
    MFU_COMM_ALL_GATHER,
    MFU_COMM_REDUCE_SCATTER,
    MFU_COMM_ALL_REDUCE,
    MFU_COMM_ALL_TO_ALL,
    MFU_COMM_BROADCAST,
    MFU_COMM_P2P,
    MFU_COMM_OTHER,
    MFU_COMM_KIND_COUNT
} mfu_comm_kind;

/* "all_gather", ..., "other"; NULL out of range. */
const char *mfu_comm_kind_name(mfu_comm_kind kind);

/* The kind called `name` (exactly); MFU_ERR_INVALID_ARGUMENT otherwise. */
mfu_status mfu_comm_kind_from_name(const char *name, mfu_comm_kind *kind);

/* The phase that holds the kind's exposed seconds (MFU_PHASE_NONE out of
 * range); `other` is MFU_PHASE_COMMUNICATION. */
mfu_phase mfu_comm_kind_phase(mfu_comm_kind kind);

/* The kind whose phase `phase` is; MFU_ERR_NOT_FOUND for a phase that is
 * not communication (data, forward, the pipeline bubble, ...). */
mfu_status mfu_comm_phase_kind(mfu_phase phase, mfu_comm_kind *kind);

/* nccl-tests' bus factor of `kind` for a group of `group_size` ranks (the
 * table above). MFU_ERR_INVALID_ARGUMENT: kind out of range or
 * group_size < 1; MFU_ERR_NOT_FOUND: `other` (no convention). */
mfu_status mfu_comm_busbw_factor(mfu_comm_kind kind, int64_t group_size, double *factor);

/* ---- the c10d operators ------------------------------------------------- */

/* Where an operator's payload is, counted per the kind's convention. */
typedef struct mfu_comm_op {
    const char *name;        /* "c10d::allreduce_" (the dispatcher's name) */
    mfu_comm_kind kind;
    int payload_arg;         /* argument index of the payload tensor(s): a
                                Tensor, a Tensor[] or a Tensor[][]; -1 = none
                                (barrier) */
    int result_arg;          /* argument index of the tensor(s) a later wait
                                is on (the output; in-place ops: the payload);
                                -1 = none */
    int group_arg;           /* argument index of the ProcessGroup */
} mfu_comm_op;

/* Number of rows, and row `index` (NULL out of range). */
size_t mfu_comm_op_count(void);
const mfu_comm_op *mfu_comm_op_get(size_t index);

/* The row for operator `name` (NUL-terminated, the overload not included);
 * NULL when it is not a collective. */
const mfu_comm_op *mfu_comm_op_find(const char *name);

/* The kind of a c10d Work, by its OpType's name as torch spells it
 * ("ALLREDUCE", "_ALLGATHER_BASE", "RECVANYSOURCE", ...;
 * torch/csrc/distributed/c10d/Work.hpp): what a wait on it waits for.
 * "COALESCED" (a batch of mixed operations: batch_isend_irecv on NCCL, a
 * coalescing manager) is `other`. MFU_ERR_NOT_FOUND for any other name
 * (UNKNOWN included); MFU_ERR_INVALID_ARGUMENT for NULL. */
mfu_status mfu_comm_op_type_kind(const char *op_type, mfu_comm_kind *kind);

/* ---- one step's communication (a step record's, records.h) ---------------------- */

typedef struct mfu_comm_times {
    double bytes[MFU_COMM_KIND_COUNT];      /* payload bytes launched */
    double calls[MFU_COMM_KIND_COUNT];      /* collectives launched */
    double duration_s[MFU_COMM_KIND_COUNT]; /* launch to completion, summed
                                               over the completed ones */
    double bus_bytes[MFU_COMM_KIND_COUNT];  /* payload x bus factor of the
                                               completed, timed ones */
    double link_bus_bytes;                  /* bus bytes of those whose link
                                               is known */
    double link_capacity_bytes;             /* their duration x link peak */
} mfu_comm_times;

/* Add `add` into `sum`, field by field. */
void mfu_comm_times_add(mfu_comm_times *sum, const mfu_comm_times *add);

/* ---- the ratios --------------------------------------------------------- */

/* Bus bandwidth in GB/s: bus_bytes / seconds / 1e9. NaN unless seconds > 0
 * and bus_bytes >= 0 (both finite). */
double mfu_comm_busbw_gbs(double bus_bytes, double seconds);

/* Share of the links' capacity used while communicating: link_bus_bytes /
 * link_capacity_bytes. NaN unless the capacity is > 0 (and both finite). */
double mfu_comm_net_utilization(double link_bus_bytes, double link_capacity_bytes);

/* Share of communication time hidden under compute: 1 - exposed_s /
 * duration_s. NaN unless duration_s > 0 and exposed_s >= 0. Never clamped:
 * exposure longer than the collectives took (a wait that also waited for
 * something else) reads negative. */
double mfu_comm_overlap(double exposed_s, double duration_s);

#endif /* MFU_COMM_H */
