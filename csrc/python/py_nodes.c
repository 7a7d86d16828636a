/*
 * py_nodes.c -- _C.node_kind: which autograd node a backward call runs in
 * (core/ops/nodes.h), for the TorchDispatchMode fallback and the higher-order
 * ops' kernels (mfu_tracker/flops/counter/_sites.py); the C++ observer
 * reaches the same function through the op table's capsule.
 */
#include "mfu_module.h"

#include "../core/ops/nodes.h"

static PyObject *py_node_kind(PyObject *module, PyObject *args)
{
    (void)module;
    int custom_function, higher_order_call = 0;
    const char *name = NULL, *forward_module = NULL;
    if (!PyArg_ParseTuple(args, "pzz|p:node_kind", &custom_function, &name, &forward_module,
                          &higher_order_call))
        return NULL;
    switch (mfu_node_kind(custom_function, name, forward_module, higher_order_call)) {
    case MFU_NODE_CHECKPOINT:
        return PyUnicode_FromString("checkpoint");
    case MFU_NODE_CUSTOM:
        return PyUnicode_FromString("custom");
    default:
        return PyUnicode_FromString("builtin");
    }
}

static PyMethodDef nodes_methods[] = {
    {"node_kind", py_node_kind, METH_VARARGS,
     "node_kind(custom_function, name, forward_module, higher_order_call=False, /)\n--\n\n"
     "The kind of the autograd node a backward call runs in: 'builtin', 'custom'\n"
     "or 'checkpoint' (core/ops/nodes.h). custom_function: a custom autograd\n"
     "Function's node; name: its name or None; forward_module: its Function\n"
     "class's module or None; higher_order_call: the call is a higher-order op's."},
    {NULL, NULL, 0, NULL},
};

int mfu_py_nodes_exec(PyObject *module)
{
    return PyModule_AddFunctions(module, nodes_methods);
}
