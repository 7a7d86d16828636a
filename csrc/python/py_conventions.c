/*
 * py_conventions.c -- Python bindings of core/conventions.h: the presets of
 * other frameworks' MFU formulas and the count under a set of choices with
 * its itemized difference from ours.
 */
#include <string.h>

#include "../core/conventions.h"
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

static PyObject *py_conventions(PyObject *module, PyObject *unused)
{
    PyObject *list = PyList_New(0);
    (void)module;
    (void)unused;
    if (list == NULL)
        return NULL;
    for (size_t i = 0; i < mfu_convention_count(); i++) {
        const mfu_convention *c = mfu_convention_at(i);
        PyObject *choices = choices_dict(c->choice), *row;
        if (choices == NULL) {
            Py_DECREF(list);
            return NULL;
        }
        row = Py_BuildValue("{s:s,s:s,s:s,s:N}", "name", c->name, "source", c->source,
                            "covers", c->covers, "choices", choices);
        if (row == NULL || PyList_Append(list, row) < 0) {
            Py_XDECREF(row);
            Py_DECREF(list);
            return NULL;
        }
        Py_DECREF(row);
    }
    return list;
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

static PyObject *result_dict(const mfu_convention_flops *r)
{
    PyObject *delta = PyDict_New();
    if (delta == NULL)
        return NULL;
    for (int i = 0; i < MFU_CONVENTION_CHOICES; i++) {
        PyObject *v = PyFloat_FromDouble(r->delta[i]);
        if (v == NULL || PyDict_SetItemString(delta, mfu_convention_choice_name(i), v) < 0) {
            Py_XDECREF(v);
            Py_DECREF(delta);
            return NULL;
        }
        Py_DECREF(v);
    }
    return Py_BuildValue("{s:d,s:d,s:d,s:d,s:d,s:N}", "model_flops", r->model_flops,
                         "forward_flops", r->forward_flops, "attention_flops",
                         r->attention_flops, "vision_flops", r->vision_flops,
                         "ours_model_flops", r->ours_model_flops, "delta", delta);
}

static PyObject *py_convention_flops(PyObject *module, PyObject *args, PyObject *kwargs)
{
    static char *keywords[] = {"dims", "choices", "seq_lens", "batch_size", "seq_len",
                               "vision", "grids", NULL};
    PyObject *dims_obj, *choices_obj, *lens_obj = Py_None, *batch_obj = Py_None;
    PyObject *seq_len_obj = Py_None, *vision_obj = Py_None, *grids_obj = Py_None;
    PyObject *result = NULL;
    int choice[MFU_CONVENTION_CHOICES];
    mfu_py_count_inputs in;
    mfu_convention_flops out;
    const char *bad_field = NULL;
    mfu_status st;

    (void)module;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OO|$OOOOO:convention_flops", keywords,
                                     &dims_obj, &choices_obj, &lens_obj, &batch_obj,
                                     &seq_len_obj, &vision_obj, &grids_obj) ||
        parse_choices(choices_obj, choice) < 0 ||
        mfu_py_count_inputs_parse(dims_obj, lens_obj, batch_obj, seq_len_obj, vision_obj,
                                  grids_obj, &in) < 0)
        return NULL;
    st = mfu_convention_compute(&in.dims, &in.batch, &in.vision, choice, &out, &bad_field);
    if (st != MFU_OK)
        mfu_py_raise(st, bad_field != NULL ? bad_field : "dims", "%s",
                     bad_field == NULL ? "invalid"
                     : strcmp(bad_field, "num_linear_layers") == 0 ||
                             strcmp(bad_field, "num_ssm_layers") == 0
                         ? "no framework convention covers linear-attention or SSM layers"
                         : mfu_py_transformer_field_rule(bad_field));
    else
        result = result_dict(&out);
    mfu_py_count_inputs_free(&in);
    return result;
}

static PyMethodDef convention_methods[] = {
    {"conventions", (PyCFunction)py_conventions, METH_NOARGS,
     "conventions()\n--\n\n"
     "The presets of other frameworks' MFU formulas (core/conventions.c), ours\n"
     "first: [{name, source, covers, choices: {choice: value}}]."},
    {"convention_flops", (PyCFunction)(void (*)(void))py_convention_flops,
     METH_VARARGS | METH_KEYWORDS,
     "convention_flops(dims, choices, *, seq_lens=None, batch_size=None, seq_len=None, "
     "vision=None, grids=None)\n--\n\n"
     "The count under every choice of `choices` ({choice: value}, all eight) and\n"
     "its difference from ours, choice by choice: {model_flops, forward_flops,\n"
     "attention_flops, vision_flops, ours_model_flops, delta: {choice: FLOPs}}."},
    {NULL, NULL, 0, NULL},
};

int mfu_py_conventions_exec(PyObject *module)
{
    return PyModule_AddFunctions(module, convention_methods);
}
