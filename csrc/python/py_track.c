/* py_track.c -- placeholder. */
#include "mfu_module.h"

int mfu_py_track_exec(PyObject *module)
{
    (void)module;
    return 0;
}
