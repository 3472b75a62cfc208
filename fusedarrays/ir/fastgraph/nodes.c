/* Graph nodes: NodeBase (ir/graph.Node's fields), params (ir/params.py), and building an op
 * node on one or two nodes or on a node and a Python scalar (graph.op_of, scalarops.op_scalar).
 *
 * Every field is an object member that raises AttributeError while unset (T_OBJECT_EX), as a
 * __slots__ field does: CPython specializes reads and writes of such members in Python code
 * (the planner and the evaluation read nodes' fields all the time) and no others. Numbers (sid,
 * count, _nparams) are Python ints for the same reason. A node made here has every field set;
 * one made in Python has those its kind uses, and code here reads no other.
 */
#include "fastgraph.h"

/* ---- NodeBase ------------------------------------------------------------------------------ */

static PyMemberDef node_members[] = {
    {"kind", T_OBJECT_EX, offsetof(Node, kind), 0, NULL},
    {"dtype", T_OBJECT_EX, offsetof(Node, dtype), 0, NULL},
    {"shape", T_OBJECT_EX, offsetof(Node, shape), 0, NULL},
    {"inputs", T_OBJECT_EX, offsetof(Node, inputs), 0, NULL},
    {"attrs", T_OBJECT_EX, offsetof(Node, attrs), 0, NULL},
    {"sid", T_OBJECT_EX, offsetof(Node, sid), 0, NULL},
    {"_params", T_OBJECT_EX, offsetof(Node, params), 0, NULL},
    {"_nparams", T_OBJECT_EX, offsetof(Node, nparams), 0, NULL},
    {"_open", T_OBJECT_EX, offsetof(Node, open), 0, NULL},
    {"_key", T_OBJECT_EX, offsetof(Node, key), 0, NULL},
    {"count", T_OBJECT_EX, offsetof(Node, count), 0, NULL},
    {"buffers", T_OBJECT_EX, offsetof(Node, buffers), 0, NULL},
    {"realized", T_OBJECT_EX, offsetof(Node, realized), 0, NULL},
    {"__weaklistoffset__", T_PYSSIZET, offsetof(Node, weakrefs), READONLY, NULL},
    {NULL, 0, 0, 0, NULL},
};

static int node_traverse(Node *self, visitproc visit, void *arg) {
    Py_VISIT(Py_TYPE(self));
    Py_VISIT(self->kind); Py_VISIT(self->dtype); Py_VISIT(self->shape);
    Py_VISIT(self->inputs); Py_VISIT(self->attrs); Py_VISIT(self->sid);
    Py_VISIT(self->params); Py_VISIT(self->nparams); Py_VISIT(self->open);
    Py_VISIT(self->key); Py_VISIT(self->count); Py_VISIT(self->buffers);
    Py_VISIT(self->realized);
    return 0;
}

static int node_clear(Node *self) {
    Py_CLEAR(self->kind); Py_CLEAR(self->dtype); Py_CLEAR(self->shape);
    Py_CLEAR(self->inputs); Py_CLEAR(self->attrs); Py_CLEAR(self->sid);
    Py_CLEAR(self->params); Py_CLEAR(self->nparams); Py_CLEAR(self->open);
    Py_CLEAR(self->key); Py_CLEAR(self->count); Py_CLEAR(self->buffers);
    Py_CLEAR(self->realized);
    return 0;
}

static void node_dealloc(Node *self) {
    PyTypeObject *tp = Py_TYPE(self);
    PyObject_GC_UnTrack(self);
    if (self->weakrefs != NULL)
        PyObject_ClearWeakRefs((PyObject *)self);
    node_clear(self);
    ((freefunc)PyType_GetSlot(tp, Py_tp_free))(self);
    Py_DECREF(tp);
}

static PyType_Slot node_slots[] = {
    {Py_tp_doc, "The fields of a graph node (ir/graph.Node): set in C by the hot path."},
    {Py_tp_members, node_members},
    {Py_tp_traverse, node_traverse},
    {Py_tp_clear, node_clear},
    {Py_tp_dealloc, node_dealloc},
    {0, NULL},
};

PyType_Spec node_spec = {
    "fusedarrays.ir._fastgraph.NodeBase", sizeof(Node), 0,
    Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC, node_slots,
};

/* ---- small helpers ------------------------------------------------------------------------- */

/* a number field (NULL: unset, 0; a Python int holds no error here: the fields hold ints) */
static inline Py_ssize_t number(PyObject *o) {
    return o == NULL ? 0 : PyLong_AsSsize_t(o);
}

/* set a number field (-1 on error) */
static inline int set_number(PyObject **field, Py_ssize_t value) {
    PyObject *v = PyLong_FromSsize_t(value);
    if (v == NULL)
        return -1;
    set_ref(field, v);
    return 0;
}

static PyObject *new_token(void) {          /* [True]: the right to append (ir/params.py) */
    PyObject *token = PyList_New(1);
    if (token != NULL)
        PyList_SetItem(token, 0, ref(Py_True));
    return token;
}

/* the token of a node whose params are `n` long: one where n reaches SHARE_FROM, else None */
static int set_token(Node *node, Py_ssize_t n) {
    PyObject *token = n >= ShareFrom ? new_token() : ref(Py_None);
    if (token == NULL)
        return -1;
    set_ref(&node->open, token);
    return 0;
}

/* take(token): 1 where the right was taken here, 0 where it is gone, -1 on error */
static int take(PyObject *token) {
    if (IS_NONE(token))
        return 0;
    Py_ssize_t n = PyList_Size(token);
    if (n < 0)
        return -1;
    if (n == 0)
        return 0;
    return PyList_SetSlice(token, n - 1, n, NULL) < 0 ? -1 : 1;
}

/* dict(islice(d.items(), n)) */
static PyObject *dict_prefix(PyObject *d, Py_ssize_t n) {
    PyObject *out = untracked(PyDict_New()), *k, *v;
    Py_ssize_t pos = 0, i = 0;
    if (out == NULL)
        return NULL;
    while (i < n && PyDict_Next(d, &pos, &k, &v)) {
        if (PyDict_SetItem(out, k, v) < 0) {
            Py_DECREF(out);
            return NULL;
        }
        i++;
    }
    return out;
}

static int dict_put(PyObject *d, PyObject *key, Py_ssize_t value) {
    PyObject *v = PyLong_FromSsize_t(value);
    if (v == NULL)
        return -1;
    int r = PyDict_SetItem(d, key, v);
    Py_DECREF(v);
    return r;
}

static inline int has_buffers(Node *n) {
    return n->buffers != NULL && PySet_Size(n->buffers) > 0;
}

/* a node as graph.py's constructors leave it before its kind's fields: nothing computed yet */
static Node *new_node(allocfunc alloc, PyTypeObject *type) {
    Node *node = (Node *)untracked(alloc(type, 0));
    if (node != NULL) {
        node->key = ref(Py_None);
        node->realized = ref(Py_None);
        node->open = ref(Py_None);
    }
    return node;
}

/* ---- params (ir/params.py) ---------------------------------------------------------------- */

/* own_params(node): new reference */
static PyObject *own_params(Node *node) {
    PyObject *token = node->open;
    if (!IS_NONE(token)) {
        node->open = ref(Py_None);
        int took = take(token);
        Py_DECREF(token);
        if (took < 0)
            return NULL;
        if (!took) {
            PyObject *copy = dict_prefix(node->params, number(node->nparams));
            if (copy == NULL)
                return NULL;
            set_ref(&node->params, copy);
        }
    }
    return ref(node->params);
}

/* the params of `node` as Node.params hands them out: a dict, or NULL for a leaf or scalar
   (new reference, or NULL with no error) */
static PyObject *handed_params(Node *node) {
    if (IS_NONE(node->params))
        return NULL;
    if (IS_NONE(node->open))
        return ref(node->params);
    return own_params(node);
}

static int append_param(Node *into, Node *node, Node *new) {
    PyObject *params = node->params;
    Py_ssize_t n = number(node->nparams);
    int copy = 1;
    if (!has_buffers(new)) {
        int took = take(node->open);
        if (took < 0)
            return -1;
        copy = !took;
    }
    if (copy)
        params = PyDict_Size(params) == n ? untracked(PyDict_Copy(params))
                                          : dict_prefix(params, n);
    else
        Py_INCREF(params);
    if (params == NULL)
        return -1;
    if (dict_put(params, (PyObject *)new, n) < 0) {
        Py_DECREF(params);
        return -1;
    }
    set_ref(&into->params, params);
    if (set_number(&into->nparams, n + 1) < 0)
        return -1;
    return set_token(into, n + 1);
}

/* (0, 1, ..., n - 1), and ("<", k): one tuple per n or k below POSITIONS, kept (a sid's part
   that sid_cached can find by identity) */
#define POSITIONS 256
static PyObject *kept_positions[POSITIONS], *kept_mirrored[POSITIONS];

/* ("<", found) (new reference): the kept one where found is below POSITIONS */
static PyObject *mirrored(PyObject *found) {
    Py_ssize_t k = PyLong_AsSsize_t(found);
    if (k == -1 && PyErr_Occurred())
        return NULL;
    if (k >= 0 && k < POSITIONS && kept_mirrored[k] != NULL)
        return ref(kept_mirrored[k]);
    PyObject *pair = PyTuple_Pack(2, s_mirrored, found);
    if (pair != NULL && k >= 0 && k < POSITIONS)
        kept_mirrored[k] = ref(pair);
    return pair;
}

/* whether a placement is the same object whenever it is equal: not a tuple, or a kept one */
static int is_kept(PyObject *p) {
    if (!PyTuple_Check(p))
        return 1;
    Py_ssize_t n = PyTuple_Size(p);
    if (n < POSITIONS && kept_positions[n] == p)
        return 1;
    if (n != 2 || PyTuple_GetItem(p, 0) != s_mirrored)
        return 0;
    Py_ssize_t k = PyLong_AsSsize_t(PyTuple_GetItem(p, 1));
    if (k == -1 && PyErr_Occurred())
        PyErr_Clear();
    return k >= 0 && k < POSITIONS && kept_mirrored[k] == p;
}


/* `into` = op(new, node), new a leaf or scalar, node with params: node's params then new.
   Returns the placement ("<" or ("<", k)), a new reference. */
static PyObject *mirror_param(Node *into, Node *node, Node *new) {
    PyObject *params = node->params;
    Py_ssize_t n = number(node->nparams);
    PyObject *found = PyDict_GetItemWithError(params, (PyObject *)new);
    if (found == NULL && PyErr_Occurred())
        return NULL;
    if (found != NULL) {
        Py_ssize_t k = PyLong_AsSsize_t(found);
        if (k == -1 && PyErr_Occurred())
            return NULL;
        if (k < n) {
            set_ref(&into->params, ref(params));
            set_ref(&into->nparams, ref(node->nparams));
            set_ref(&into->open, ref(node->open != NULL ? node->open : Py_None));
            return mirrored(found);
        }
    }
    if (IS_NONE(node->open)) {
        PyObject *copy = untracked(PyDict_Copy(params));
        if (copy == NULL || dict_put(copy, (PyObject *)new, n) < 0) {
            Py_XDECREF(copy);
            return NULL;
        }
        set_ref(&into->params, copy);
        if (set_number(&into->nparams, n + 1) < 0 || set_token(into, n + 1) < 0)
            return NULL;
    } else if (append_param(into, node, new) < 0) {
        return NULL;
    }
    return ref(s_mirrored);
}

/* merge_node(first, pa, other, pb): *out (params) and the return value (placement) new
   references */
static PyObject *merge_node(PyObject *first, PyObject *pa, PyObject *other, PyObject *pb,
                            PyObject **out) {
    PyObject *params, *k, *v;
    Py_ssize_t pos = 0;
    *out = NULL;
    if (first == other) {
        *out = ref(pa);
        return ref(s_same);
    }
    if (pa == NULL) {
        int inside = PyDict_Contains(pb, first);
        if (inside < 0)
            return NULL;
        params = untracked(PyDict_New());
        if (params == NULL || dict_put(params, first, 0) < 0)
            goto fail;
        if (!inside) {
            Py_ssize_t i = 1;
            while (PyDict_Next(pb, &pos, &k, &v))
                if (dict_put(params, k, i++) < 0)
                    goto fail;
            *out = params;
            Py_RETURN_NONE;
        }
    } else {
        int disjoint = 1;
        while (PyDict_Next(pb, &pos, &k, &v)) {
            int inside = PyDict_Contains(pa, k);
            if (inside < 0)
                return NULL;
            if (inside) {
                disjoint = 0;
                break;
            }
        }
        params = untracked(PyDict_Copy(pa));
        if (params == NULL)
            return NULL;
        if (disjoint) {
            Py_ssize_t i = PyDict_Size(pa);
            pos = 0;
            while (PyDict_Next(pb, &pos, &k, &v))
                if (dict_put(params, k, i++) < 0)
                    goto fail;
            *out = params;
            Py_RETURN_NONE;
        }
    }
    {
        Py_ssize_t nb = PyDict_Size(pb), i = 0;
        PyObject *placement = PyTuple_New(nb);
        if (placement == NULL)
            goto fail;
        pos = 0;
        while (PyDict_Next(pb, &pos, &k, &v)) {
            PyObject *at = PyDict_GetItemWithError(params, k);
            if (at == NULL) {
                if (PyErr_Occurred() || dict_put(params, k, PyDict_Size(params)) < 0 ||
                    (at = PyDict_GetItemWithError(params, k)) == NULL) {
                    Py_DECREF(placement);
                    goto fail;
                }
            }
            PyTuple_SetItem(placement, i++, ref(at));
        }
        *out = params;
        return placement;
    }
fail:
    Py_XDECREF(params);
    return NULL;
}

/* The node of a and b (two ops, a != b) whose params begin with all of the other's, in order
 * (t * (c + t * d): the right one's are the left one's and then scalars), or NULL where neither
 * does. merge_node would give that node's params, and the placement (0, 1, ..., nb
 * - 1): one pass of pointer comparisons over the shorter instead of copying and looking up
 * every param, and the longer's dict shared (its first nparams entries, the token with them). */
static Node *longer_params(Node *a, Node *b) {
    Py_ssize_t na = number(a->nparams), nb = number(b->nparams), pa = 0, pb = 0;
    Node *longer = na >= nb ? a : b;
    PyObject *ka, *kb, *v;
    if (a->params == b->params)         /* one shared dict: each node has its first entries */
        return longer;
    for (Py_ssize_t i = 0, n = na < nb ? na : nb; i < n; i++)
        if (!PyDict_Next(a->params, &pa, &ka, &v) || !PyDict_Next(b->params, &pb, &kb, &v) ||
            ka != kb)
            return NULL;
    return longer;
}

static PyObject *positions(Py_ssize_t n) {
    if (n < POSITIONS && kept_positions[n] != NULL)
        return ref(kept_positions[n]);
    PyObject *out = PyTuple_New(n);
    for (Py_ssize_t i = 0; out != NULL && i < n; i++) {
        PyObject *k = PyLong_FromSsize_t(i);
        if (k == NULL) {
            Py_CLEAR(out);
            break;
        }
        PyTuple_SetItem(out, i, k);
    }
    if (out != NULL && n < POSITIONS)
        kept_positions[n] = ref(out);
    return out;
}

/* ---- sids, counts, buffers ---------------------------------------------------------------- */

/* the sid of `structure` (stolen; NULL passes an error on): ir/sids._sid, its table looked up
   here first. A new reference. */
static PyObject *sid_of(PyObject *structure) {
    if (structure == NULL)
        return NULL;
    PyObject *found = PyDict_GetItemWithError(Sids, structure);
    if (found != NULL)
        Py_INCREF(found);
    else if (!PyErr_Occurred())
        found = PyObject_CallFunctionObjArgs(SidFn, structure, NULL);
    Py_DECREF(structure);
    return found;
}

/* The sid of (k0, k1, k2, k3) (k2, k3 NULL: of (k0, k1)), found first in a table keyed by the
 * parts' identities: an op's attrs id, its inputs' sids and a placement (None, a marker, a
 * param's position, a kept positions tuple) are the same objects every time a graph is built
 * again, and looking them up by address costs a fraction of a tuple built, hashed, compared
 * and freed (sid_of: a seventh of Black-Scholes' graph building). The table holds its parts
 * (no address is reused while an entry names it). A sid found here after ir/sids cleared its
 * table is the structure's old number, which numbers nothing else (sids are never reused):
 * at most a record missed. A placement tuple that is not kept (is_kept) is looked up in
 * ir/sids' table alone. */
#define SID_CACHE 4096
typedef struct {
    PyObject *part[4], *sid;
} SidEntry;
static SidEntry sid_cache[SID_CACHE];

static PyObject *sid_cached(PyObject *k0, PyObject *k1, PyObject *k2, PyObject *k3) {
    PyObject *parts[4] = {k0, k1, k2, k3};
    int keep = k3 == NULL || is_kept(k3);
    uint64_t h = 0;     /* Fibonacci hashing of the addresses: the high bits mix them all */
    for (int i = 0; i < 4; i++)
        h = (h ^ ((uint64_t)(uintptr_t)parts[i] >> 4)) * 0x9E3779B97F4A7C15ULL;
    SidEntry *e = &sid_cache[(h >> 40) & (SID_CACHE - 1)];
    if (keep && e->sid != NULL && e->part[0] == k0 && e->part[1] == k1 && e->part[2] == k2 &&
        e->part[3] == k3)
        return ref(e->sid);
    PyObject *sid = sid_of(k2 == NULL ? PyTuple_Pack(2, k0, k1) : PyTuple_Pack(4, k0, k1, k2, k3));
    if (sid == NULL || !keep)
        return sid;
    SidEntry old = *e;
    for (int i = 0; i < 4; i++) {
        Py_XINCREF(parts[i]);
        e->part[i] = parts[i];
    }
    e->sid = ref(sid);
    for (int i = 0; i < 4; i++)
        Py_XDECREF(old.part[i]);
    Py_XDECREF(old.sid);
    return sid;
}

static int in_inputs(Node *n, Node *of) {
    if (IS_NONE(of->inputs))
        return 0;
    Py_ssize_t len = PyTuple_Size(of->inputs);
    for (Py_ssize_t i = 0; i < len; i++)
        if (PyTuple_GetItem(of->inputs, i) == (PyObject *)n)
            return 1;
    return 0;
}

/* a's buffers, or their union with b's (new reference) */
static PyObject *union_buffers(Node *a, Node *b) {
    PyObject *ba = a->buffers, *bb = b->buffers;
    if (ba == NULL)
        ba = EmptyFrozenset;
    if (bb == NULL || bb == ba || PySet_Size(bb) == 0)
        return ref(ba);
    int within = PyObject_RichCompareBool(bb, ba, Py_LE);
    if (within < 0)
        return NULL;
    return within ? ref(ba) : PyNumber_Or(ba, bb);
}

/* the result dtype of a loop: attrs[1][-1] (borrowed) */
static PyObject *result_dtype(PyObject *attrs) {
    PyObject *loop = PyTuple_GetItem(attrs, 1);
    if (loop == NULL)
        return NULL;
    return PyTuple_GetItem(loop, PyTuple_Size(loop) - 1);
}

/* an op node's common fields: kind, dtype, attrs (the caller sets the rest) */
static Node *new_op(PyObject *attrs) {
    PyObject *dtype = result_dtype(attrs);
    Node *node;
    if (dtype == NULL || (node = new_node(node_alloc, NodeType)) == NULL)
        return NULL;
    node->kind = ref(s_op);
    node->dtype = ref(dtype);
    node->attrs = ref(attrs);
    return node;
}

/* ---- building nodes (graph.op_of, scalarops.op_scalar, graph.scalar) --------------------- */

PyObject *op_of2(Node *a, Node *b, PyObject *attrs, PyObject *aid) {
    PyObject *placement = NULL;
    Node *longer = NULL;
    Node *node = new_op(attrs);
    if (node == NULL)
        return NULL;
    node->inputs = untracked(PyTuple_Pack(2, (PyObject *)a, (PyObject *)b));
    if (node->inputs == NULL)
        goto fail;
    PyObject *sa = a->shape, *sb = b->shape;
    int equal = sa == sb ? 1 : PyObject_RichCompareBool(sa, sb, Py_EQ);
    if (equal < 0)
        goto fail;
    if (equal || PyTuple_Size(sb) == 0)
        node->shape = ref(sa);
    else if (PyTuple_Size(sa) == 0)
        node->shape = ref(sb);
    else if ((node->shape = PyObject_CallFunctionObjArgs(BroadcastFn, sa, sb, NULL)) == NULL)
        goto fail;

    PyObject *pa = a->params, *pb = b->params;
    if (!IS_NONE(pb) && IS_NONE(pa) && a != b) {            /* 1.0 - x, y * x: mirrored */
        placement = mirror_param(node, b, a);
    } else if (!IS_NONE(pb) && a != b && !IS_NONE(pa) &&
               (longer = longer_params(a, b)) != NULL) {   /* one's params begin the
                                                                      other's: shared */
        node->params = ref(longer->params);
        node->nparams = ref(longer->nparams);
        set_ref(&node->open, ref(longer->open != NULL ? longer->open : Py_None));
        placement = positions(number(b->nparams));
    } else if (!IS_NONE(pb)) {                               /* two ops */
        PyObject *ha = handed_params(a), *hb, *params;
        if (ha == NULL && PyErr_Occurred())
            goto fail;
        hb = handed_params(b);
        if (hb == NULL) {
            Py_XDECREF(ha);
            goto fail;
        }
        placement = merge_node((PyObject *)a, ha, (PyObject *)b, hb, &params);
        Py_XDECREF(ha);
        Py_DECREF(hb);
        if (placement == NULL)
            goto fail;
        node->params = params;
        Py_ssize_t n = PyDict_Size(params);
        if (set_number(&node->nparams, n) < 0 ||
            (params != a->params && set_token(node, n) < 0))
            goto fail;
    } else if (IS_NONE(pa)) {                                /* two leaves or scalars */
        PyObject *params = node->params = untracked(PyDict_New());
        if (params == NULL || dict_put(params, (PyObject *)a, 0) < 0)
            goto fail;
        if (a == b) {
            placement = ref(s_same);
        } else {
            if (dict_put(params, (PyObject *)b, 1) < 0)
                goto fail;
            placement = ref(Py_None);
        }
        if (set_number(&node->nparams, PyDict_Size(params)) < 0)
            goto fail;
    } else {                                                 /* an op and a leaf or scalar */
        Py_ssize_t n = number(a->nparams);
        PyObject *found = PyDict_GetItemWithError(pa, (PyObject *)b);
        Py_ssize_t k = n;
        if (found == NULL && PyErr_Occurred())
            goto fail;
        if (found != NULL && (k = PyLong_AsSsize_t(found)) == -1 && PyErr_Occurred())
            goto fail;
        if (found != NULL && k < n) {                        /* b is one of a's: shared */
            node->params = ref(pa);
            node->nparams = ref(a->nparams);
            set_ref(&node->open, ref(a->open != NULL ? a->open : Py_None));
            placement = ref(found);
        } else if (IS_NONE(a->open)) {                       /* a small or handed-out dict */
            PyObject *params = node->params = untracked(PyDict_Copy(pa));
            if (params == NULL || dict_put(params, (PyObject *)b, n) < 0 ||
                set_number(&node->nparams, n + 1) < 0 || set_token(node, n + 1) < 0)
                goto fail;
            placement = ref(Py_None);
        } else {
            if (append_param(node, a, b) < 0)
                goto fail;
            placement = ref(Py_None);
        }
    }
    if (placement == NULL)
        goto fail;
    node->sid = sid_cached(aid, a->sid, b->sid, placement);
    Py_CLEAR(placement);
    if (node->sid == NULL)
        goto fail;
    /* a square (x * x) and an op on a node and one of its inputs (x + x * x) count once */
    Py_ssize_t count;
    if (a == b || in_inputs(a, b))
        count = 1 + number(b->count);
    else if (in_inputs(b, a))
        count = 1 + number(a->count);
    else
        count = 1 + number(a->count) + number(b->count);
    if (set_number(&node->count, count) < 0 || (node->buffers = union_buffers(a, b)) == NULL)
        goto fail;
    return (PyObject *)node;
fail:
    Py_XDECREF(placement);
    Py_DECREF(node);
    return NULL;
}

PyObject *op_of1(Node *a, PyObject *attrs, PyObject *aid) {
    Node *node = new_op(attrs);
    if (node == NULL)
        return NULL;
    node->shape = ref(a->shape);
    node->buffers = ref(a->buffers != NULL ? a->buffers : EmptyFrozenset);
    if (set_number(&node->count, 1 + number(a->count)) < 0 ||
        (node->inputs = untracked(PyTuple_Pack(1, (PyObject *)a))) == NULL)
        goto fail;
    if (IS_NONE(a->params)) {
        if ((node->params = untracked(PyDict_New())) == NULL ||
            dict_put(node->params, (PyObject *)a, 0) < 0 || set_number(&node->nparams, 1) < 0)
            goto fail;
    } else {
        node->params = ref(a->params);
        node->nparams = ref(a->nparams);
        set_ref(&node->open, ref(a->open != NULL ? a->open : Py_None));
    }
    if ((node->sid = sid_cached(aid, a->sid, NULL, NULL)) == NULL)
        goto fail;
    return (PyObject *)node;
fail:
    Py_DECREF(node);
    return NULL;
}

/* graph.fresh_leaf with its sid given: the leaf over a buffer just allocated (an evaluation's
   result), not interned; the buffer's `fresh` attribute takes a weak reference to it */
PyObject *fresh_leaf(PyObject *buffer, PyObject *dtype, PyObject *view, PyObject *sid) {
    if (!PyTuple_Check(view) || PyTuple_Size(view) != 3) {
        PyErr_SetString(PyExc_TypeError, "fresh_leaf: view is (shape, strides, offset)");
        return NULL;
    }
    Node *node = new_node(node_alloc, NodeType);
    if (node == NULL)
        return NULL;
    node->kind = ref(s_leaf);
    node->dtype = ref(dtype);
    node->shape = ref(PyTuple_GetItem(view, 0));
    node->inputs = ref(EmptyTuple);
    node->attrs = untracked(PyTuple_Pack(2, buffer, view));
    node->sid = ref(sid);
    node->params = ref(Py_None);
    node->count = ref(One);
    PyObject *one = PyTuple_Pack(1, buffer);
    node->buffers = one == NULL ? NULL : untracked(PyFrozenSet_New(one));
    Py_XDECREF(one);
    PyObject *weak = NULL;
    if (node->attrs == NULL || node->buffers == NULL ||
        (weak = PyWeakref_NewRef((PyObject *)node, NULL)) == NULL ||
        PyObject_SetAttr(buffer, s_fresh, weak) < 0) {
        Py_XDECREF(weak);
        Py_DECREF(node);
        return NULL;
    }
    Py_DECREF(weak);
    return (PyObject *)node;
}

Node *new_scalar(PyObject *value, PyObject *dtype, PyObject *sid) {
    Node *s = new_node(scalar_alloc, ScalarType);
    if (s == NULL)
        return NULL;
    PyObject *uid = PyIter_Next(Uids);
    if (uid == NULL) {
        Py_DECREF(s);
        return NULL;
    }
    s->kind = ref(s_scalar);
    s->dtype = ref(dtype);
    s->shape = ref(EmptyTuple);
    s->inputs = ref(EmptyTuple);
    s->attrs = untracked(PyTuple_Pack(2, uid, value));
    Py_DECREF(uid);
    s->sid = ref(sid);
    s->params = ref(Py_None);
    s->nparams = ref(Zero);
    s->count = ref(One);
    s->buffers = ref(EmptyFrozenset);
    if (s->attrs == NULL) {
        Py_DECREF(s);
        return NULL;
    }
    return s;
}

/* scalarops.interned_scalar: one node per Python int or float value (not a float zero), type and
   sid, kept in ScalarNodes until its table reaches InternMax values */
Node *interned_scalar(PyObject *value, PyObject *dtype, PyObject *sid) {
    PyTypeObject *kind = Py_TYPE(value);
    if (ScalarNodes == NULL || !(PyLong_CheckExact(value) ||
                                 (PyFloat_CheckExact(value) && PyFloat_AsDouble(value) != 0.0)))
        return new_scalar(value, dtype, sid);
    PyObject *table = PyDict_GetItemWithError(ScalarNodes, sid);
    if (table == NULL) {
        if (PyErr_Occurred() || (table = PyDict_New()) == NULL)
            return NULL;
        int failed = PyDict_SetItem(ScalarNodes, sid, table);
        Py_DECREF(table);   /* ScalarNodes holds it */
        if (failed < 0)
            return NULL;
    }
    PyObject *found = PyDict_GetItemWithError(table, value);
    if (found != NULL && Py_TYPE(PyTuple_GetItem(((Node *)found)->attrs, 1)) == kind)
        return (Node *)ref(found);
    if (PyErr_Occurred())
        return NULL;
    if (PyDict_Size(table) >= InternMax)
        PyDict_Clear(table);
    Node *s = new_scalar(value, dtype, sid);
    if (s != NULL && PyDict_SetItem(table, value, (PyObject *)s) < 0)
        Py_CLEAR(s);
    return s;
}

PyObject *op_scalar(Node *node, PyObject *value, PyObject *sdtype, PyObject *ssid,
                    PyObject *attrs, PyObject *aid, int scalar_first) {
    Node *s, *op;
    if ((s = interned_scalar(value, sdtype, ssid)) == NULL)
        return NULL;
    if ((op = new_op(attrs)) == NULL) {
        Py_DECREF(s);
        return NULL;
    }
    op->shape = ref(node->shape);
    op->buffers = ref(node->buffers != NULL ? node->buffers : EmptyFrozenset);
    op->inputs = untracked(scalar_first ? PyTuple_Pack(2, (PyObject *)s, (PyObject *)node)
                                        : PyTuple_Pack(2, (PyObject *)node, (PyObject *)s));
    if (op->inputs == NULL)
        goto fail;
    int leaf = IS_NONE(node->params);
    PyObject *found = leaf ? NULL : PyDict_GetItemWithError(node->params, (PyObject *)s);
    if (found == NULL && PyErr_Occurred())
        goto fail;
    if (found != NULL && number(found) < number(node->nparams)) {
        /* s is one of node's params: share them, the placement in the sid saying where */
        if (set_number(&op->count, number(node->count) + 2 - in_inputs(s, node)) < 0)
            goto fail;
        op->params = ref(node->params);
        op->nparams = ref(node->nparams);
        set_ref(&op->open, ref(node->open != NULL ? node->open : Py_None));
        PyObject *placement = scalar_first ? mirrored(found) : ref(found);
        if (placement == NULL)
            goto fail;
        op->sid = scalar_first ? sid_cached(aid, ssid, node->sid, placement)
                               : sid_cached(aid, node->sid, ssid, placement);
        Py_DECREF(placement);
        if (op->sid == NULL)
            goto fail;
        Py_DECREF(s);
        return (PyObject *)op;
    }
    if (set_number(&op->count, number(node->count) + 2) < 0)
        goto fail;
    if (leaf) {
        PyObject *params = op->params = untracked(PyDict_New());
        if (params == NULL ||
            dict_put(params, scalar_first ? (PyObject *)s : (PyObject *)node, 0) < 0 ||
            dict_put(params, scalar_first ? (PyObject *)node : (PyObject *)s, 1) < 0 ||
            set_number(&op->nparams, 2) < 0)
            goto fail;
    } else if (IS_NONE(node->open)) {
        Py_ssize_t n = number(node->nparams);
        PyObject *params = op->params = untracked(PyDict_Copy(node->params));
        if (params == NULL || dict_put(params, (PyObject *)s, n) < 0 ||
            set_number(&op->nparams, n + 1) < 0 || set_token(op, n + 1) < 0)
            goto fail;
    } else if (append_param(op, node, s) < 0) {
        goto fail;
    }
    /* a scalar first follows the op's params too (op_of's "<", mirrored) */
    op->sid = scalar_first ? sid_cached(aid, ssid, node->sid, leaf ? Py_None : s_mirrored)
                           : sid_cached(aid, node->sid, ssid, Py_None);
    if (op->sid == NULL)
        goto fail;
    Py_DECREF(s);
    return (PyObject *)op;
fail:
    Py_DECREF(s);
    Py_DECREF(op);
    return NULL;
}

/* ---- several roots evaluated together (params.roots_params) ------------------------------- */

/* (params, structure) of `roots` (a list of nodes): their params merged as an op's inputs' are,
   and the roots' sids and placements for the evaluation's key */
PyObject *roots_params(PyObject *roots) {
    Py_ssize_t n = PyList_Size(roots);
    PyObject *params = NULL, *structure = NULL, *result = NULL;
    if (n < 1)
        return PyErr_Occurred() ? NULL : PyTuple_Pack(2, Py_None, EmptyTuple);
    structure = PyTuple_New(2 * n - 1);
    if (structure == NULL)
        return NULL;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *item = PyList_GetItem(roots, i), *placement = NULL;
        if (!is_node(item) || ((Node *)item)->sid == NULL) {
            PyErr_SetString(PyExc_TypeError, "roots_params: a list of graph nodes");
            goto done;
        }
        Node *root = (Node *)item;
        PyTuple_SetItem(structure, i == 0 ? 0 : 2 * i - 1, ref(root->sid));
        PyObject *mine = handed_params(root);
        if (mine == NULL && PyErr_Occurred())
            goto done;
        if (i == 0) {
            params = mine;
            if (params == NULL) {
                params = untracked(PyDict_New());
                if (params == NULL || dict_put(params, item, 0) < 0)
                    goto done;
            }
            continue;
        }
        if (mine == NULL) {         /* a leaf or scalar root: one of the params, or appended */
            PyObject *found = PyDict_GetItemWithError(params, item);
            if (found != NULL) {
                placement = ref(found);
            } else if (PyErr_Occurred()) {
                goto done;
            } else {
                PyObject *copy = untracked(PyDict_Copy(params));
                if (copy == NULL || dict_put(copy, item, PyDict_Size(params)) < 0) {
                    Py_XDECREF(copy);
                    goto done;
                }
                set_ref(&params, copy);
                placement = ref(Py_None);
            }
        } else {
            PyObject *merged;
            placement = merge_node(NULL, params, item, mine, &merged);
            Py_DECREF(mine);
            if (placement == NULL)
                goto done;
            set_ref(&params, merged);
        }
        PyTuple_SetItem(structure, 2 * i, placement);
    }
    result = PyTuple_Pack(2, params, structure);
done:
    Py_XDECREF(params);
    Py_DECREF(structure);
    return result;
}
