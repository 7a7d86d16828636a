/*
 * nodes.h -- which autograd node a backward-phase call runs in: the one
 * rule both FLOP counters apply (the C++ observer, csrc/torch/site.cpp; the
 * TorchDispatchMode fallback and the higher-order ops' kernels,
 * mfu_tracker/flops/counter/_sites.py), so they cannot disagree. What a
 * call then counts at that node is ops.h's ("Sites").
 *
 * The callers only look: whether the node is a custom autograd Function's
 * (torch's PyNode or CppNode: autograd.Function, custom ops with
 * register_autograd, a compiled region's AOTAutograd backward), its name
 * and the module its Function class was defined in. The rule:
 *   - not a custom Function's node (autograd's own, or none): BUILTIN;
 *   - a name ending in "CheckpointFunctionBackward" (torch.utils.checkpoint
 *     with use_reentrant=True, Megatron's and DeepSpeed's
 *     CheckpointFunction): CHECKPOINT, whose forward ran without grad and
 *     is now recomputed with it;
 *   - a higher-order op called in the backward of a higher-order op's own
 *     Function (its module under "torch._higher_order_ops":
 *     flex_attention_backward inside flex_attention's autograd): BUILTIN --
 *     the op was counted above that Function, at its forward call, with the
 *     backward its inputs need, so this is autograd's backward, executed
 *     only;
 *   - any other call in a custom Function's backward (ordinary ops inside
 *     a higher-order op's backward included: cond, invoke_subgraph, whose
 *     forwards ran with grad off): CUSTOM, counting as it runs.
 */
#ifndef MFU_NODES_H
#define MFU_NODES_H

#include "ops.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The kind of the node a call runs in. `custom_function`: nonzero for a
 * custom Function's node; `name`: its name, NULL when unknown;
 * `forward_module`: the module of its Function class ("__module__"), NULL
 * when unknown; `higher_order_call`: nonzero when the call is a
 * higher-order op's (flex_attention_backward). Never UNKNOWN. */
mfu_op_node mfu_node_kind(int custom_function, const char *name, const char *forward_module,
                          int higher_order_call);

#ifdef __cplusplus
}
#endif

#endif /* MFU_NODES_H */
