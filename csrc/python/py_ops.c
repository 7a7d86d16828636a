/*
 * py_ops.c -- op counting in mfu_tracker._C: the core's op table and
 * mfu_op_count for Python (op_table, op_count), and the count of a
 * registered custom formula (flop_formula_count; the registry and the
 * capsule for the C++ observer are py_formulas.c's). See py_ops.h.
 */
#include <string.h>

#include "py_formulas.h"

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
 * a struct sequence whose model_self, overcompute, site,
 * overcompute_backward, square_model, mask_read and mask_tensor (ops.h) are
 * read by name. */
static PyStructSequence_Field op_flops_fields[] = {
    {"executed", "FLOPs the call runs"},
    {"model_backward", "the backward it anticipates (charged by a count without a backward)"},
    {"approximate", "varlen lengths unknown: an upper bound"},
    {"dtype", "the compute dtype's name"},
    {"model_self", "its own model FLOPs where its site counts them"},
    {"overcompute", "executed beyond the model convention, not recompute"},
    {"site", "where it ran: 'forward', 'backward', 'custom_backward', "
             "'recompute', 'recompute_backprop'"},
    {"overcompute_backward", "the over-compute of its anticipated backward"},
    {"square_model", "a full_square row: its forward FLOPs under the convention"},
    {"mask_read", "an attention call whose mask the count reads"},
    {"mask_tensor", "an attention call given a mask tensor, counted whole"},
    {NULL, NULL},
};

static PyStructSequence_Desc op_flops_desc = {
    "mfu_tracker._C.OpFlops", "One op call's count (core/ops/ops.h).", op_flops_fields, 4,
};

static PyObject *flops_tuple(PyObject *module, const mfu_op_flops *f)
{
    PyObject *out = PyStructSequence_New(mfu_module_get_state(module)->op_flops_type);
    PyObject *items[11];
    if (out == NULL)
        return NULL;
    items[0] = PyLong_FromLongLong((long long)f->executed);
    items[1] = PyLong_FromUnsignedLongLong((unsigned long long)f->model_backward);
    items[2] = Py_NewRef(f->approximate ? Py_True : Py_False);
    items[3] = PyUnicode_FromString(mfu_dtype_name(f->dtype));
    items[4] = PyLong_FromLongLong((long long)f->model_self);
    items[5] = PyLong_FromUnsignedLongLong((unsigned long long)f->overcompute);
    items[6] = PyUnicode_FromString(mfu_op_site_name(f->site));
    items[7] = PyLong_FromUnsignedLongLong((unsigned long long)f->overcompute_backward);
    items[8] = PyLong_FromLongLong((long long)f->square_model);
    items[9] = Py_NewRef(f->mask_read ? Py_True : Py_False);
    items[10] = Py_NewRef(f->mask_tensor ? Py_True : Py_False);
    int failed = 0;
    for (Py_ssize_t i = 0; i < 11; i++) {
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
        (name = mfu_py_op_name_arg(name_obj, "name")) == NULL ||
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
    const char *name = mfu_py_op_name_arg(name_obj, "name");
    const mfu_formula *formula = NULL;
    int any_grad;
    if (name == NULL || mfu_py_flag_arg(any_grad_obj, "any_requires_grad", &any_grad) < 0 ||
        call_options(NULL, backward, grad, &call) < 0 ||
        dtype_arg(dtype, "input_dtype", &call.input_dtype) < 0 || tf32_arg(tf32, &call.tf32) < 0 ||
        site_options(node, hooks, recomputed, &call) < 0 ||
        mfu_py_formula_lookup(module, name, &formula) < 0)
        return NULL;
    if (formula == NULL)
        return PyErr_Format(PyExc_KeyError, "no registered flop formula for %s", name);
    mfu_op_flops flops;
    if (mfu_py_formula_count(formula, values, any_grad, &call, &flops) < 0)
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
     "The counted ops, one dict per row of the core's table (csrc/core/ops/op_table.c):\n"
     "name ('aten::mm'), kind ('mm', 'bmm', 'grouped_mm', 'convolution',\n"
     "'convolution_backward', 'attention', 'attention_backward'), layout\n"
     "('bhsd', 'bshd', 'thd'; None but for attention) and inputs: the\n"
     "arguments its count reads, (schema position, role, need) by position,\n"
     "need one of 'tensor', 'offsets', 'int', 'int_list', 'values'. Rows named\n"
     "'higher_order::...' read the flat argument list of core/ops/op_table.c."},
    {"op_count", (PyCFunction)(void (*)(void))py_op_count, METH_VARARGS | METH_KEYWORDS,
     "op_count(name, args, *, causal_attention='full', backward_phase=False, "
     "grad_enabled=True, tf32=0, node=None, saved_tensor_hooks=False, recomputed=False)"
     "\n--\n\n"
     "Count one call of the table's op `name` (mfu_op_count): returns\n"
     "(executed, model_backward, approximate, dtype), an OpFlops whose\n"
     "model_self, overcompute, site, overcompute_backward, square_model,\n"
     "mask_read and mask_tensor are read by name: dtype is the compute\n"
     "dtype's name (core/ops/ops.h). node ('unknown', 'builtin', 'custom',\n"
     "'checkpoint'), saved_tensor_hooks and recomputed describe a backward-\n"
     "phase call's autograd situation (ops.h: Sites). args[i] is schema argument i, as its role\n"
     "needs it (other positions are not read): a tensor is (shape,\n"
     "requires_grad[, values or None[, dtype name or None]]), values only\n"
     "read for 'offsets' (1-D) and 'values' (all, row-major); an int an int\n"
     "(bools as 0 / 1); an int list a sequence\n"
     "of ints; None for an absent argument. ValueError / OverflowError name\n"
     "the argument that could not be counted. tf32: the MFU_TF32_* bits\n"
     "(1 matmul and attention, 2 convolution) under which fp32 counts as tf32."},
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
    if (PyModule_AddFunctions(module, ops_methods) < 0)
        return -1;
    mfu_module_state *state = mfu_module_get_state(module);
    state->op_flops_type = PyStructSequence_NewType(&op_flops_desc); /* not a module attribute */
    return state->op_flops_type == NULL ? -1 : 0;
}
