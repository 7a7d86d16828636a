/*
 * py_ops.c -- op counting in mfu_tracker._C: the core's op table and
 * mfu_op_count for Python, the one registry of custom FLOP formulas, and
 * the capsule that hands both to the C++ observer (see py_ops.h).
 */
#include <stdatomic.h>
#include <string.h>

#include "mfu_module.h"
#include "py_ops.h"

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

static int formula_count(const mfu_formula *formula, PyObject *args,
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
    if (!ok || mfu_op_custom_flops(flops, model_backward, any_input_requires_grad,
                                   call, out) != MFU_OK) {
        PyErr_SetString(PyExc_ValueError,
                        "custom formula must return an int >= 0 or a pair of them");
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

/* A str argument as UTF-8 (borrowed from the str). */
static const char *name_arg(PyObject *obj, const char *argument)
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
        (name = name_arg(name_obj, "op_name")) == NULL ||
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
    const char *name = name_arg(arg, "op_name");
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
    const char *name = name_arg(arg, "op_name");
    registry *reg;
    if (name == NULL || (reg = registry_of(module)) == NULL)
        return NULL;
    return PyBool_FromLong(formula_find(reg, name) != NULL);
}

/* ------------------------------------------------------------------------
 * Counting from Python (the TorchDispatchMode fallback)
 * ------------------------------------------------------------------------ */

/* The autograd situation of a backward-phase call (mfu_op_call.node,
 * saved_tensor_hooks, recomputed): the keywords of op_count and the
 * optional tail of flop_formula_count. */
static int site_options(PyObject *node_obj, PyObject *hooks_obj,
                        PyObject *recomputed_obj, mfu_op_call *call)
{
    static const mfu_py_choice node_choices[] = {
        {"unknown", MFU_NODE_UNKNOWN}, {"builtin", MFU_NODE_BUILTIN},
        {"custom", MFU_NODE_CUSTOM}, {"checkpoint", MFU_NODE_CHECKPOINT}, {NULL, 0}};
    int node = MFU_NODE_UNKNOWN;
    if ((node_obj != NULL && node_obj != Py_None &&
         mfu_py_choice_arg(node_obj, "node", node_choices, &node) < 0) ||
        (hooks_obj != NULL &&
         mfu_py_flag_arg(hooks_obj, "saved_tensor_hooks", &call->saved_tensor_hooks) < 0) ||
        (recomputed_obj != NULL &&
         mfu_py_flag_arg(recomputed_obj, "recomputed", &call->recomputed) < 0))
        return -1;
    call->node = (mfu_op_node)node;
    return 0;
}

/* The phase and convention keywords of op_count / flop_formula_count. */
static int call_options(PyObject *causal_obj, PyObject *backward_obj,
                        PyObject *grad_obj, mfu_op_call *call)
{
    static const mfu_py_choice causal_choices[] = {
        {"full", MFU_CAUSAL_FULL}, {"half", MFU_CAUSAL_HALF}, {NULL, 0}};
    int causal = MFU_CAUSAL_FULL;
    call->backward_phase = 0;
    call->grad_enabled = 1;
    if ((causal_obj != NULL &&
         mfu_py_choice_arg(causal_obj, "causal_attention", causal_choices, &causal) < 0) ||
        (backward_obj != NULL &&
         mfu_py_flag_arg(backward_obj, "backward_phase", &call->backward_phase) < 0) ||
        (grad_obj != NULL && mfu_py_flag_arg(grad_obj, "grad_enabled", &call->grad_enabled) < 0))
        return -1;
    call->causal = (mfu_causal)causal;
    return 0;
}

/* op_count()'s result: (executed, model_backward, approximate, dtype),
 * a struct sequence whose model_self, overcompute and site (ops.h) are
 * read by name. */
static PyStructSequence_Field op_flops_fields[] = {
    {"executed", "FLOPs the call runs"},
    {"model_backward", "model backward its site charges"},
    {"approximate", "varlen lengths unknown: an upper bound"},
    {"dtype", "the compute dtype's name"},
    {"model_self", "its own model FLOPs where its site counts them"},
    {"overcompute", "executed beyond the model convention, not recompute"},
    {"site", "where it ran: 'forward', 'backward', 'custom_backward', "
             "'recompute', 'recompute_backprop'"},
    {NULL, NULL},
};

static PyStructSequence_Desc op_flops_desc = {
    "mfu_tracker._C.OpFlops", "One op call's count (core/ops.h).", op_flops_fields, 4,
};

static PyObject *flops_tuple(PyObject *module, const mfu_op_flops *f)
{
    PyObject *out = PyStructSequence_New(mfu_module_get_state(module)->op_flops_type);
    PyObject *items[7];
    if (out == NULL)
        return NULL;
    items[0] = PyLong_FromLongLong((long long)f->executed);
    items[1] = PyLong_FromUnsignedLongLong((unsigned long long)f->model_backward);
    items[2] = Py_NewRef(f->approximate ? Py_True : Py_False);
    items[3] = PyUnicode_FromString(mfu_dtype_name(f->dtype));
    items[4] = PyLong_FromLongLong((long long)f->model_self);
    items[5] = PyLong_FromUnsignedLongLong((unsigned long long)f->overcompute);
    items[6] = PyUnicode_FromString(mfu_op_site_name(f->site));
    int failed = 0;
    for (Py_ssize_t i = 0; i < 7; i++) {
        failed |= items[i] == NULL;
        PyStructSequence_SetItem(out, i, items[i]); /* steals; NULL for a failure */
    }
    if (failed) {
        Py_DECREF(out);
        return NULL;
    }
    return out;
}

/* A dtype name of _C.dtype_names() (or None: no dtype) as mfu_op_arg.dtype
 * holds it. */
static int dtype_arg(PyObject *obj, const char *argument, int *code)
{
    const char *name;
    mfu_dtype dtype;
    *code = 0;
    if (obj == NULL || obj == Py_None)
        return 0;
    if (mfu_py_str_arg(obj, argument, &name) < 0)
        return -1;
    if (mfu_dtype_from_name(name, &dtype) != MFU_OK) {
        PyErr_Format(PyExc_ValueError, "%s: unknown dtype %R", argument, obj);
        return -1;
    }
    *code = MFU_OP_DTYPE(dtype);
    return 0;
}

/* The tf32 keyword: MFU_TF32_* bits. */
static int tf32_arg(PyObject *obj, int *out)
{
    long long bits = 0;
    *out = 0;
    if (obj != NULL &&
        mfu_py_int_arg(obj, "tf32", 0, MFU_TF32_MATMUL | MFU_TF32_CONV, &bits) < 0)
        return -1;
    *out = (int)bits;
    return 0;
}

/* PyMem blocks of one op_count call (at most a shape and values per role). */
typedef struct blocks {
    int64_t *p[2 * MFU_ROLE_COUNT];
    size_t n;
} blocks;

static int int64s_arg(PyObject *obj, const char *argument, blocks *b,
                      const int64_t **out, size_t *count)
{
    int64_t *values = NULL;
    if (mfu_py_int64_array_arg(obj, argument, &values, count) < 0)
        return -1;
    b->p[b->n++] = values;
    *out = values;
    return 0;
}

/* Whether `n` values are a tensor argument's: a 1-D tensor of n for
 * offsets, as many as its sizes' product for values (ops.h). */
static int values_fit(const mfu_op_arg *arg, mfu_arg_need need, size_t n)
{
    size_t numel = 1;
    if (need == MFU_NEED_OFFSETS)
        return arg->count == 1 && arg->ints[0] >= 0 && (size_t)arg->ints[0] == n;
    for (size_t i = 0; i < arg->count; i++) {
        if (arg->ints[i] < 0)
            return 0;
        if (arg->ints[i] != 0 && numel > SIZE_MAX / (size_t)arg->ints[i])
            return 0;
        numel *= (size_t)arg->ints[i];
    }
    return numel == n;
}

/* One argument of op_count, as its role needs it (py_ops.c's docstring of
 * op_count gives the encoding). */
static int op_arg(PyObject *obj, const mfu_op_input *input, blocks *b,
                  mfu_op_arg *arg)
{
    const char *role = mfu_op_role_name(input->role);
    memset(arg, 0, sizeof *arg);
    if (obj == Py_None)
        return 0;
    switch (input->need) {
    case MFU_NEED_TENSOR:
    case MFU_NEED_OFFSETS:
    case MFU_NEED_VALUES: {
        PyObject *shape, *grad, *values = Py_None, *dtype = Py_None;
        size_t nvalues = 0;
        if (!PyTuple_Check(obj) || PyTuple_GET_SIZE(obj) < 2 || PyTuple_GET_SIZE(obj) > 4) {
            PyErr_Format(PyExc_TypeError,
                         "%s must be None or a tuple (shape, requires_grad[, values"
                         "[, dtype]]), not %.80s", role, Py_TYPE(obj)->tp_name);
            return -1;
        }
        shape = PyTuple_GET_ITEM(obj, 0);
        grad = PyTuple_GET_ITEM(obj, 1);
        if (PyTuple_GET_SIZE(obj) >= 3)
            values = PyTuple_GET_ITEM(obj, 2);
        if (PyTuple_GET_SIZE(obj) == 4)
            dtype = PyTuple_GET_ITEM(obj, 3);
        arg->type = MFU_ARG_TENSOR;
        if (int64s_arg(shape, role, b, &arg->ints, &arg->count) < 0 ||
            mfu_py_flag_arg(grad, role, &arg->requires_grad) < 0 ||
            dtype_arg(dtype, role, &arg->dtype) < 0)
            return -1;
        if (values == Py_None || input->need == MFU_NEED_TENSOR)
            return 0;
        if (int64s_arg(values, role, b, &arg->values, &nvalues) < 0)
            return -1;
        if (!values_fit(arg, input->need, nvalues)) {
            PyErr_Format(PyExc_ValueError, "%s: %zu values for a tensor %s", role, nvalues,
                         input->need == MFU_NEED_OFFSETS ? "that is not 1-D of that length"
                                                          : "of another size");
            return -1;
        }
        return 0;
    }
    case MFU_NEED_INT: /* a bool here is a schema bool (is_causal), not a count */
        arg->type = MFU_ARG_INT;
        if (PyBool_Check(obj)) {
            arg->value = obj == Py_True;
            return 0;
        }
        return mfu_py_int64_arg(obj, role, &arg->value);
    case MFU_NEED_INT_LIST:
        arg->type = MFU_ARG_INT_LIST;
        return int64s_arg(obj, role, b, &arg->ints, &arg->count);
    }
    return 0;
}

/* An mfu_op_count failure as the exception both counters report:
 * "argument: reason", or the reason alone. */
static PyObject *op_error(mfu_status st, const mfu_op_error *error)
{
    if (error->argument != NULL)
        return mfu_py_raise(st, error->argument, "%s", error->reason);
    PyErr_SetString(st == MFU_ERR_OVERFLOW ? PyExc_OverflowError : PyExc_ValueError,
                    error->reason);
    return NULL;
}

static PyObject *py_op_count(PyObject *module, PyObject *args, PyObject *kwargs)
{
    static char *keywords[] = {"name", "args", "causal_attention", "backward_phase",
                               "grad_enabled", "tf32", "node", "saved_tensor_hooks",
                               "recomputed", NULL};
    PyObject *name_obj, *seq_obj, *causal = NULL, *backward = NULL, *grad = NULL;
    PyObject *tf32 = NULL, *seq = NULL, *result = NULL;
    PyObject *node = NULL, *hooks = NULL, *recomputed = NULL;
    mfu_op_input inputs[MFU_ROLE_COUNT];
    mfu_op_arg call_args[MFU_OP_ARGS_MAX];
    mfu_op_call call = {.args = call_args, .causal = MFU_CAUSAL_FULL, .grad_enabled = 1};
    mfu_op_error error = {NULL, NULL};
    mfu_op_flops flops;
    blocks b = {{NULL}, 0};
    const mfu_op_spec *spec;
    const char *name;
    size_t n;
    mfu_status st;

    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OO|$OOOOOOO:op_count", keywords,
                                     &name_obj, &seq_obj, &causal, &backward, &grad, &tf32,
                                     &node, &hooks, &recomputed) ||
        (name = name_arg(name_obj, "name")) == NULL ||
        call_options(causal, backward, grad, &call) < 0 || tf32_arg(tf32, &call.tf32) < 0 ||
        site_options(node, hooks, recomputed, &call) < 0)
        return NULL;
    if ((spec = mfu_op_find(name)) == NULL)
        return PyErr_Format(PyExc_ValueError, "op_count: %s is not in the op table", name);
    if ((seq = PySequence_Fast(seq_obj, "op_count: args must be a sequence")) == NULL)
        return NULL;
    n = mfu_op_inputs(spec, inputs);
    for (size_t i = 0; i < n; i++) {
        const Py_ssize_t pos = inputs[i].position;
        PyObject *item = pos < PySequence_Fast_GET_SIZE(seq)
                             ? PySequence_Fast_GET_ITEM(seq, pos) : Py_None;
        if (op_arg(item, &inputs[i], &b, &call_args[pos]) < 0)
            goto done;
        call.nargs = (size_t)pos + 1;
    }
    st = mfu_op_count(spec, &call, &flops, &error);
    result = st == MFU_OK ? flops_tuple(module, &flops) : op_error(st, &error);
done:
    for (size_t i = 0; i < b.n; i++)
        PyMem_Free(b.p[i]);
    Py_DECREF(seq);
    return result;
}

static PyObject *py_flop_formula_count(PyObject *module, PyObject *args)
{
    PyObject *name_obj, *values, *any_grad_obj, *backward, *grad, *dtype = NULL, *tf32 = NULL;
    PyObject *node = NULL, *hooks = NULL, *recomputed = NULL;
    if (!PyArg_ParseTuple(args, "OO!OOO|OOOOO:flop_formula_count", &name_obj, &PyTuple_Type,
                          &values, &any_grad_obj, &backward, &grad, &dtype, &tf32, &node,
                          &hooks, &recomputed))
        return NULL;

    mfu_op_call call = {.causal = MFU_CAUSAL_FULL, .grad_enabled = 1};
    const char *name = name_arg(name_obj, "name");
    int any_grad;
    registry *reg;
    if (name == NULL || mfu_py_flag_arg(any_grad_obj, "any_requires_grad", &any_grad) < 0 ||
        call_options(NULL, backward, grad, &call) < 0 ||
        dtype_arg(dtype, "input_dtype", &call.input_dtype) < 0 || tf32_arg(tf32, &call.tf32) < 0 ||
        site_options(node, hooks, recomputed, &call) < 0 || (reg = registry_of(module)) == NULL)
        return NULL;
    const mfu_formula *formula = formula_find(reg, name);
    if (formula == NULL)
        return PyErr_Format(PyExc_KeyError, "no registered flop formula for %s", name);
    mfu_op_flops flops;
    if (formula_count(formula, values, any_grad, &call, &flops) < 0)
        return NULL;
    return flops_tuple(module, &flops);
}

/* ------------------------------------------------------------------------
 * The table, for Python
 * ------------------------------------------------------------------------ */

static PyObject *row_dict(const mfu_op_spec *spec)
{
    mfu_op_input inputs[MFU_ROLE_COUNT];
    const size_t n = mfu_op_inputs(spec, inputs);
    const char *layout = mfu_op_layout_name(spec->layout);
    PyObject *list = PyTuple_New((Py_ssize_t)n);
    if (list == NULL)
        return NULL;
    for (size_t i = 0; i < n; i++) {
        PyObject *item = Py_BuildValue("(iss)", inputs[i].position,
                                       mfu_op_role_name(inputs[i].role),
                                       mfu_op_need_name(inputs[i].need));
        if (item == NULL) {
            Py_DECREF(list);
            return NULL;
        }
        PyTuple_SET_ITEM(list, (Py_ssize_t)i, item);
    }
    return Py_BuildValue("{s:s,s:s,s:z,s:N}", "name", spec->name, "kind",
                         mfu_op_kind_name(spec->kind), "layout", layout, "inputs",
                         list);
}

static PyObject *py_op_table(PyObject *module, PyObject *unused)
{
    const size_t n = mfu_op_table_size();
    PyObject *rows = PyTuple_New((Py_ssize_t)n);
    (void)module;
    (void)unused;
    if (rows == NULL)
        return NULL;
    for (size_t i = 0; i < n; i++) {
        PyObject *row = row_dict(mfu_op_table_row(i));
        if (row == NULL) {
            Py_DECREF(rows);
            return NULL;
        }
        PyTuple_SET_ITEM(rows, (Py_ssize_t)i, row);
    }
    return rows;
}

/* ------------------------------------------------------------------------
 * Method table and init
 * ------------------------------------------------------------------------ */

static PyMethodDef ops_methods[] = {
    {"op_table", py_op_table, METH_NOARGS,
     "op_table()\n--\n\n"
     "The counted ops, one dict per row of the core's table (csrc/core/op_table.c):\n"
     "name ('aten::mm'), kind ('mm', 'bmm', 'grouped_mm', 'convolution',\n"
     "'convolution_backward', 'attention', 'attention_backward'), layout\n"
     "('bhsd', 'bshd', 'thd'; None but for attention) and inputs: the\n"
     "arguments its count reads, (schema position, role, need) by position,\n"
     "need one of 'tensor', 'offsets', 'int', 'int_list', 'values'. Rows named\n"
     "'higher_order::...' read the flat argument list of core/op_table.c."},
    {"op_count", (PyCFunction)(void (*)(void))py_op_count, METH_VARARGS | METH_KEYWORDS,
     "op_count(name, args, *, causal_attention='full', backward_phase=False, "
     "grad_enabled=True, tf32=0, node=None, saved_tensor_hooks=False, recomputed=False)"
     "\n--\n\n"
     "Count one call of the table's op `name` (mfu_op_count): returns\n"
     "(executed, model_backward, approximate, dtype), an OpFlops whose\n"
     "model_self, overcompute and site are read by name: dtype is the compute\n"
     "dtype's name (core/ops.h). node ('unknown', 'builtin', 'custom',\n"
     "'checkpoint'), saved_tensor_hooks and recomputed describe a backward-\n"
     "phase call's autograd situation (ops.h: Sites). args[i] is schema argument i, as its role\n"
     "needs it (other positions are not read): a tensor is (shape,\n"
     "requires_grad[, values or None[, dtype name or None]]), values only\n"
     "read for 'offsets' (1-D) and 'values' (all, row-major); an int an int\n"
     "(bools as 0 / 1); an int list a sequence\n"
     "of ints; None for an absent argument. ValueError / OverflowError name\n"
     "the argument that could not be counted. tf32: the MFU_TF32_* bits\n"
     "(1 matmul and attention, 2 convolution) under which fp32 counts as tf32."},
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
    {"flop_formula_count", py_flop_formula_count, METH_VARARGS,
     "flop_formula_count(name, args, any_requires_grad, backward_phase, grad_enabled, "
     "input_dtype=None, tf32=0, node=None, saved_tensor_hooks=False, recomputed=False, /)"
     "\n--\n\n"
     "Call the registered formula of `name` with *args and count its answer\n"
     "as op_count does: an OpFlops (executed, model_backward, approximate, dtype). A formula\n"
     "that raises gives RuntimeError('custom formula raised: ...')."},
    {NULL, NULL, 0, NULL},
};

int mfu_py_ops_exec(PyObject *module)
{
    registry *reg;
    PyObject *capsule;

    if (PyModule_AddFunctions(module, ops_methods) < 0)
        return -1;
    mfu_module_state *state = mfu_module_get_state(module);
    state->op_flops_type = PyStructSequence_NewType(&op_flops_desc); /* not a module attribute */
    if (state->op_flops_type == NULL)
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
                     .find = formula_find, .count = formula_count},
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
