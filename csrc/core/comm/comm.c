/* comm.c -- collective kinds, the c10d operator table, bus factors and the
 * per-step communication record (see comm.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "comm.h"
#include "mfu_limits.h"

static const char *const kind_names[MFU_COMM_KIND_COUNT] = {
    [MFU_COMM_ALL_GATHER] = "all_gather",
    [MFU_COMM_REDUCE_SCATTER] = "reduce_scatter",
    [MFU_COMM_ALL_REDUCE] = "all_reduce",
    [MFU_COMM_ALL_TO_ALL] = "all_to_all",
    [MFU_COMM_BROADCAST] = "broadcast",
    [MFU_COMM_P2P] = "p2p",
    [MFU_COMM_OTHER] = "other",
};

static const mfu_phase kind_phases[MFU_COMM_KIND_COUNT] = {
    [MFU_COMM_ALL_GATHER] = MFU_PHASE_ALL_GATHER,
    [MFU_COMM_REDUCE_SCATTER] = MFU_PHASE_REDUCE_SCATTER,
    [MFU_COMM_ALL_REDUCE] = MFU_PHASE_ALL_REDUCE,
    [MFU_COMM_ALL_TO_ALL] = MFU_PHASE_ALL_TO_ALL,
    [MFU_COMM_BROADCAST] = MFU_PHASE_BROADCAST,
    [MFU_COMM_P2P] = MFU_PHASE_P2P,
    [MFU_COMM_OTHER] = MFU_PHASE_COMMUNICATION,
};

const char *mfu_comm_kind_name(mfu_comm_kind kind)
{
    return (unsigned)kind < MFU_COMM_KIND_COUNT ? kind_names[kind] : NULL;
}

mfu_status mfu_comm_kind_from_name(const char *name, mfu_comm_kind *kind)
{
    if (name == NULL)
        return MFU_ERR_INVALID_ARGUMENT;
    for (int k = 0; k < MFU_COMM_KIND_COUNT; k++) {
        if (strcmp(name, kind_names[k]) == 0) {
            *kind = (mfu_comm_kind)k;
            return MFU_OK;
        }
    }
    return MFU_ERR_INVALID_ARGUMENT;
}

mfu_phase mfu_comm_kind_phase(mfu_comm_kind kind)
{
    return (unsigned)kind < MFU_COMM_KIND_COUNT ? kind_phases[kind] : MFU_PHASE_NONE;
}

mfu_status mfu_comm_phase_kind(mfu_phase phase, mfu_comm_kind *kind)
{
    for (int k = 0; k < MFU_COMM_KIND_COUNT; k++) {
        if (kind_phases[k] == phase) {
            *kind = (mfu_comm_kind)k;
            return MFU_OK;
        }
    }
    return MFU_ERR_NOT_FOUND;
}

/* nccl-tests doc/PERFORMANCE.md: "Bus bandwidth" gives, for n ranks,
 * AllReduce 2(n-1)/n, ReduceScatter (n-1)/n, AllGather (n-1)/n, Broadcast 1;
 * alltoall_perf uses (n-1)/n (src/alltoall.cu, AlltoAllGetBw) and
 * sendrecv_perf 1 (src/sendrecv.cu, SendRecvGetBw). */
mfu_status mfu_comm_busbw_factor(mfu_comm_kind kind, int64_t group_size, double *factor)
{
    double n;
    if ((unsigned)kind >= MFU_COMM_KIND_COUNT || group_size < 1)
        return MFU_ERR_INVALID_ARGUMENT;
    n = (double)group_size;
    switch (kind) {
    case MFU_COMM_ALL_GATHER:
    case MFU_COMM_REDUCE_SCATTER:
    case MFU_COMM_ALL_TO_ALL:
        *factor = (n - 1.0) / n;
        return MFU_OK;
    case MFU_COMM_ALL_REDUCE:
        *factor = 2.0 * (n - 1.0) / n;
        return MFU_OK;
    case MFU_COMM_BROADCAST:
    case MFU_COMM_P2P:
        *factor = 1.0;
        return MFU_OK;
    default:
        return MFU_ERR_NOT_FOUND;
    }
}

/* ---- the c10d operators ------------------------------------------------- */

/* Schemas as torch 2.13 registers them (torch._C._jit_get_all_schemas(),
 * "c10d::..."); every ProcessGroup collective dispatches one of these, the
 * functional collectives (_c10d_functional::*) included. */
static const mfu_comm_op comm_ops[] = {
    /* allreduce_(Tensor[] tensors, ProcessGroup, ReduceOp, Tensor?, ...) */
    {.name = "c10d::allreduce_", .kind = MFU_COMM_ALL_REDUCE,
     .payload_arg = 0, .result_arg = 0, .group_arg = 1},
    /* allreduce_coalesced_(Tensor[] tensors, ProcessGroup, ReduceOp, ...) */
    {.name = "c10d::allreduce_coalesced_", .kind = MFU_COMM_ALL_REDUCE,
     .payload_arg = 0, .result_arg = 0, .group_arg = 1},
    /* allgather_(Tensor[][] output_tensors, Tensor[] input_tensors, ProcessGroup, ...) */
    {.name = "c10d::allgather_", .kind = MFU_COMM_ALL_GATHER,
     .payload_arg = 0, .result_arg = 0, .group_arg = 2},
    /* _allgather_base_(Tensor output_tensor, Tensor input_tensor, ProcessGroup, ...) */
    {.name = "c10d::_allgather_base_", .kind = MFU_COMM_ALL_GATHER,
     .payload_arg = 0, .result_arg = 0, .group_arg = 2},
    /* allgather_coalesced_(Tensor[][] output_lists, Tensor[] input_list, ProcessGroup, ...) */
    {.name = "c10d::allgather_coalesced_", .kind = MFU_COMM_ALL_GATHER,
     .payload_arg = 0, .result_arg = 0, .group_arg = 2},
    /* allgather_into_tensor_coalesced_(Tensor[] outputs, Tensor[] inputs, ProcessGroup, ...) */
    {.name = "c10d::allgather_into_tensor_coalesced_", .kind = MFU_COMM_ALL_GATHER,
     .payload_arg = 0, .result_arg = 0, .group_arg = 2},
    /* reduce_scatter_(Tensor[] output_tensors, Tensor[][] input_tensors, ProcessGroup, ...) */
    {.name = "c10d::reduce_scatter_", .kind = MFU_COMM_REDUCE_SCATTER,
     .payload_arg = 1, .result_arg = 0, .group_arg = 2},
    /* _reduce_scatter_base_(Tensor output_tensor, Tensor input_tensor, ProcessGroup, ...) */
    {.name = "c10d::_reduce_scatter_base_", .kind = MFU_COMM_REDUCE_SCATTER,
     .payload_arg = 1, .result_arg = 0, .group_arg = 2},
    /* reduce_scatter_tensor_coalesced_(Tensor[] outputs, Tensor[] inputs, ProcessGroup, ...) */
    {.name = "c10d::reduce_scatter_tensor_coalesced_", .kind = MFU_COMM_REDUCE_SCATTER,
     .payload_arg = 1, .result_arg = 0, .group_arg = 2},
    /* alltoall_base_(Tensor output, Tensor input, ProcessGroup, int[], int[], ...) */
    {.name = "c10d::alltoall_base_", .kind = MFU_COMM_ALL_TO_ALL,
     .payload_arg = 1, .result_arg = 0, .group_arg = 2},
    /* alltoall_(Tensor[] output_tensors, Tensor[] input_tensors, ProcessGroup, ...) */
    {.name = "c10d::alltoall_", .kind = MFU_COMM_ALL_TO_ALL,
     .payload_arg = 1, .result_arg = 0, .group_arg = 2},
    /* broadcast_(Tensor[] tensors, ProcessGroup, int root_rank, ...) */
    {.name = "c10d::broadcast_", .kind = MFU_COMM_BROADCAST,
     .payload_arg = 0, .result_arg = 0, .group_arg = 1},
    /* send(Tensor[] tensors, ProcessGroup, int dst, int tag) */
    {.name = "c10d::send", .kind = MFU_COMM_P2P,
     .payload_arg = 0, .result_arg = 0, .group_arg = 1},
    /* recv_(Tensor[] tensors, ProcessGroup, int src, int tag) */
    {.name = "c10d::recv_", .kind = MFU_COMM_P2P,
     .payload_arg = 0, .result_arg = 0, .group_arg = 1},
    /* recv_any_source_(Tensor[] tensors, ProcessGroup, int tag) */
    {.name = "c10d::recv_any_source_", .kind = MFU_COMM_P2P,
     .payload_arg = 0, .result_arg = 0, .group_arg = 1},
    /* reduce_(Tensor[] tensors, ProcessGroup, ReduceOp, int root_rank, ...) */
    {.name = "c10d::reduce_", .kind = MFU_COMM_OTHER,
     .payload_arg = 0, .result_arg = 0, .group_arg = 1},
    /* gather_(Tensor[][] output_tensors, Tensor[] input_tensors, ProcessGroup, ...) */
    {.name = "c10d::gather_", .kind = MFU_COMM_OTHER,
     .payload_arg = 1, .result_arg = 0, .group_arg = 2},
    /* scatter_(Tensor[] output_tensors, Tensor[][] input_tensors, ProcessGroup, ...) */
    {.name = "c10d::scatter_", .kind = MFU_COMM_OTHER,
     .payload_arg = 0, .result_arg = 0, .group_arg = 2},
    /* barrier(Tensor tensor, ProcessGroup, int[] device_ids, ...): the
     * tensor is a placeholder, no payload */
    {.name = "c10d::barrier", .kind = MFU_COMM_OTHER,
     .payload_arg = -1, .result_arg = -1, .group_arg = 1},
    /* monitored_barrier_(Tensor tensor, ProcessGroup, int[] device_ids, ...) */
    {.name = "c10d::monitored_barrier_", .kind = MFU_COMM_OTHER,
     .payload_arg = -1, .result_arg = -1, .group_arg = 1},
};

size_t mfu_comm_op_count(void)
{
    return sizeof comm_ops / sizeof comm_ops[0];
}

const mfu_comm_op *mfu_comm_op_get(size_t index)
{
    return index < mfu_comm_op_count() ? &comm_ops[index] : NULL;
}

const mfu_comm_op *mfu_comm_op_find(const char *name)
{
    if (name == NULL)
        return NULL;
    for (size_t i = 0; i < mfu_comm_op_count(); i++)
        if (strcmp(name, comm_ops[i].name) == 0)
            return &comm_ops[i];
    return NULL;
}

/* torch/csrc/distributed/c10d/Work.hpp, enum class OpType (torch 2.13). */
static const struct {
    const char *name;
    mfu_comm_kind kind;
} op_types[] = {
    {"BROADCAST", MFU_COMM_BROADCAST},
    {"ALLREDUCE", MFU_COMM_ALL_REDUCE},
    {"ALLREDUCE_COALESCED", MFU_COMM_ALL_REDUCE},
    {"_ALLREDUCE_SPARSE", MFU_COMM_ALL_REDUCE},
    {"REDUCE", MFU_COMM_OTHER},
    {"ALLGATHER", MFU_COMM_ALL_GATHER},
    {"_ALLGATHER_BASE", MFU_COMM_ALL_GATHER},
    {"ALLGATHER_COALESCED", MFU_COMM_ALL_GATHER},
    {"GATHER", MFU_COMM_OTHER},
    {"SCATTER", MFU_COMM_OTHER},
    {"REDUCE_SCATTER", MFU_COMM_REDUCE_SCATTER},
    {"_REDUCE_SCATTER_BASE", MFU_COMM_REDUCE_SCATTER},
    {"REDUCE_SCATTER_TENSOR_COALESCED", MFU_COMM_REDUCE_SCATTER},
    {"ALLTOALL_BASE", MFU_COMM_ALL_TO_ALL},
    {"ALLTOALL", MFU_COMM_ALL_TO_ALL},
    {"SEND", MFU_COMM_P2P},
    {"RECV", MFU_COMM_P2P},
    {"RECVANYSOURCE", MFU_COMM_P2P},
    {"BARRIER", MFU_COMM_OTHER},
    {"COALESCED", MFU_COMM_OTHER},
};

mfu_status mfu_comm_op_type_kind(const char *op_type, mfu_comm_kind *kind)
{
    if (op_type == NULL)
        return MFU_ERR_INVALID_ARGUMENT;
    for (size_t i = 0; i < sizeof op_types / sizeof op_types[0]; i++) {
        if (strcmp(op_type, op_types[i].name) == 0) {
            *kind = op_types[i].kind;
            return MFU_OK;
        }
    }
    return MFU_ERR_NOT_FOUND;
}

/* ---- one step's communication -------------------------------- */

void mfu_comm_times_add(mfu_comm_times *sum, const mfu_comm_times *add)
{
    for (int k = 0; k < MFU_COMM_KIND_COUNT; k++) {
        sum->bytes[k] += add->bytes[k];
        sum->calls[k] += add->calls[k];
        sum->duration_s[k] += add->duration_s[k];
        sum->bus_bytes[k] += add->bus_bytes[k];
    }
    sum->link_bus_bytes += add->link_bus_bytes;
    sum->link_capacity_bytes += add->link_capacity_bytes;
}

/* ---- the ratios --------------------------------------------------------- */

double mfu_comm_busbw_gbs(double bus_bytes, double seconds)
{
    if (!isfinite(bus_bytes) || !isfinite(seconds) || bus_bytes < 0.0 || !(seconds > 0.0))
        return NAN;
    return bus_bytes / seconds / 1e9;
}

double mfu_comm_net_utilization(double link_bus_bytes, double link_capacity_bytes)
{
    if (!isfinite(link_bus_bytes) || !isfinite(link_capacity_bytes) || link_bus_bytes < 0.0
        || !(link_capacity_bytes > 0.0))
        return NAN;
    return link_bus_bytes / link_capacity_bytes;
}

double mfu_comm_overlap(double exposed_s, double duration_s)
{
    if (!isfinite(exposed_s) || !isfinite(duration_s) || exposed_s < 0.0 || !(duration_s > 0.0))
        return NAN;
    return 1.0 - exposed_s / duration_s;
}
