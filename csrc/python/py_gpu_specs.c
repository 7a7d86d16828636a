/* py_gpu_specs.c -- placeholder: Python bindings for core/gpu_specs.h land here. */
#include "mfu_module.h"

int mfu_py_gpu_specs_exec(PyObject *module)
{
    (void)module;
    return 0;
}
