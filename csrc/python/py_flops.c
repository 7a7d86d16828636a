/* py_flops.c -- placeholder: Python bindings for core/flops.h land here. */
#include "mfu_module.h"

int mfu_py_flops_exec(PyObject *module)
{
    (void)module;
    return 0;
}
