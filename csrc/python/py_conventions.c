/*
 * py_conventions.c -- Python bindings of core/model/conventions.h: the presets of
 * other frameworks' MFU formulas, their rules by model type and quirks, and
 * the count under a set of choices and quirks with its itemized difference
 * from ours.
 */
#include <string.h>

#include "../core/model/conventions.h"
#include "py_transformer.h"

/* {choice: value} of one preset. */
static PyObject *choices_dict(const int *choice)
{
    PyObject *d = PyDict_New();
    if (d == NULL)
        return NULL;
    for (int i = 0; i < MFU_CONVENTION_CHOICES; i++) {
        PyObject *v = PyUnicode_FromString(mfu_convention_value_name(i, choice[i]));
        if (v == NULL || PyDict_SetItemString(d, mfu_convention_choice_name(i), v) < 0) {
            Py_XDECREF(v);
            Py_DECREF(d);
            return NULL;
        }
        Py_DECREF(v);
    }
    return d;
}

/* The names of the quirks of `bits`, in order. */
static PyObject *quirk_tuple(unsigned bits)
{
    PyObject *names = PyList_New(0), *out;
    if (names == NULL)
        return NULL;
    for (int q = 0; q < MFU_CONVENTION_QUIRKS; q++) {
        PyObject *name;
        if (!((bits >> q) & 1u))
            continue;
        name = PyUnicode_FromString(mfu_convention_quirk_name(q));
        if (name == NULL || PyList_Append(names, name) < 0) {
            Py_XDECREF(name);
            Py_DECREF(names);
            return NULL;
        }
        Py_DECREF(name);
    }
    out = PyList_AsTuple(names);
    Py_DECREF(names);
    return out;
}

/* {quirk name: its line} of a rule's quirks. */
static PyObject *quirk_lines(const mfu_convention_rule *r)
{
    PyObject *d = PyDict_New();
    for (int q = 0; d != NULL && q < MFU_CONVENTION_QUIRKS; q++) {
        PyObject *line;
        if (r->quirk_line[q] <= 0)
            continue;
        line = PyLong_FromLong(r->quirk_line[q]);
        if (line == NULL || PyDict_SetItemString(d, mfu_convention_quirk_name(q), line) < 0)
            Py_CLEAR(d);
        Py_XDECREF(line);
    }
    return d;
}

/* The space-separated model types of a rule as a tuple (None: catch-all). */
static PyObject *model_types(const mfu_convention_rule *r)
{
    PyObject *text, *list, *out;
    if (r->model_types == NULL)
        Py_RETURN_NONE;
    if ((text = PyUnicode_FromString(r->model_types)) == NULL)
        return NULL;
    list = PyUnicode_Split(text, NULL, -1);
    Py_DECREF(text);
    if (list == NULL)
        return NULL;
    out = PyList_AsTuple(list);
    Py_DECREF(list);
    return out;
}

/* {model_types, function, line, windows, windows_line, quirks, quirk_lines,
 * refused} of one rule. */
static PyObject *rule_dict(const mfu_convention_rule *r)
{
    PyObject *types = model_types(r), *quirks = quirk_tuple(mfu_convention_rule_quirks(r));
    PyObject *lines = quirk_lines(r);
    if (types == NULL || quirks == NULL || lines == NULL) {
        Py_XDECREF(types);
        Py_XDECREF(quirks);
        Py_XDECREF(lines);
        return NULL;
    }
    return Py_BuildValue("{s:N,s:s,s:i,s:z,s:i,s:N,s:N,s:z}", "model_types", types, "function",
                         r->function, "line", r->line, "windows",
                         r->windows < 0
                             ? NULL
                             : mfu_convention_value_name(MFU_CHOICE_WINDOWS, r->windows),
                         "windows_line", r->windows_line, "quirks", quirks, "quirk_lines",
                         lines, "refused", r->refused);
}

static PyObject *rules_list(const mfu_convention *c)
{
    PyObject *list = PyList_New(0);
    for (size_t i = 0; list != NULL && i < c->num_rules; i++) {
        PyObject *rule = rule_dict(&c->rules[i]);
        if (rule == NULL || PyList_Append(list, rule) < 0)
            Py_CLEAR(list);
        Py_XDECREF(rule);
    }
    return list;
}

static PyObject *py_conventions(PyObject *module, PyObject *unused)
{
    PyObject *list = PyList_New(0);
    (void)module;
    (void)unused;
    if (list == NULL)
        return NULL;
    for (size_t i = 0; i < mfu_convention_count(); i++) {
        const mfu_convention *c = mfu_convention_at(i);
        PyObject *choices = choices_dict(c->choice), *rules = rules_list(c), *row;
        if (choices == NULL || rules == NULL) {
            Py_XDECREF(choices);
            Py_XDECREF(rules);
            Py_DECREF(list);
            return NULL;
        }
        row = Py_BuildValue("{s:s,s:s,s:s,s:s,s:N,s:N}", "name", c->name, "framework",
                            c->framework, "source", c->source, "covers", c->covers, "choices",
                            choices, "rules", rules);
        if (row == NULL || PyList_Append(list, row) < 0) {
            Py_XDECREF(row);
            Py_DECREF(list);
            return NULL;
        }
        Py_DECREF(row);
    }
    return list;
}

static PyObject *py_convention_rule(PyObject *module, PyObject *args)
{
    const char *name, *model_type;
    const mfu_convention *c;
    (void)module;
    if (!PyArg_ParseTuple(args, "ss:convention_rule", &name, &model_type))
        return NULL;
    if ((c = mfu_convention_find(name)) == NULL)
        return mfu_py_raise(MFU_ERR_INVALID_ARGUMENT, "convention", "no preset named %s", name);
    return rule_dict(mfu_convention_rule_for(c, model_type));
}

static PyObject *py_convention_quirks(PyObject *module, PyObject *unused)
{
    PyObject *list = PyList_New(0), *out;
    (void)module;
    (void)unused;
    for (int q = 0; list != NULL && q < MFU_CONVENTION_QUIRKS; q++) {
        PyObject *row = Py_BuildValue("{s:s,s:s}", "name", mfu_convention_quirk_name(q), "text",
                                      mfu_convention_quirk_text(q));
        if (row == NULL || PyList_Append(list, row) < 0)
            Py_CLEAR(list);
        Py_XDECREF(row);
    }
    if (list == NULL)
        return NULL;
    out = PyList_AsTuple(list);
    Py_DECREF(list);
    return out;
}

/* {choice: value name} -> value indices; every choice must be given. */
static int parse_choices(PyObject *obj, int *choice)
{
    if (!PyDict_Check(obj)) {
        PyErr_Format(PyExc_TypeError, "choices must be a dict, not %.100s",
                     Py_TYPE(obj)->tp_name);
        return -1;
    }
    for (int i = 0; i < MFU_CONVENTION_CHOICES; i++) {
        const char *name = mfu_convention_choice_name(i), *text;
        PyObject *value = PyDict_GetItemString(obj, name);
        choice[i] = -1;
        if (value == NULL) {
            PyErr_Format(PyExc_TypeError, "choices: missing %s", name);
            return -1;
        }
        if (mfu_py_str_arg(value, name, &text) < 0)
            return -1;
        for (int v = 0; mfu_convention_value_name(i, v) != NULL; v++)
            if (strcmp(mfu_convention_value_name(i, v), text) == 0)
                choice[i] = v;
        if (choice[i] < 0) {
            PyErr_Format(PyExc_ValueError, "choices: %s %R is not one of its values", name,
                         value);
            return -1;
        }
    }
    return 0;
}

/* A sequence of quirk names -> bits. */
static int parse_quirks(PyObject *obj, unsigned *bits)
{
    PyObject *seq = PySequence_Fast(obj, "quirks must be a sequence of quirk names");
    *bits = 0u;
    if (seq == NULL)
        return -1;
    for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(seq); i++) {
        PyObject *item = PySequence_Fast_GET_ITEM(seq, i);
        const char *text;
        int found = -1;
        if (mfu_py_str_arg(item, "quirks", &text) < 0) {
            Py_DECREF(seq);
            return -1;
        }
        for (int q = 0; q < MFU_CONVENTION_QUIRKS; q++)
            if (strcmp(mfu_convention_quirk_name(q), text) == 0)
                found = q;
        if (found < 0) {
            PyErr_Format(PyExc_ValueError, "quirks: %R is not a quirk", item);
            Py_DECREF(seq);
            return -1;
        }
        *bits |= 1u << found;
    }
    Py_DECREF(seq);
    return 0;
}

/* {choice or quirk name: FLOPs}; quirks only when turned on. */
static PyObject *deltas_dict(const mfu_convention_flops *r, unsigned bits, int quirks)
{
    PyObject *d = PyDict_New();
    const int n = quirks ? MFU_CONVENTION_QUIRKS : MFU_CONVENTION_CHOICES;
    for (int i = 0; d != NULL && i < n; i++) {
        PyObject *v;
        if (quirks && !((bits >> i) & 1u))
            continue;
        v = PyFloat_FromDouble(quirks ? r->quirk_delta[i] : r->delta[i]);
        if (v == NULL || PyDict_SetItemString(d, quirks ? mfu_convention_quirk_name(i)
                                                        : mfu_convention_choice_name(i),
                                              v) < 0)
            Py_CLEAR(d);
        Py_XDECREF(v);
    }
    return d;
}

static PyObject *result_dict(const mfu_convention_flops *r, unsigned bits)
{
    PyObject *delta = deltas_dict(r, bits, 0), *quirk_delta;
    if (delta == NULL)
        return NULL;
    if ((quirk_delta = deltas_dict(r, bits, 1)) == NULL) {
        Py_DECREF(delta);
        return NULL;
    }
    return Py_BuildValue("{s:d,s:d,s:d,s:d,s:d,s:N,s:N}", "model_flops", r->model_flops,
                         "forward_flops", r->forward_flops, "attention_flops",
                         r->attention_flops, "vision_flops", r->vision_flops,
                         "ours_model_flops", r->ours_model_flops, "delta", delta,
                         "quirk_delta", quirk_delta);
}

static PyObject *raise_bad(mfu_status st, const char *bad_field)
{
    if (bad_field == NULL)
        return mfu_py_raise(st, "dims", "%s", "invalid");
    if (strcmp(bad_field, "num_linear_layers") == 0 || strcmp(bad_field, "num_ssm_layers") == 0)
        return mfu_py_raise(st, bad_field, "%s",
                            "no framework convention covers linear-attention or SSM layers");
    if (strcmp(bad_field, "quirks") == 0)
        return mfu_py_raise(st, bad_field, "%s", "vocab_multiple must be >= 1");
    return mfu_py_raise(st, bad_field, "%s", mfu_py_transformer_field_rule(bad_field));
}

static PyObject *py_convention_flops(PyObject *module, PyObject *args, PyObject *kwargs)
{
    static char *keywords[] = {"dims", "choices", "quirks", "vocab_multiple", "seq_lens",
                               "batch_size", "seq_len", "vision", "grids", NULL};
    PyObject *dims_obj, *choices_obj, *quirks_obj = NULL, *lens_obj = Py_None;
    PyObject *batch_obj = Py_None, *seq_len_obj = Py_None, *vision_obj = Py_None;
    PyObject *grids_obj = Py_None, *result = NULL;
    long long vocab_multiple = 1;
    int choice[MFU_CONVENTION_CHOICES];
    mfu_convention_quirks quirks = {0u, 1};
    mfu_py_count_inputs in;
    mfu_convention_flops out;
    const char *bad_field = NULL;
    mfu_status st;

    (void)module;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OO|$OLOOOOO:convention_flops", keywords,
                                     &dims_obj, &choices_obj, &quirks_obj, &vocab_multiple,
                                     &lens_obj, &batch_obj, &seq_len_obj, &vision_obj,
                                     &grids_obj) ||
        parse_choices(choices_obj, choice) < 0 ||
        (quirks_obj != NULL && parse_quirks(quirks_obj, &quirks.bits) < 0) ||
        mfu_py_count_inputs_parse(dims_obj, lens_obj, batch_obj, seq_len_obj, vision_obj,
                                  grids_obj, &in) < 0)
        return NULL;
    quirks.vocab_multiple = (int64_t)vocab_multiple;
    st = mfu_convention_compute(&in.dims, &in.batch, &in.vision, choice, &quirks, &out,
                                &bad_field);
    if (st != MFU_OK)
        raise_bad(st, bad_field);
    else
        result = result_dict(&out, quirks.bits);
    mfu_py_count_inputs_free(&in);
    return result;
}

static PyMethodDef convention_methods[] = {
    {"conventions", (PyCFunction)py_conventions, METH_NOARGS,
     "conventions()\n--\n\n"
     "The presets of other frameworks' MFU formulas (core/model/conventions_presets.c),\n"
     "ours first: [{name, framework, source, covers, choices: {choice: value},\n"
     "rules: [convention_rule()'s dicts]}]."},
    {"convention_rule", (PyCFunction)py_convention_rule, METH_VARARGS,
     "convention_rule(name, model_type, /)\n--\n\n"
     "The rule preset `name` applies to `model_type`: {model_types (None: the\n"
     "catch-all), function, line, windows (None: the preset's), windows_line,\n"
     "quirks, quirk_lines: {quirk: line}, refused (None, or why the framework\n"
     "has no count of it)}; lines in the preset's source at its commit."},
    {"convention_quirks", (PyCFunction)py_convention_quirks, METH_NOARGS,
     "convention_quirks()\n--\n\n"
     "Every quirk, in the order the itemization turns them on: ({name, text}, ...)."},
    {"convention_flops", (PyCFunction)(void (*)(void))py_convention_flops,
     METH_VARARGS | METH_KEYWORDS,
     "convention_flops(dims, choices, *, quirks=(), vocab_multiple=1, seq_lens=None, "
     "batch_size=None, seq_len=None, vision=None, grids=None)\n--\n\n"
     "The count under every choice of `choices` ({choice: value}, all eight) and\n"
     "the quirks named (the padded_vocab quirk pads to vocab_multiple), with its\n"
     "difference from ours item by item: {model_flops, forward_flops,\n"
     "attention_flops, vision_flops, ours_model_flops, delta: {choice: FLOPs},\n"
     "quirk_delta: {quirk: FLOPs}}."},
    {NULL, NULL, 0, NULL},
};

int mfu_py_conventions_exec(PyObject *module)
{
    return PyModule_AddFunctions(module, convention_methods);
}
