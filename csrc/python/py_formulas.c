/*
 * py_formulas.c -- the one registry of custom FLOP formulas in
 * mfu_tracker._C (register_flop_formula, unregister_flop_formula,
 * has_flop_formula) and the capsule that hands it, with the core's op
 * table and mfu_op_count, to the C++ observer (see py_ops.h; py_ops.c
 * counts with it from Python through py_formulas.h).
 */
#include <stdatomic.h>
#include <string.h>

#include "py_formulas.h"

/* ------------------------------------------------------------------------
 * The registry of custom formulas
 * ------------------------------------------------------------------------ */

typedef struct registry registry;

/* An entry lives as long as the registry: unregistering only clears `live`
 * (an observer may hold the entry), and registering the name again revives
 * it with the new callable, so the registry holds one entry per name ever
 * registered. */
struct mfu_formula {
    mfu_formula *next;
    registry *owner;
    char *name;   /* "mylib::op" */
    PyObject *fn; /* strong; read and replaced under the owner's lock */
    int live;     /* 0 once unregistered */
};

struct registry {
    mfu_ops_api api; /* first: the capsule's pointer is the registry's */
    PyThread_type_lock lock;
    _Atomic uint64_t generation;
    mfu_formula *head; /* every name ever registered, newest first */
};

static uint64_t formula_generation(void *formulas)
{
    return atomic_load(&((registry *)formulas)->generation);
}

/* The entry named `name`, live or not; the caller holds the lock. */
static mfu_formula *entry_locked(registry *reg, const char *name)
{
    for (mfu_formula *f = reg->head; f != NULL; f = f->next)
        if (strcmp(f->name, name) == 0)
            return f;
    return NULL;
}

/* The live entry named `name`; the caller holds the lock. */
static mfu_formula *find_locked(registry *reg, const char *name)
{
    mfu_formula *f = entry_locked(reg, name);
    return f != NULL && f->live ? f : NULL;
}

static const mfu_formula *formula_find(void *formulas, const char *name)
{
    registry *reg = formulas;
    mfu_formula *found;
    if (name == NULL)
        return NULL;
    PyThread_acquire_lock(reg->lock, WAIT_LOCK);
    found = find_locked(reg, name);
    PyThread_release_lock(reg->lock);
    return found;
}

/* The exception a formula raised, re-raised as RuntimeError("custom formula
 * raised: Type: message") from it: both counters report that text. */
static void formula_raised(void)
{
    PyObject *type, *value, *tb, *type2, *value2, *tb2;
    PyErr_Fetch(&type, &value, &tb);
    PyErr_NormalizeException(&type, &value, &tb);
    if (tb != NULL)
        PyException_SetTraceback(value, tb);
    PyErr_Format(PyExc_RuntimeError, "custom formula raised: %s: %S",
                 ((PyTypeObject *)type)->tp_name, value);
    PyErr_Fetch(&type2, &value2, &tb2);
    PyErr_NormalizeException(&type2, &value2, &tb2);
    PyException_SetCause(value2, value); /* steals value */
    PyErr_Restore(type2, value2, tb2);
    Py_DECREF(type);
    Py_XDECREF(tb);
}

/* An int >= 0 that fits int64 (not a bool). */
static int count_from_py(PyObject *obj, int64_t *out)
{
    long long value;
    if (PyBool_Check(obj) || !PyLong_Check(obj))
        return -1;
    value = PyLong_AsLongLong(obj);
    if (value == -1 && PyErr_Occurred()) {
        PyErr_Clear();
        return -1;
    }
    if (value < 0)
        return -1;
    *out = (int64_t)value;
    return 0;
}

int mfu_py_formula_count(const mfu_formula *formula, PyObject *args,
                         int any_input_requires_grad, const mfu_op_call *call,
                         mfu_op_flops *out)
{
    PyObject *fn, *result;
    int64_t flops = 0, model_backward = -1;
    int ok;

    /* our own reference: a registration may replace the entry's callable
     * while this one runs */
    PyThread_acquire_lock(formula->owner->lock, WAIT_LOCK);
    fn = Py_NewRef(formula->fn);
    PyThread_release_lock(formula->owner->lock);
    result = PyObject_CallObject(fn, args);
    Py_DECREF(fn);
    if (result == NULL) {
        formula_raised();
        return -1;
    }
    /* an int: executed FLOPs; (int, int): (executed, model backward) */
    if (PyTuple_Check(result) && PyTuple_GET_SIZE(result) == 2)
        ok = count_from_py(PyTuple_GET_ITEM(result, 0), &flops) == 0 &&
             count_from_py(PyTuple_GET_ITEM(result, 1), &model_backward) == 0;
    else
        ok = count_from_py(result, &flops) == 0;
    Py_DECREF(result);
    const mfu_status st = ok ? mfu_op_custom_flops(flops, model_backward,
                                                   any_input_requires_grad, call, out)
                             : MFU_ERR_INVALID_ARGUMENT;
    if (st != MFU_OK) {
        PyErr_SetString(PyExc_ValueError,
                        st == MFU_ERR_OVERFLOW
                            ? "custom formula's FLOPs and model backward overflow int64"
                            : "custom formula must return an int >= 0 or a pair of them");
        return -1;
    }
    return 0;
}

static void registry_free(PyObject *capsule)
{
    registry *reg = PyCapsule_GetPointer(capsule, MFU_OPS_API_CAPSULE);
    if (reg == NULL)
        return;
    for (mfu_formula *f = reg->head, *next; f != NULL; f = next) {
        next = f->next;
        Py_XDECREF(f->fn);
        PyMem_RawFree(f->name);
        PyMem_RawFree(f);
    }
    if (reg->lock != NULL)
        PyThread_free_lock(reg->lock);
    PyMem_RawFree(reg);
}

/* The registry of `module` (its _ops_api capsule); NULL + exception. */
static registry *registry_of(PyObject *module)
{
    PyObject *capsule = PyObject_GetAttrString(module, "_ops_api");
    registry *reg;
    if (capsule == NULL)
        return NULL;
    reg = PyCapsule_GetPointer(capsule, MFU_OPS_API_CAPSULE);
    Py_DECREF(capsule);
    return reg;
}

int mfu_py_formula_lookup(PyObject *module, const char *name, const mfu_formula **out)
{
    registry *reg = registry_of(module);
    if (reg == NULL)
        return -1;
    *out = formula_find(reg, name);
    return 0;
}

const char *mfu_py_op_name_arg(PyObject *obj, const char *argument)
{
    if (!PyUnicode_Check(obj)) {
        PyErr_Format(PyExc_TypeError, "%s must be a str, not %.80s", argument,
                     Py_TYPE(obj)->tp_name);
        return NULL;
    }
    return PyUnicode_AsUTF8(obj);
}

static PyObject *py_register_flop_formula(PyObject *module, PyObject *args)
{
    PyObject *name_obj, *fn;
    const char *name;
    registry *reg;
    mfu_formula *entry;

    if (!PyArg_UnpackTuple(args, "register_flop_formula", 2, 2, &name_obj, &fn) ||
        (name = mfu_py_op_name_arg(name_obj, "op_name")) == NULL ||
        (reg = registry_of(module)) == NULL)
        return NULL;
    if (!PyCallable_Check(fn))
        return PyErr_Format(PyExc_TypeError,
                            "register_flop_formula: fn must be callable, not %.80s",
                            Py_TYPE(fn)->tp_name);
    if (mfu_op_find(name) != NULL)
        return PyErr_Format(PyExc_ValueError,
                            "register_flop_formula: %s already has a built-in formula",
                            name);
    /* a new entry, made before taking the lock (used unless the name has one) */
    const size_t size = strlen(name) + 1;
    mfu_formula *fresh = PyMem_RawCalloc(1, sizeof *fresh);
    if (fresh == NULL || (fresh->name = PyMem_RawMalloc(size)) == NULL) {
        PyMem_RawFree(fresh);
        return PyErr_NoMemory();
    }
    memcpy(fresh->name, name, size);
    PyObject *old_fn = NULL;
    PyThread_acquire_lock(reg->lock, WAIT_LOCK);
    entry = entry_locked(reg, name);
    const int taken = entry != NULL && entry->live;
    if (!taken) {
        if (entry == NULL) {
            entry = fresh;
            fresh = NULL;
            entry->owner = reg;
            entry->next = reg->head;
            reg->head = entry;
        }
        old_fn = entry->fn; /* an unregistered one's, if any */
        entry->fn = Py_NewRef(fn);
        entry->live = 1;
        atomic_fetch_add(&reg->generation, 1);
    }
    PyThread_release_lock(reg->lock);
    Py_XDECREF(old_fn);
    if (fresh != NULL) {
        PyMem_RawFree(fresh->name);
        PyMem_RawFree(fresh);
    }
    if (taken)
        return PyErr_Format(PyExc_ValueError,
                            "register_flop_formula: %s already has a registered "
                            "formula (unregister_flop_formula it first)", name);
    Py_RETURN_NONE;
}

static PyObject *py_unregister_flop_formula(PyObject *module, PyObject *arg)
{
    const char *name = mfu_py_op_name_arg(arg, "op_name");
    registry *reg;
    mfu_formula *entry;

    if (name == NULL || (reg = registry_of(module)) == NULL)
        return NULL;
    PyThread_acquire_lock(reg->lock, WAIT_LOCK);
    entry = find_locked(reg, name);
    if (entry != NULL) {
        /* NB: the entry and its callable stay for observers that looked it
         * up just before (one entry per name ever registered) */
        entry->live = 0;
        atomic_fetch_add(&reg->generation, 1);
    }
    PyThread_release_lock(reg->lock);
    if (entry == NULL)
        return PyErr_Format(PyExc_KeyError, "no registered flop formula for %s", name);
    Py_RETURN_NONE;
}

static PyObject *py_has_flop_formula(PyObject *module, PyObject *arg)
{
    const char *name = mfu_py_op_name_arg(arg, "op_name");
    registry *reg;
    if (name == NULL || (reg = registry_of(module)) == NULL)
        return NULL;
    return PyBool_FromLong(formula_find(reg, name) != NULL);
}

/* ------------------------------------------------------------------------
 * Method table and init
 * ------------------------------------------------------------------------ */

static PyMethodDef formula_methods[] = {
    {"register_flop_formula", py_register_flop_formula, METH_VARARGS,
     "register_flop_formula(op_name, fn, /)\n--\n\n"
     "Count op `op_name` ('mylib::op') with fn(*args) (see\n"
     "mfu_tracker.counter.register_flop_formula). ValueError for an op with a\n"
     "built-in or a registered formula, TypeError for a fn that is not callable."},
    {"unregister_flop_formula", py_unregister_flop_formula, METH_O,
     "unregister_flop_formula(op_name, /)\n--\n\n"
     "Forget the formula of `op_name`; KeyError when none is registered."},
    {"has_flop_formula", py_has_flop_formula, METH_O,
     "has_flop_formula(op_name, /)\n--\n\nWhether `op_name` has a registered formula."},
    {NULL, NULL, 0, NULL},
};

int mfu_py_formulas_exec(PyObject *module)
{
    registry *reg;
    PyObject *capsule;

    if (PyModule_AddFunctions(module, formula_methods) < 0)
        return -1;
    reg = PyMem_RawCalloc(1, sizeof *reg);
    if (reg == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    reg->lock = PyThread_allocate_lock();
    if (reg->lock == NULL) {
        PyMem_RawFree(reg);
        PyErr_NoMemory();
        return -1;
    }
    atomic_init(&reg->generation, 1);
    reg->api = (mfu_ops_api){
        .abi_version = MFU_OPS_API_VERSION,
        .core = {.status_str = mfu_status_str, .find = mfu_op_find,
                 .inputs = mfu_op_inputs, .role_name = mfu_op_role_name,
                 .kind_name = mfu_op_kind_name,
                 .site_name = mfu_op_site_name,
                 .count = mfu_op_count, .node_kind = mfu_node_kind},
        .formulas = {.registry = reg, .generation = formula_generation,
                     .find = formula_find, .count = mfu_py_formula_count},
    };
    capsule = PyCapsule_New(reg, MFU_OPS_API_CAPSULE, registry_free);
    if (capsule == NULL) {
        PyThread_free_lock(reg->lock);
        PyMem_RawFree(reg);
        return -1;
    }
    const int rc = PyModule_AddObjectRef(module, "_ops_api", capsule);
    Py_DECREF(capsule); /* on failure its destructor frees the registry */
    return rc;
}
