/*
 * module.c -- definition and multi-phase init of mfu_tracker._C.
 * The work lives in the py_<topic>.c files; this file only wires them in.
 */
#include "mfu_module.h"

#ifndef MFU_TRACKER_VERSION
#error "setup.py defines MFU_TRACKER_VERSION (the package version)"
#endif

/* The bounds of core/base/mfu_limits.h, as _C.LIMIT_<NAME> ints: the Python
 * layer validates with these, never with a literal of its own. */
static int add_limits(PyObject *module)
{
    static const struct {
        const char *name;
        unsigned long long value;
    } limits[] = {
        {"LIMIT_WINDOW_MAX", MFU_WINDOW_MAX},
        {"LIMIT_WARMUP_MAX", MFU_WARMUP_MAX},
        {"LIMIT_NUM_GPUS_MAX", MFU_NUM_GPUS_MAX},
        {"LIMIT_PARALLEL_DEGREE_MAX", MFU_PARALLEL_DEGREE_MAX},
        {"LIMIT_TIMER_SIZE_MAX", MFU_TIMER_SIZE_MAX},
        {"LIMIT_TIMER_EVENTS_INITIAL_DEFAULT", MFU_TIMER_EVENTS_INITIAL_DEFAULT},
        {"LIMIT_TIMER_EVENTS_MAX_DEFAULT", MFU_TIMER_EVENTS_MAX_DEFAULT},
        {"LIMIT_TIMER_HISTORY_DEFAULT", MFU_TIMER_HISTORY_DEFAULT},
        {"LIMIT_COUNTERS_MAX", MFU_COUNTERS_MAX},
        {"LIMIT_GPU_NAME_MAX", MFU_GPU_NAME_MAX},
        {"LIMIT_GPU_CC_MAX", MFU_GPU_CC_MAX},
        {"LIMIT_DTYPE_NAME_MAX", MFU_DTYPE_NAME_MAX},
        {"LIMIT_PEAK_OVERRIDE_MAX", MFU_PEAK_OVERRIDE_MAX},
        {"LIMIT_PHASE_DEPTH_MAX", MFU_PHASE_DEPTH_MAX},
        {"LIMIT_COMM_INFLIGHT_MAX", MFU_COMM_INFLIGHT_MAX},
        {"LIMIT_COMM_SINKS_MAX", MFU_COMM_SINKS_MAX},
        {"LIMIT_STEPS_KEPT", MFU_STEPS_KEPT},
        {"LIMIT_GPU_CANDIDATES_MAX", MFU_GPU_CANDIDATES_MAX},
        {"LIMIT_TIMELINE_INTERVALS_MAX", MFU_TIMELINE_INTERVALS_MAX},
        {"LIMIT_TIMELINE_LANES_MAX", MFU_TIMELINE_LANES_MAX},
    };
    for (size_t i = 0; i < sizeof limits / sizeof limits[0]; i++) {
        PyObject *value = PyLong_FromUnsignedLongLong(limits[i].value);
        if (value == NULL)
            return -1;
        int rc = PyModule_AddObjectRef(module, limits[i].name, value);
        Py_DECREF(value);
        if (rc < 0)
            return -1;
    }
    return 0;
}

/* The environment variables that name the dlopen'd libraries, as
 * _C.<NAME> strings: the doctor and the tests set them by these names. */
static int add_library_env_names(PyObject *module)
{
    if (PyModule_AddStringConstant(module, "CUDA_LIBRARY_ENV", MFU_CUDA_LIBRARY_ENV) < 0 ||
        PyModule_AddStringConstant(module, "HIP_LIBRARY_ENV", MFU_HIP_LIBRARY_ENV) < 0 ||
        PyModule_AddStringConstant(module, "NVML_LIBRARY_ENV", MFU_NVML_LIBRARY_ENV) < 0)
        return -1;
    return 0;
}

/* What each topic adds to the module, in order: every registration of _C
 * is a row here (no exec function calls another). The op formulas' table
 * (ops) comes before the custom formulas, whose capsule publishes it. */
static int (*const topic_execs[])(PyObject *module) = {
    add_limits,
    add_library_env_names,
    mfu_py_track_exec,
    mfu_py_metrics_exec,
    mfu_py_gpu_specs_exec,
    mfu_py_flops_exec,
    mfu_py_transformer_exec,
    mfu_py_families_exec,
    mfu_py_context_parallel_exec,
    mfu_py_generation_exec,
    mfu_py_conventions_exec,
    mfu_py_ops_exec,
    mfu_py_formulas_exec,
    mfu_py_mark_timer_exec,
    mfu_py_step_tracker_exec,
    mfu_py_work_fields_exec,
    mfu_py_phases_exec,
    mfu_py_nvml_exec,
    mfu_py_comm_exec,
    mfu_py_links_exec,
    mfu_py_kernels_exec,
    mfu_py_nodes_exec,
    mfu_py_record_exec,
};

static int mfu_module_exec(PyObject *module)
{
    if (PyModule_AddStringConstant(module, "__version__", MFU_TRACKER_VERSION) < 0)
        return -1;
    for (size_t i = 0; i < sizeof topic_execs / sizeof topic_execs[0]; i++) {
        if (topic_execs[i](module) < 0)
            return -1;
    }
    return 0;
}

/* Each object of the state (MFU_MODULE_STATE_OBJECTS), visited or cleared. */
#define VISIT_ONE(field) Py_VISIT(state->field);
#define VISIT_ARRAY(field)                                                    \
    for (size_t i = 0; i < sizeof state->field / sizeof state->field[0]; i++) \
        Py_VISIT(state->field[i]);
#define CLEAR_ONE(field) Py_CLEAR(state->field);
#define CLEAR_ARRAY(field)                                                    \
    for (size_t i = 0; i < sizeof state->field / sizeof state->field[0]; i++) \
        Py_CLEAR(state->field[i]);

static int mfu_module_traverse(PyObject *module, visitproc visit, void *arg)
{
    mfu_module_state *state = mfu_module_get_state(module);
    MFU_MODULE_STATE_OBJECTS(VISIT_ONE, VISIT_ARRAY)
    return 0;
}

static int mfu_module_clear(PyObject *module)
{
    mfu_module_state *state = mfu_module_get_state(module);
    MFU_MODULE_STATE_OBJECTS(CLEAR_ONE, CLEAR_ARRAY)
    return 0;
}

static void mfu_module_free(void *module)
{
    (void)mfu_module_clear((PyObject *)module);
}

static PyModuleDef_Slot mfu_module_slots[] = {
    {Py_mod_exec, (void *)mfu_module_exec},
#ifdef Py_mod_multiple_interpreters
    {Py_mod_multiple_interpreters, Py_MOD_PER_INTERPRETER_GIL_SUPPORTED},
#endif
#ifdef Py_mod_gil
    {Py_mod_gil, Py_MOD_GIL_NOT_USED},
#endif
    {0, NULL},
};

struct PyModuleDef mfu_module_def = {
    PyModuleDef_HEAD_INIT,
    .m_name = "mfu_tracker._C",
    .m_doc = "C core of mfu_tracker: peak table, FLOP formulas, clocks, "
             "utilization arithmetic.",
    .m_size = sizeof(mfu_module_state),
    .m_slots = mfu_module_slots,
    .m_traverse = mfu_module_traverse,
    .m_clear = mfu_module_clear,
    .m_free = mfu_module_free,
};

PyMODINIT_FUNC PyInit__C(void)
{
    return PyModuleDef_Init(&mfu_module_def);
}
