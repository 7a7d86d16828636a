/* nodes.c -- which autograd node a backward-phase call runs in (nodes.h). */
#include "nodes.h"

#include <string.h>

#define CHECKPOINT_SUFFIX "CheckpointFunctionBackward"
#define HIGHER_ORDER_PREFIX "torch._higher_order_ops"

static int ends_with(const char *s, const char *suffix)
{
    const size_t n = strlen(s), m = strlen(suffix);
    return n >= m && memcmp(s + n - m, suffix, m) == 0;
}

/* `module` is the package `package` or a module inside it. */
static int in_package(const char *module, const char *package)
{
    const size_t n = strlen(package);
    return strncmp(module, package, n) == 0 && (module[n] == '\0' || module[n] == '.');
}

mfu_op_node mfu_node_kind(int custom_function, const char *name, const char *forward_module,
                          int higher_order_call)
{
    if (!custom_function)
        return MFU_NODE_BUILTIN;
    if (name != NULL && ends_with(name, CHECKPOINT_SUFFIX))
        return MFU_NODE_CHECKPOINT;
    if (higher_order_call && forward_module != NULL &&
        in_package(forward_module, HIGHER_ORDER_PREFIX))
        return MFU_NODE_BUILTIN;
    return MFU_NODE_CUSTOM;
}
