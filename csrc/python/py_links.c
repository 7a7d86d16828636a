/*
 * py_links.c -- the link table (core/comm/links.h) and the communication
 * conventions (core/comm/comm.h) for Python: rows, lookups, the sysfs rate
 * parser, a rank's share of a node's ports, the kinds, their phases, bus
 * factors and the c10d operator table. Python never repeats a row or a
 * factor: mfu_tracker/distributed/_links.py and _comm_observer.py call
 * these.
 */
#include <limits.h>
#include <math.h>
#include <string.h>

#include "mfu_module.h"
#include "py_step_comm.h"

static const char *scope_name(mfu_link_scope scope)
{
    return scope == MFU_LINK_INTRA ? "intra" : "inter";
}

static PyObject *link_dict(const mfu_link *row)
{
    return Py_BuildValue("{sssssssssisdsdss}", "name", row->name, "scope",
                         scope_name(row->scope), "kind", mfu_link_kind_name(row->kind), "link",
                         row->link, "generation", row->generation, "rate_gbps", row->rate_gbps,
                         "bytes_per_sec", row->bytes_per_sec, "source", row->source);
}

static PyObject *py_link_table(PyObject *Py_UNUSED(module), PyObject *Py_UNUSED(ignored))
{
    size_t n = mfu_link_count();
    PyObject *rows = PyTuple_New((Py_ssize_t)n);
    for (size_t i = 0; rows != NULL && i < n; i++) {
        const mfu_link *row;
        PyObject *item;
        (void)mfu_link_get(i, &row);
        item = link_dict(row);
        if (item == NULL)
            Py_CLEAR(rows);
        else
            PyTuple_SET_ITEM(rows, (Py_ssize_t)i, item);
    }
    return rows;
}

/* A row, None for NOT_FOUND, ValueError naming `argument` otherwise
 * (`row` is read only after the lookup that sets it returned). */
static PyObject *row_or_none(mfu_status status, const mfu_link *const *row, const char *argument)
{
    if (status == MFU_OK)
        return link_dict(*row);
    if (status == MFU_ERR_NOT_FOUND)
        Py_RETURN_NONE;
    return mfu_py_raise(status, argument, NULL);
}

static PyObject *py_link_intra(PyObject *Py_UNUSED(module), PyObject *arg)
{
    const mfu_link *row = NULL;
    const char *name;
    if (mfu_py_str_arg(arg, "device_name", &name) < 0)
        return NULL;
    return row_or_none(mfu_link_intra(name, &row), &row, "device_name");
}

static PyObject *py_link_inter(PyObject *Py_UNUSED(module), PyObject *args)
{
    const mfu_link *row = NULL;
    PyObject *layer_obj, *rate_obj;
    const char *layer;
    double rate;
    if (!PyArg_ParseTuple(args, "OO:link_inter", &layer_obj, &rate_obj)
        || mfu_py_str_arg(layer_obj, "link_layer", &layer) < 0
        || mfu_py_real_arg(rate_obj, "rate_gbps", MFU_ARG_ANY_FINITE, 0.0, &rate) < 0)
        return NULL;
    return row_or_none(mfu_link_inter(layer, rate, &row), &row, "link_layer / rate_gbps");
}

static PyObject *py_link_parse_rate(PyObject *Py_UNUSED(module), PyObject *arg)
{
    const char *text;
    double rate = 0.0;
    if (mfu_py_str_arg(arg, "rate", &text) < 0)
        return NULL;
    if (mfu_link_parse_rate(text, strlen(text), &rate) != MFU_OK)
        return mfu_py_raise(MFU_ERR_INVALID_ARGUMENT, "rate",
                            "not a port rate such as '400 Gb/sec (4X NDR)': '%.60s'", text);
    return PyFloat_FromDouble(rate);
}

static PyObject *py_link_share(PyObject *Py_UNUSED(module), PyObject *args)
{
    PyObject *bytes_obj, *ports_obj, *ranks_obj;
    double bytes_per_sec;
    long long ports, ranks;
    if (!PyArg_ParseTuple(args, "OOO:link_share", &bytes_obj, &ports_obj, &ranks_obj)
        || mfu_py_real_arg(bytes_obj, "bytes_per_sec", MFU_ARG_ANY_FINITE, 0.0, &bytes_per_sec) < 0
        || mfu_py_int_arg(ports_obj, "ports", INT_MIN, INT_MAX, &ports) < 0
        || mfu_py_int_arg(ranks_obj, "ranks", INT_MIN, INT_MAX, &ranks) < 0)
        return NULL;
    return mfu_py_float_or_none(mfu_link_share(bytes_per_sec, (int)ports, (int)ranks));
}

/* ---- the communication conventions --------------------------------------- */

static PyObject *py_comm_kinds(PyObject *Py_UNUSED(module), PyObject *Py_UNUSED(ignored))
{
    PyObject *names = PyTuple_New(MFU_COMM_KIND_COUNT);
    for (int k = 0; names != NULL && k < MFU_COMM_KIND_COUNT; k++) {
        PyObject *name = PyUnicode_FromString(mfu_comm_kind_name((mfu_comm_kind)k));
        if (name == NULL)
            Py_CLEAR(names);
        else
            PyTuple_SET_ITEM(names, k, name);
    }
    return names;
}

static PyObject *py_phase_names(PyObject *Py_UNUSED(module), PyObject *Py_UNUSED(ignored))
{
    PyObject *names = PyTuple_New(MFU_PHASE_COUNT);
    for (int p = 0; names != NULL && p < MFU_PHASE_COUNT; p++) {
        PyObject *name = PyUnicode_FromString(mfu_phase_name((mfu_phase)p));
        if (name == NULL)
            Py_CLEAR(names);
        else
            PyTuple_SET_ITEM(names, p, name);
    }
    return names;
}

/* A kind argument by name; -1 with ValueError. */
static int kind_arg(PyObject *arg, mfu_comm_kind *kind)
{
    const char *name;
    if (mfu_py_str_arg(arg, "kind", &name) < 0)
        return -1;
    if (mfu_comm_kind_from_name(name, kind) != MFU_OK) {
        mfu_py_raise(MFU_ERR_INVALID_ARGUMENT, "kind", "unknown kind '%.40s'", name);
        return -1;
    }
    return 0;
}

static PyObject *py_comm_kind_phase(PyObject *Py_UNUSED(module), PyObject *arg)
{
    mfu_comm_kind kind;
    if (kind_arg(arg, &kind) < 0)
        return NULL;
    return PyLong_FromLong((long)mfu_comm_kind_phase(kind));
}

static PyObject *py_comm_op_type_kind(PyObject *Py_UNUSED(module), PyObject *arg)
{
    mfu_comm_kind kind;
    const char *name;
    if (mfu_py_str_arg(arg, "op_type", &name) < 0)
        return NULL;
    if (mfu_comm_op_type_kind(name, &kind) != MFU_OK)
        Py_RETURN_NONE;
    return PyUnicode_FromString(mfu_comm_kind_name(kind));
}

static PyObject *py_comm_busbw_factor(PyObject *Py_UNUSED(module), PyObject *args)
{
    PyObject *kind_obj, *size_obj;
    long long group_size;
    mfu_comm_kind kind;
    double factor;
    mfu_status status;
    if (!PyArg_ParseTuple(args, "OO:comm_busbw_factor", &kind_obj, &size_obj)
        || kind_arg(kind_obj, &kind) < 0
        || mfu_py_int_arg(size_obj, "group_size", LLONG_MIN, LLONG_MAX, &group_size) < 0)
        return NULL;
    status = mfu_comm_busbw_factor(kind, group_size, &factor);
    if (status == MFU_ERR_NOT_FOUND)
        Py_RETURN_NONE;
    if (status != MFU_OK)
        return mfu_py_raise(status, "group_size", "must be >= 1, got %lld", group_size);
    return PyFloat_FromDouble(factor);
}

static PyObject *py_comm_op_table(PyObject *Py_UNUSED(module), PyObject *Py_UNUSED(ignored))
{
    size_t n = mfu_comm_op_count();
    PyObject *rows = PyTuple_New((Py_ssize_t)n);
    for (size_t i = 0; rows != NULL && i < n; i++) {
        const mfu_comm_op *op = mfu_comm_op_get(i);
        PyObject *item = Py_BuildValue("{sssssisisi}", "name", op->name, "kind",
                                       mfu_comm_kind_name(op->kind), "payload_arg",
                                       op->payload_arg, "result_arg", op->result_arg,
                                       "group_arg", op->group_arg);
        if (item == NULL)
            Py_CLEAR(rows);
        else
            PyTuple_SET_ITEM(rows, (Py_ssize_t)i, item);
    }
    return rows;
}

static PyMethodDef links_methods[] = {
    {"link_table", py_link_table, METH_NOARGS,
     "link_table()\n--\n\nEvery row of the link table (core/comm/link_table.c), as dicts."},
    {"link_intra", py_link_intra, METH_O,
     "link_intra(device_name, /)\n--\n\nThe intra-node link of a peak-table device, or None."},
    {"link_inter", py_link_inter, METH_VARARGS,
     "link_inter(link_layer, rate_gbps, /)\n--\n\nThe network row of a port, or None."},
    {"link_parse_rate", py_link_parse_rate, METH_O,
     "link_parse_rate(text, /)\n--\n\nGb/s of a sysfs port rate ('400 Gb/sec (4X NDR)')."},
    {"link_share", py_link_share, METH_VARARGS,
     "link_share(bytes_per_sec, ports, ranks, /)\n--\n\nports x bytes_per_sec / ranks, or None."},
    {"comm_kinds", py_comm_kinds, METH_NOARGS,
     "comm_kinds()\n--\n\nThe collective kinds, in core order."},
    {"phase_names", py_phase_names, METH_NOARGS,
     "phase_names()\n--\n\nEvery phase of the step engine, in core order."},
    {"comm_kind_phase", py_comm_kind_phase, METH_O,
     "comm_kind_phase(kind, /)\n--\n\nThe index (in phase_names()) of a kind's exposed phase."},
    {"comm_op_type_kind", py_comm_op_type_kind, METH_O,
     "comm_op_type_kind(op_type, /)\n--\n\nThe kind of a Work's OpType name, or None."},
    {"comm_busbw_factor", py_comm_busbw_factor, METH_VARARGS,
     "comm_busbw_factor(kind, group_size, /)\n--\n\nnccl-tests' bus factor, or None ('other')."},
    {"comm_op_table", py_comm_op_table, METH_NOARGS,
     "comm_op_table()\n--\n\nThe c10d operators the observer counts, as dicts."},
    {NULL, NULL, 0, NULL},
};

int mfu_py_links_exec(PyObject *module)
{
    return PyModule_AddFunctions(module, links_methods);
}
