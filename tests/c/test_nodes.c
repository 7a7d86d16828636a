/*
 * test_nodes.c -- which autograd node a backward call runs in (core/ops/nodes.h):
 * the one rule both FLOP counters apply, case by case.
 */
#include "check.h"

#include "nodes.h"

static void test_autograd_nodes_are_builtin(void)
{
    /* autograd's own nodes, whatever their name or module */
    CHECK(mfu_node_kind(0, "MmBackward0", NULL, 0) == MFU_NODE_BUILTIN);
    CHECK(mfu_node_kind(0, NULL, NULL, 0) == MFU_NODE_BUILTIN);
    CHECK(mfu_node_kind(0, "CheckpointFunctionBackward", NULL, 0) == MFU_NODE_BUILTIN);
    CHECK(mfu_node_kind(0, NULL, "torch._higher_order_ops.flex_attention", 1) == MFU_NODE_BUILTIN);
}

static void test_custom_functions(void)
{
    CHECK(mfu_node_kind(1, "MyMatMulBackward", "mylib.ops", 0) == MFU_NODE_CUSTOM);
    CHECK(mfu_node_kind(1, NULL, NULL, 0) == MFU_NODE_CUSTOM);     /* cannot say: custom */
    CHECK(mfu_node_kind(1, "CompiledFunctionBackward", "torch._functorch._aot_autograd."
                        "runtime_wrappers", 0) == MFU_NODE_CUSTOM);
    /* a higher-order op's Function: an ordinary call in it counts as it
     * runs (cond, invoke_subgraph), a higher-order call is autograd's */
    CHECK(mfu_node_kind(1, "FlexAttentionAutogradOpBackward",
                        "torch._higher_order_ops.flex_attention", 0) == MFU_NODE_CUSTOM);
    CHECK(mfu_node_kind(1, "FlexAttentionAutogradOpBackward",
                        "torch._higher_order_ops.flex_attention", 1) == MFU_NODE_BUILTIN);
    CHECK(mfu_node_kind(1, "X", "torch._higher_order_ops", 1) == MFU_NODE_BUILTIN);
    /* a package that only starts like it is not it */
    CHECK(mfu_node_kind(1, "X", "torch._higher_order_opsextra.y", 1) == MFU_NODE_CUSTOM);
    CHECK(mfu_node_kind(1, "X", "mylib._higher_order_ops", 1) == MFU_NODE_CUSTOM);
}

static void test_reentrant_checkpoints(void)
{
    /* torch.utils.checkpoint, Megatron's and DeepSpeed's CheckpointFunction */
    CHECK(mfu_node_kind(1, "CheckpointFunctionBackward", "torch.utils.checkpoint", 0) ==
          MFU_NODE_CHECKPOINT);
    CHECK(mfu_node_kind(1, "CheckpointFunctionBackward", "megatron.core.tensor_parallel.random",
                        0) == MFU_NODE_CHECKPOINT);
    CHECK(mfu_node_kind(1, "MyCheckpointFunctionBackward", NULL, 1) == MFU_NODE_CHECKPOINT);
    CHECK(mfu_node_kind(1, "CheckpointFunctionBackwardX", NULL, 0) == MFU_NODE_CUSTOM);
    CHECK(mfu_node_kind(1, "ckpt", NULL, 0) == MFU_NODE_CUSTOM);
}

int main(void)
{
    test_autograd_nodes_are_builtin();
    test_custom_functions();
    test_reentrant_checkpoints();
    return check_summary("test_nodes");
}
