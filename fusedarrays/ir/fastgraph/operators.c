/* Operators: one op-table row's loops as the Python path resolved them (Operator), and the
 * array type's number and comparison slots that apply them (ArrayBase): ``a * b``,
 * ``x * 1.5``, ``1.0 - x`` and ``-x`` on arrays and Python floats or ints are built here;
 * anything else calls the row's Python path (api/elementwise.apply), which resolves the loop
 * and tells the Operator (remember) so that the next such call is built here.
 */
#include "fastgraph.h"

enum { RIGHT_FLOAT, RIGHT_INT, LEFT_FLOAT, LEFT_INT, NKINDS };
#define CAPACITY 32

/* One resolved loop, found by the operands' dtype objects (a Python scalar's by its position
   and type: the Operator's table it sits in) */
typedef struct {
    PyObject *a, *b;          /* the arrays' dtypes (b NULL: a unary or a scalar entry) */
    PyObject *attrs, *aid;    /* the node's (name, loop) and its attrs_id */
    PyObject *sdtype, *ssid;  /* a scalar entry's: the scalar's dtype and sid */
    int check;                /* a Python int checked to fit it (dtypes.check_scalar_fits) */
} Entry;

typedef struct {
    PyObject_HEAD
    PyObject *name, *fallback, *check;
    int nin;
    Entry pairs[CAPACITY];
    int npairs;
    Entry scalars[NKINDS][CAPACITY];
    int nscalars[NKINDS];
} Operator;

static void entry_clear(Entry *e) {
    Py_CLEAR(e->a); Py_CLEAR(e->b); Py_CLEAR(e->attrs); Py_CLEAR(e->aid); Py_CLEAR(e->sdtype);
    Py_CLEAR(e->ssid);
}

static int operator_traverse(Operator *self, visitproc visit, void *arg) {
    Py_VISIT(Py_TYPE(self));
    Py_VISIT(self->name); Py_VISIT(self->fallback); Py_VISIT(self->check);
    return 0;
}

static int operator_clear(Operator *self) {
    Py_CLEAR(self->name); Py_CLEAR(self->fallback); Py_CLEAR(self->check);
    for (int i = 0; i < self->npairs; i++)
        entry_clear(&self->pairs[i]);
    self->npairs = 0;
    for (int k = 0; k < NKINDS; k++) {
        for (int i = 0; i < self->nscalars[k]; i++)
            entry_clear(&self->scalars[k][i]);
        self->nscalars[k] = 0;
    }
    return 0;
}

static void operator_dealloc(Operator *self) {
    PyTypeObject *tp = Py_TYPE(self);
    PyObject_GC_UnTrack(self);
    operator_clear(self);
    ((freefunc)PyType_GetSlot(tp, Py_tp_free))(self);
    Py_DECREF(tp);
}

/* Operator(name, nin, fallback, check): `fallback(*operands)` is the Python path (it resolves
   the loop and remembers it here); `check(value, dtype, name)` is dtypes.check_scalar_fits */
static PyObject *operator_new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
    PyObject *name, *fallback, *check;
    int nin;
    if (!PyArg_ParseTuple(args, "UiOO:Operator", &name, &nin, &fallback, &check))
        return NULL;
    Operator *self = (Operator *)((allocfunc)PyType_GetSlot(type, Py_tp_alloc))(type, 0);
    if (self == NULL)
        return NULL;
    self->name = ref(name);
    self->nin = nin;
    self->fallback = ref(fallback);
    self->check = ref(check);
    return (PyObject *)self;
}

static inline Entry *find_pair(Operator *op, PyObject *a, PyObject *b) {
    for (int i = 0; i < op->npairs; i++)
        if (op->pairs[i].a == a && op->pairs[i].b == b)
            return &op->pairs[i];
    return NULL;
}

static inline Entry *find_scalar(Operator *op, int kind, PyObject *a) {
    Entry *entries = op->scalars[kind];
    for (int i = 0; i < op->nscalars[kind]; i++)
        if (entries[i].a == a)
            return &entries[i];
    return NULL;
}

/* remember(kind, a, b, attrs, aid, sdtype, ssid, check): kind -1 a pair or unary loop (b None
   for unary), else a scalar's position and type (RIGHT_FLOAT ...) */
static PyObject *operator_remember(Operator *self, PyObject *args) {
    int kind, check;
    PyObject *a, *b, *attrs, *aid, *sdtype, *ssid;
    if (!PyArg_ParseTuple(args, "iOOOOOOp:remember", &kind, &a, &b, &attrs, &aid, &sdtype,
                          &ssid, &check))
        return NULL;
    if (kind < -1 || kind >= NKINDS) {
        PyErr_Format(PyExc_ValueError, "remember: kind %d is no entry kind", kind);
        return NULL;
    }
    Entry *e;
    if (kind == -1) {
        if (find_pair(self, a, b == Py_None ? NULL : b) != NULL || self->npairs == CAPACITY)
            Py_RETURN_NONE;
        e = &self->pairs[self->npairs++];
    } else {
        if (find_scalar(self, kind, a) != NULL || self->nscalars[kind] == CAPACITY)
            Py_RETURN_NONE;
        e = &self->scalars[kind][self->nscalars[kind]++];
    }
    e->a = ref(a);
    e->b = b == Py_None ? NULL : ref(b);
    e->attrs = ref(attrs);
    e->aid = ref(aid);
    e->sdtype = ref(sdtype);
    e->ssid = ref(ssid);
    e->check = check;
    Py_RETURN_NONE;
}

static PyObject *call_fallback(Operator *op, PyObject *a, PyObject *b) {
    return b == NULL ? PyObject_CallFunctionObjArgs(op->fallback, a, NULL)
                     : PyObject_CallFunctionObjArgs(op->fallback, a, b, NULL);
}

/* the scalar node's value checked to fit its dtype where it is a Python int (NEP 50) */
static int checked(Operator *op, Entry *e, PyObject *value) {
    if (!e->check)
        return 0;
    PyObject *r = PyObject_CallFunctionObjArgs(op->check, value, e->sdtype, op->name, NULL);
    if (r == NULL)
        return -1;
    Py_DECREF(r);
    return 0;
}

/* `array <op> value` (first: `value <op> array`) for a Python float or int `value`: 1 with
   *out the result (NULL on an error) where the loop was resolved before, else 0 */
static int with_scalar(Operator *op, Array *array, PyObject *value, int first, PyObject **out) {
    int is_float = Py_TYPE(value) == &PyFloat_Type;
    int kind = first ? (is_float ? LEFT_FLOAT : LEFT_INT) : (is_float ? RIGHT_FLOAT : RIGHT_INT);
    Entry *e = find_scalar(op, kind, ((Node *)array->node)->dtype);
    if (e == NULL)
        return 0;
    *out = checked(op, e, value) < 0
               ? NULL
               : wrap(op_scalar(resolved(array), value, e->sdtype, e->ssid, e->attrs, e->aid,
                                first));
    return 1;
}

static inline int is_array(PyObject *o) {
    return Py_TYPE(o) == ArrayType && ((Array *)o)->node != NULL;
}

static inline int is_number(PyObject *o) {
    return Py_TYPE(o) == &PyFloat_Type || Py_TYPE(o) == &PyLong_Type;
}

/* `a <op> b`: the operator path (elementwise._binary_method), written here */
static PyObject *binary(Operator *op, PyObject *a, PyObject *b) {
    PyObject *out;
    if (op == NULL)
        Py_RETURN_NOTIMPLEMENTED;
    if (is_array(a)) {
        if (is_array(b)) {
            Entry *e = find_pair(op, ((Node *)((Array *)a)->node)->dtype,
                                 ((Node *)((Array *)b)->node)->dtype);
            if (e != NULL) {
                Node *na = resolved((Array *)a), *nb = resolved((Array *)b);
                return wrap(op_of2(na, nb, e->attrs, e->aid));
            }
        } else if (is_number(b) && with_scalar(op, (Array *)a, b, 0, &out)) {
            return out;
        }
    } else if (is_array(b) && is_number(a) && with_scalar(op, (Array *)b, a, 1, &out)) {
        return out;
    }
    return call_fallback(op, a, b);
}

static PyObject *unary(Operator *op, PyObject *a) {
    if (op == NULL)
        Py_RETURN_NOTIMPLEMENTED;
    if (is_array(a)) {
        Entry *e = find_pair(op, ((Node *)((Array *)a)->node)->dtype, NULL);
        if (e != NULL)
            return wrap(op_of1(resolved((Array *)a), e->attrs, e->aid));
    }
    return call_fallback(op, a, NULL);
}

static PyObject *operator_call(Operator *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != self->nin || nargs < 1 || nargs > 2) {
        PyErr_Format(PyExc_TypeError, "%U takes %d operand(s), got %zd", self->name, self->nin,
                     nargs);
        return NULL;
    }
    return nargs == 1 ? unary(self, args[0]) : binary(self, args[0], args[1]);
}

static PyObject *operator_apply(Operator *self, PyObject *args) {
    Py_ssize_t n = PyTuple_Size(args);
    PyObject *items[2];
    for (Py_ssize_t i = 0; i < n && i < 2; i++)
        items[i] = PyTuple_GetItem(args, i);
    return operator_call(self, items, n);
}

static PyMethodDef operator_methods[] = {
    {"remember", (PyCFunction)operator_remember, METH_VARARGS,
     "Keep a loop the Python path resolved, so that the next such call is built here."},
    {"apply", (PyCFunction)operator_apply, METH_VARARGS,
     "apply(*operands): the op on arrays and Python scalars, the fallback where not known."},
    {NULL, NULL, 0, NULL},
};

static PyObject *operator_tp_call(Operator *self, PyObject *args, PyObject *kwargs) {
    if (kwargs != NULL && PyDict_Size(kwargs) > 0) {
        PyErr_Format(PyExc_TypeError, "%U takes no keyword arguments here", self->name);
        return NULL;
    }
    return operator_apply(self, args);
}

static PyType_Slot operator_slots[] = {
    {Py_tp_doc, "One op-table row's operator path: loops the Python path resolved, kept by "
                "dtype object."},
    {Py_tp_new, operator_new},
    {Py_tp_call, operator_tp_call},
    {Py_tp_methods, operator_methods},
    {Py_tp_traverse, operator_traverse},
    {Py_tp_clear, operator_clear},
    {Py_tp_dealloc, operator_dealloc},
    {0, NULL},
};

PyType_Spec operator_spec = {
    "fusedarrays.ir._fastgraph.Operator", sizeof(Operator), 0,
    Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC, operator_slots,
};

/* ---- the array type's number and comparison slots ---------------------------------------- */

enum {
    SLOT_ADD, SLOT_SUB, SLOT_MUL, SLOT_TRUEDIV, SLOT_FLOORDIV, SLOT_MOD, SLOT_AND, SLOT_OR,
    SLOT_XOR, SLOT_LSHIFT, SLOT_RSHIFT, SLOT_NEG, SLOT_POS, SLOT_ABS, SLOT_INVERT, SLOT_EQ,
    SLOT_NE, SLOT_LT, SLOT_LE, SLOT_GT, SLOT_GE, NSLOTS
};
const char *slot_names[NSLOTS] = {
    "__add__", "__sub__", "__mul__", "__truediv__", "__floordiv__", "__mod__", "__and__",
    "__or__", "__xor__", "__lshift__", "__rshift__", "__neg__", "__pos__", "__abs__",
    "__invert__", "__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__",
};
static Operator *slot_ops[NSLOTS];
int nslots = NSLOTS;

/* the Operator behind slot `slot` (a new reference to it is kept; NULL: none) */
int install_slot(int slot, PyObject *op) {
    if (slot < 0 || slot >= NSLOTS) {
        PyErr_Format(PyExc_IndexError, "no operator slot %d", slot);
        return -1;
    }
    Py_XINCREF(op);
    set_ref((PyObject **)&slot_ops[slot], op);
    return 0;
}

#define BINARY_SLOT(fn, slot) \
    static PyObject *fn(PyObject *a, PyObject *b) { return binary(slot_ops[slot], a, b); }
#define UNARY_SLOT(fn, slot) \
    static PyObject *fn(PyObject *a) { return unary(slot_ops[slot], a); }
BINARY_SLOT(nb_add, SLOT_ADD)
BINARY_SLOT(nb_sub, SLOT_SUB)
BINARY_SLOT(nb_mul, SLOT_MUL)
BINARY_SLOT(nb_truediv, SLOT_TRUEDIV)
BINARY_SLOT(nb_floordiv, SLOT_FLOORDIV)
BINARY_SLOT(nb_mod, SLOT_MOD)
BINARY_SLOT(nb_and, SLOT_AND)
BINARY_SLOT(nb_or, SLOT_OR)
BINARY_SLOT(nb_xor, SLOT_XOR)
BINARY_SLOT(nb_lshift, SLOT_LSHIFT)
BINARY_SLOT(nb_rshift, SLOT_RSHIFT)
UNARY_SLOT(nb_neg, SLOT_NEG)
UNARY_SLOT(nb_pos, SLOT_POS)
UNARY_SLOT(nb_abs, SLOT_ABS)
UNARY_SLOT(nb_invert, SLOT_INVERT)

static PyObject *array_richcompare(PyObject *a, PyObject *b, int op) {
    static const int slots[] = {SLOT_LT, SLOT_LE, SLOT_EQ, SLOT_NE, SLOT_GT, SLOT_GE};
    return binary(slot_ops[slots[op]], a, b);
}

static PyType_Slot array_slots[] = {
    {Py_tp_doc, "The fields of a lazy array (api/array.ndarray), with its operators in C."},
    {Py_tp_members, array_members},
    {Py_tp_traverse, array_traverse},
    {Py_tp_clear, array_clear},
    {Py_tp_dealloc, array_dealloc},
    {Py_tp_hash, PyObject_HashNotImplemented},
    {Py_tp_richcompare, array_richcompare},
    {Py_nb_add, nb_add}, {Py_nb_subtract, nb_sub}, {Py_nb_multiply, nb_mul},
    {Py_nb_true_divide, nb_truediv}, {Py_nb_floor_divide, nb_floordiv},
    {Py_nb_remainder, nb_mod}, {Py_nb_and, nb_and}, {Py_nb_or, nb_or}, {Py_nb_xor, nb_xor},
    {Py_nb_lshift, nb_lshift}, {Py_nb_rshift, nb_rshift}, {Py_nb_negative, nb_neg},
    {Py_nb_positive, nb_pos}, {Py_nb_absolute, nb_abs}, {Py_nb_invert, nb_invert},
    {0, NULL},
};

PyType_Spec array_spec = {
    "fusedarrays.ir._fastgraph.ArrayBase", sizeof(Array), 0,
    Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC, array_slots,
};

