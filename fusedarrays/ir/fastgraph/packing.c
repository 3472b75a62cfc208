/* GraphPacker: a lazy evaluation's launch arguments from its params (runtime/launch.py's
 * graph_packer, which builds one per launch record where this module is loaded, and writes the
 * same steps as Python source where it is not).
 *
 * pack(P, O) -> list: P the evaluated graph's params (a dict, node -> position, in order; or
 * a list, where a cut graph's temporaries follow them: runtime/program.py), O the output
 * buffers. The list holds, in order: each input operand's pointer (a leaf's buffer's
 * storage through the backend's operand_arg, or its address attribute plus the offset's bytes
 * where the backend names one: operand_at, or the first byte of the buffer the storage exports
 * plus the offset's bytes: through_buffer), each output's, the plan's other arguments (a call
 * made per launch, a constant, or constants spliced in), then each scalar parameter converted to
 * its kernel type. A scalar's conversion is kept per position and reused while the value is the
 * same object: a lazy expression's scalars are new nodes at every call but their values mostly
 * the same objects (Black-Scholes passes 40).
 */
/* The buffer protocol entered the limited API in 3.11 (its two functions and Py_buffer are the
 * same in every CPython since 3.3, 3.10's included): with 3.11's headers or later this file asks
 * for it, and a storage's address is read through it (BUFFERS); built with 3.10's, every pointer
 * is the backend's operand_arg. A NumPy array's ctypes.data costs ~1 us, its buffer ~0.05. */
#include <patchlevel.h>
#if PY_VERSION_HEX >= 0x030B0000
#define Py_LIMITED_API 0x030B0000
#define BUFFERS 1
#endif
#include "fastgraph.h"

typedef struct {
    Py_ssize_t position;
    PyObject *dtype, *offset;
    long long bytes;        /* offset times the item size: where oparg is an attribute */
} Operand;

typedef struct {
    Py_ssize_t position;
    PyObject *convert, *last, *converted;   /* the value seen last and its conversion */
} Scalar;

typedef struct {
    PyObject_HEAD
    Py_ssize_t nparams, ninputs, noutputs, nscalars;
    Operand *inputs, *outputs;
    Scalar *scalars;
    PyObject *middle;       /* tuple of (kind, a, b): ("call", fn, arg), ("const", v, None),
                               ("extend", values, None) */
    PyObject *oparg;        /* operand_arg(storage, dtype, offset), or the name of the storage's
                               address attribute: then storage.<name> + offset * itemsize here */
    int at_attribute;
    int through_buffer;     /* the storage's buffer's first byte, else oparg (a callable) */
    Py_ssize_t size;        /* the list's length */
} GraphPacker;

static void operands_clear(Operand *ops, Py_ssize_t n) {
    for (Py_ssize_t i = 0; ops != NULL && i < n; i++) {
        Py_CLEAR(ops[i].dtype);
        Py_CLEAR(ops[i].offset);
    }
}

static int packer_clear(GraphPacker *self) {
    operands_clear(self->inputs, self->ninputs);
    operands_clear(self->outputs, self->noutputs);
    for (Py_ssize_t i = 0; self->scalars != NULL && i < self->nscalars; i++) {
        Py_CLEAR(self->scalars[i].convert);
        Py_CLEAR(self->scalars[i].last);
        Py_CLEAR(self->scalars[i].converted);
    }
    Py_CLEAR(self->middle);
    Py_CLEAR(self->oparg);
    return 0;
}

static int packer_traverse(GraphPacker *self, visitproc visit, void *arg) {
    Py_VISIT(Py_TYPE(self));
    Py_VISIT(self->middle);
    Py_VISIT(self->oparg);
    for (Py_ssize_t i = 0; self->scalars != NULL && i < self->nscalars; i++) {
        Py_VISIT(self->scalars[i].convert);
        Py_VISIT(self->scalars[i].last);
        Py_VISIT(self->scalars[i].converted);
    }
    return 0;
}

static void packer_dealloc(GraphPacker *self) {
    PyTypeObject *tp = Py_TYPE(self);
    PyObject_GC_UnTrack(self);
    packer_clear(self);
    PyMem_Free(self->inputs);
    PyMem_Free(self->outputs);
    PyMem_Free(self->scalars);
    ((freefunc)PyType_GetSlot(tp, Py_tp_free))(self);
    Py_DECREF(tp);
}

/* (position, dtype, offset) triples into `ops` */
static int read_operands(PyObject *seq, Operand **ops, Py_ssize_t *n) {
    *n = PyTuple_Size(seq);
    if (*n < 0)
        return -1;
    *ops = PyMem_Calloc(*n ? *n : 1, sizeof(Operand));
    if (*ops == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t i = 0; i < *n; i++) {
        PyObject *dtype, *offset, *itemsize;
        if (!PyArg_ParseTuple(PyTuple_GetItem(seq, i), "nOO", &(*ops)[i].position, &dtype,
                              &offset))
            return -1;
        (*ops)[i].dtype = ref(dtype);
        (*ops)[i].offset = ref(offset);
        if ((itemsize = PyObject_GetAttrString(dtype, "itemsize")) == NULL)
            return -1;
        long long k = PyLong_AsLongLong(offset), size = PyLong_AsLongLong(itemsize);
        Py_DECREF(itemsize);
        if ((k == -1 || size == -1) && PyErr_Occurred())
            return -1;
        (*ops)[i].bytes = k * size;
    }
    return 0;
}

/* GraphPacker(nparams, inputs, outputs, middle, scalars, oparg, through_buffer=False) */
static PyObject *packer_new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
    PyObject *inputs, *outputs, *middle, *scalars, *oparg;
    Py_ssize_t nparams;
    int through_buffer = 0;
    if (!PyArg_ParseTuple(args, "nO!O!O!O!O|p:GraphPacker", &nparams, &PyTuple_Type, &inputs,
                          &PyTuple_Type, &outputs, &PyTuple_Type, &middle, &PyTuple_Type,
                          &scalars, &oparg, &through_buffer))
        return NULL;
    if (through_buffer && !PyCallable_Check(oparg)) {
        PyErr_SetString(PyExc_TypeError, "GraphPacker: through_buffer falls back to oparg, "
                        "which must be operand_arg (a callable)");
        return NULL;
    }
    GraphPacker *self = (GraphPacker *)((allocfunc)PyType_GetSlot(type, Py_tp_alloc))(type, 0);
    if (self == NULL)
        return NULL;
    self->nparams = nparams;
    self->middle = ref(middle);
    self->oparg = ref(oparg);
    self->at_attribute = PyUnicode_Check(oparg);
    self->through_buffer = through_buffer;
    if (read_operands(inputs, &self->inputs, &self->ninputs) < 0 ||
        read_operands(outputs, &self->outputs, &self->noutputs) < 0)
        goto fail;
    self->nscalars = PyTuple_Size(scalars);
    self->scalars = PyMem_Calloc(self->nscalars ? self->nscalars : 1, sizeof(Scalar));
    if (self->scalars == NULL) {
        PyErr_NoMemory();
        goto fail;
    }
    for (Py_ssize_t i = 0; i < self->nscalars; i++) {
        PyObject *convert;
        if (!PyArg_ParseTuple(PyTuple_GetItem(scalars, i), "nO", &self->scalars[i].position,
                              &convert))
            goto fail;
        self->scalars[i].convert = ref(convert);
    }
    self->size = self->ninputs + self->noutputs + self->nscalars;
    for (Py_ssize_t i = 0; i < PyTuple_Size(middle); i++) {
        PyObject *step = PyTuple_GetItem(middle, i), *kind;
        if (!PyTuple_Check(step) || PyTuple_Size(step) != 3) {
            PyErr_SetString(PyExc_TypeError, "GraphPacker: a middle step is (kind, a, b)");
            goto fail;
        }
        kind = PyTuple_GetItem(step, 0);
        if (PyUnicode_CompareWithASCIIString(kind, "extend") == 0)
            self->size += PyTuple_Size(PyTuple_GetItem(step, 1));
        else if (PyUnicode_CompareWithASCIIString(kind, "call") == 0 ||
                 PyUnicode_CompareWithASCIIString(kind, "const") == 0)
            self->size += 1;
        else {
            PyErr_Format(PyExc_ValueError, "GraphPacker: no middle step kind %R", kind);
            goto fail;
        }
    }
    for (Py_ssize_t i = 0; i < self->ninputs + self->nscalars; i++) {
        Py_ssize_t p = i < self->ninputs ? self->inputs[i].position
                                         : self->scalars[i - self->ninputs].position;
        if (p < 0 || p >= nparams) {
            PyErr_Format(PyExc_ValueError, "GraphPacker: position %zd of %zd params", p,
                         nparams);
            goto fail;
        }
    }
    return (PyObject *)self;
fail:
    Py_DECREF(self);
    return NULL;
}

/* a param's attrs (borrowed where it is a node; else a new reference: a temporary's slot) */
static PyObject *attrs_of(PyObject *param, int *owned) {
    *owned = !is_node(param);
    return *owned ? PyObject_GetAttrString(param, "attrs") : ((Node *)param)->attrs;
}

/* The address of the first byte of the one C-contiguous buffer `obj` exports, else 0 (no
 * error set: the caller asks the backend). The caller holds `obj` while the address is used. */
static long long first_byte(PyObject *obj) {
#ifdef BUFFERS
    Py_buffer view;
    if (PyObject_GetBuffer(obj, &view, PyBUF_SIMPLE) < 0) {
        PyErr_Clear();
        return 0;
    }
    long long at = (long long)(intptr_t)view.buf;
    PyBuffer_Release(&view);
    return at;
#else
    (void)obj;
    return 0;
#endif
}

/* buffer_address(obj): first_byte(obj), None where it is 0 (cpu/memory.address's fast path) */
PyObject *py_buffer_address(PyObject *module, PyObject *obj) {
    long long at = first_byte(obj);
    if (at == 0)
        Py_RETURN_NONE;
    return PyLong_FromLongLong(at);
}

/* oparg(storage of `buffer`, dtype, offset), storage.<oparg> + the offset's bytes, or the
 * storage's buffer's first byte + the offset's bytes */
static PyObject *pointer(GraphPacker *self, PyObject *buffer, Operand *o) {
    PyObject *storage = PyObject_GetAttr(buffer, s_storage), *arg;
    if (storage == NULL)
        return NULL;
    long long first = self->through_buffer ? first_byte(storage) : 0;
    if (first != 0) {
        arg = PyLong_FromLongLong(first + o->bytes);
    } else if (self->at_attribute) {
        PyObject *address = PyObject_GetAttr(storage, self->oparg);
        arg = NULL;
        if (address != NULL) {
            /* signed: a user-space address is below 2**63, and the signed conversion reads
               an int's digits directly (the unsigned one goes through a byte array) */
            long long at = PyLong_AsLongLong(address);
            if (!(at == -1 && PyErr_Occurred()))
                arg = PyLong_FromLongLong(at + o->bytes);
            Py_DECREF(address);
        }
    } else {
        arg = PyObject_CallFunctionObjArgs(self->oparg, storage, o->dtype, o->offset, NULL);
    }
    Py_DECREF(storage);
    return arg;
}

static PyObject *packer_call(GraphPacker *self, PyObject *args, PyObject *kwargs) {
    PyObject *P, *O, *k, *v, *out, **nodes;
    Py_ssize_t pos = 0, i = 0, at = 0;
    if (!PyArg_ParseTuple(args, "OO:pack", &P, &O))
        return NULL;
    int dict = PyDict_Check(P);
    Py_ssize_t have = dict ? PyDict_Size(P) : PyList_Check(P) ? PyList_Size(P) : -1;
    if (have < self->nparams) {
        if (!PyErr_Occurred())
            PyErr_Format(PyExc_ValueError, "pack: %zd params (a dict or list), the plan binds "
                         "%zd", have, self->nparams);
        return NULL;
    }
    nodes = PyMem_Malloc((self->nparams ? self->nparams : 1) * sizeof(PyObject *));
    if (nodes == NULL)
        return PyErr_NoMemory();
    if (dict)
        while (i < self->nparams && PyDict_Next(P, &pos, &k, &v))
            nodes[i++] = k;     /* borrowed: P holds them */
    else
        for (; i < self->nparams; i++)
            nodes[i] = PyList_GetItem(P, i);
    if ((out = PyList_New(self->size)) == NULL)
        goto fail;
    for (i = 0; i < self->ninputs; i++) {
        int owned;
        PyObject *attrs = attrs_of(nodes[self->inputs[i].position], &owned), *arg = NULL;
        if (attrs != NULL)
            arg = pointer(self, PyTuple_GetItem(attrs, 0), &self->inputs[i]);
        if (owned)
            Py_XDECREF(attrs);
        if (arg == NULL)
            goto fail;
        PyList_SetItem(out, at++, arg);
    }
    for (i = 0; i < self->noutputs; i++) {
        PyObject *buffer = PySequence_GetItem(O, i), *arg;
        if (buffer == NULL)
            goto fail;
        arg = pointer(self, buffer, &self->outputs[i]);
        Py_DECREF(buffer);
        if (arg == NULL)
            goto fail;
        PyList_SetItem(out, at++, arg);
    }
    for (i = 0; i < PyTuple_Size(self->middle); i++) {
        PyObject *step = PyTuple_GetItem(self->middle, i);
        PyObject *kind = PyTuple_GetItem(step, 0), *a = PyTuple_GetItem(step, 1);
        if (PyUnicode_CompareWithASCIIString(kind, "extend") == 0) {
            for (Py_ssize_t j = 0; j < PyTuple_Size(a); j++)
                PyList_SetItem(out, at++, ref(PyTuple_GetItem(a, j)));
        } else if (PyUnicode_CompareWithASCIIString(kind, "const") == 0) {
            PyList_SetItem(out, at++, ref(a));
        } else {
            PyObject *arg = PyObject_CallFunctionObjArgs(a, PyTuple_GetItem(step, 2), NULL);
            if (arg == NULL)
                goto fail;
            PyList_SetItem(out, at++, arg);
        }
    }
    for (i = 0; i < self->nscalars; i++) {
        Scalar *s = &self->scalars[i];
        int owned;
        PyObject *attrs = attrs_of(nodes[s->position], &owned);
        PyObject *value = attrs == NULL ? NULL : PyTuple_GetItem(attrs, 1);
        Py_XINCREF(value);
        if (owned)
            Py_XDECREF(attrs);
        if (value == NULL)
            goto fail;
        if (value != s->last) {
            PyObject *converted = PyObject_CallFunctionObjArgs(s->convert, value, NULL);
            if (converted == NULL) {
                Py_DECREF(value);
                goto fail;
            }
            set_ref(&s->last, ref(value));
            set_ref(&s->converted, converted);
        }
        Py_DECREF(value);
        PyList_SetItem(out, at++, ref(s->converted));
    }
    PyMem_Free(nodes);
    return out;
fail:
    PyMem_Free(nodes);
    Py_XDECREF(out);
    return NULL;
}

static PyType_Slot packer_slots[] = {
    {Py_tp_doc, "GraphPacker(nparams, inputs, outputs, middle, scalars, oparg, "
                "through_buffer=False): pack(P, O) -> a lazy evaluation's launch arguments "
                "after n (runtime/launch.graph_packer)."},
    {Py_tp_new, packer_new},
    {Py_tp_call, packer_call},
    {Py_tp_traverse, packer_traverse},
    {Py_tp_clear, packer_clear},
    {Py_tp_dealloc, packer_dealloc},
    {0, NULL},
};

PyType_Spec graph_packer_spec = {
    "fusedarrays.ir._fastgraph.GraphPacker", sizeof(GraphPacker), 0,
    Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC, packer_slots,
};
