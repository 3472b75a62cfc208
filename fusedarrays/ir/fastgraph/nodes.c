/* Graph nodes: NodeBase (ir/graph.Node's fields), params (ir/params.py), and building an op
 * node on one or two nodes or on a node and a Python scalar (graph.op_of, scalarops.op_scalar).
 */
#include "fastgraph.h"

/* ---- NodeBase ------------------------------------------------------------------------------ */

static PyMemberDef node_members[] = {
    {"kind", T_OBJECT, offsetof(Node, kind), 0, NULL},
    {"dtype", T_OBJECT, offsetof(Node, dtype), 0, NULL},
    {"shape", T_OBJECT, offsetof(Node, shape), 0, NULL},
    {"inputs", T_OBJECT, offsetof(Node, inputs), 0, NULL},
    {"attrs", T_OBJECT, offsetof(Node, attrs), 0, NULL},
    {"sid", T_PYSSIZET, offsetof(Node, sid), 0, NULL},
    {"_params", T_OBJECT, offsetof(Node, params), 0, NULL},
    {"_nparams", T_PYSSIZET, offsetof(Node, nparams), 0, NULL},
    {"_open", T_OBJECT, offsetof(Node, open), 0, NULL},
    {"_key", T_OBJECT, offsetof(Node, key), 0, NULL},
    {"count", T_PYSSIZET, offsetof(Node, count), 0, NULL},
    {"buffers", T_OBJECT, offsetof(Node, buffers), 0, NULL},
    {"realized", T_OBJECT, offsetof(Node, realized), 0, NULL},
    {"__weaklistoffset__", T_PYSSIZET, offsetof(Node, weakrefs), READONLY, NULL},
    {NULL, 0, 0, 0, NULL},
};

static int node_traverse(Node *self, visitproc visit, void *arg) {
    Py_VISIT(Py_TYPE(self));
    Py_VISIT(self->kind); Py_VISIT(self->dtype); Py_VISIT(self->shape);
    Py_VISIT(self->inputs); Py_VISIT(self->attrs); Py_VISIT(self->params);
    Py_VISIT(self->open); Py_VISIT(self->key); Py_VISIT(self->buffers);
    Py_VISIT(self->realized);
    return 0;
}

static int node_clear(Node *self) {
    Py_CLEAR(self->kind); Py_CLEAR(self->dtype); Py_CLEAR(self->shape);
    Py_CLEAR(self->inputs); Py_CLEAR(self->attrs); Py_CLEAR(self->params);
    Py_CLEAR(self->open); Py_CLEAR(self->key); Py_CLEAR(self->buffers);
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

/* ---- small helpers ---------------------------------------------------------------------- */


static PyObject *new_token(void) {          /* [True]: the right to append (ir/params.py) */
    PyObject *token = PyList_New(1);
    if (token != NULL)
        PyList_SetItem(token, 0, ref(Py_True));
    return token;
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

/* ---- params (ir/params.py) ---------------------------------------------------------------- */

/* own_params(node): new reference */
static PyObject *own_params(Node *node) {
    PyObject *token = node->open;
    if (!IS_NONE(token)) {
        node->open = NULL;
        int took = take(token);
        Py_DECREF(token);
        if (took < 0)
            return NULL;
        if (!took) {
            PyObject *copy = dict_prefix(node->params, node->nparams);
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
    Py_ssize_t n = node->nparams;
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
    into->nparams = n + 1;
    set_ref(&into->open, n + 1 >= ShareFrom ? new_token() : NULL);
    return (n + 1 >= ShareFrom && into->open == NULL) ? -1 : 0;
}

/* `into` = op(new, node), new a leaf or scalar, node with params: node's params then new.
   Returns the placement ("<" or ("<", k)), a new reference. */
static PyObject *mirror_param(Node *into, Node *node, Node *new) {
    PyObject *params = node->params;
    Py_ssize_t n = node->nparams;
    PyObject *found = PyDict_GetItemWithError(params, (PyObject *)new);
    if (found == NULL && PyErr_Occurred())
        return NULL;
    if (found != NULL) {
        Py_ssize_t k = PyLong_AsSsize_t(found);
        if (k == -1 && PyErr_Occurred())
            return NULL;
        if (k < n) {
            set_ref(&into->params, ref(params));
            into->nparams = n;
            set_ref(&into->open, IS_NONE(node->open) ? NULL : ref(node->open));
            return PyTuple_Pack(2, s_mirrored, found);
        }
    }
    if (IS_NONE(node->open)) {
        PyObject *copy = untracked(PyDict_Copy(params));
        if (copy == NULL || dict_put(copy, (PyObject *)new, n) < 0) {
            Py_XDECREF(copy);
            return NULL;
        }
        set_ref(&into->params, copy);
        into->nparams = n + 1;
        if (n + 1 >= ShareFrom) {
            set_ref(&into->open, new_token());
            if (into->open == NULL)
                return NULL;
        }
    } else if (append_param(into, node, new) < 0) {
        return NULL;
    }
    return ref(s_mirrored);
}

/* merge_node(first, pa, other, pb): *params and the return value (placement) new references */
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

/* ---- sids, counts, buffers ---------------------------------------------------------------- */

/* the sid of `structure` (stolen): ir/sids._sid, its table looked up here first */
static Py_ssize_t sid_of(PyObject *structure) {
    if (structure == NULL)
        return -1;
    PyObject *found = PyDict_GetItemWithError(Sids, structure);
    Py_ssize_t sid;
    if (found != NULL) {
        sid = PyLong_AsSsize_t(found);
    } else if (PyErr_Occurred()) {
        sid = -1;
    } else {
        found = PyObject_CallFunctionObjArgs(SidFn, structure, NULL);
        sid = found == NULL ? -1 : PyLong_AsSsize_t(found);
        Py_XDECREF(found);
    }
    Py_DECREF(structure);
    return sid;
}

static PyObject *structure4(PyObject *aid, Py_ssize_t s1, Py_ssize_t s2, PyObject *placement) {
    PyObject *a = PyLong_FromSsize_t(s1), *b = PyLong_FromSsize_t(s2), *t = NULL;
    if (a != NULL && b != NULL)
        t = PyTuple_Pack(4, aid, a, b, placement);
    Py_XDECREF(a);
    Py_XDECREF(b);
    return t;
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

static Node *new_node(void) {
    return (Node *)untracked(node_alloc(NodeType, 0));
}

/* the result dtype of a loop: attrs[1][-1] (borrowed) */
static PyObject *result_dtype(PyObject *attrs) {
    PyObject *loop = PyTuple_GetItem(attrs, 1);
    if (loop == NULL)
        return NULL;
    return PyTuple_GetItem(loop, PyTuple_Size(loop) - 1);
}

/* ---- building nodes (graph.op_of, scalarops.op_scalar, graph.scalar) --------------------- */

PyObject *op_of2(Node *a, Node *b, PyObject *attrs, PyObject *aid) {
    PyObject *placement = NULL, *dtype = result_dtype(attrs);
    Node *node;
    if (dtype == NULL || (node = new_node()) == NULL)
        return NULL;
    node->kind = ref(s_op);
    node->dtype = ref(dtype);
    node->attrs = ref(attrs);
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
        set_ref(&node->params, params);
        node->nparams = PyDict_Size(params);
        if (params != a->params && node->nparams >= ShareFrom &&
            (node->open = new_token()) == NULL)
            goto fail;
    } else if (IS_NONE(pa)) {                                /* two leaves or scalars */
        PyObject *params = untracked(PyDict_New());
        node->params = params;
        if (params == NULL || dict_put(params, (PyObject *)a, 0) < 0)
            goto fail;
        if (a == b) {
            placement = ref(s_same);
        } else {
            if (dict_put(params, (PyObject *)b, 1) < 0)
                goto fail;
            placement = ref(Py_None);
        }
        node->nparams = PyDict_Size(params);
    } else {                                                 /* an op and a leaf or scalar */
        Py_ssize_t n = a->nparams;
        PyObject *found = PyDict_GetItemWithError(pa, (PyObject *)b);
        Py_ssize_t k = n;
        if (found == NULL && PyErr_Occurred())
            goto fail;
        if (found != NULL && (k = PyLong_AsSsize_t(found)) == -1 && PyErr_Occurred())
            goto fail;
        if (found != NULL && k < n) {                        /* b is one of a's: shared */
            node->params = ref(pa);
            node->nparams = n;
            node->open = IS_NONE(a->open) ? NULL : ref(a->open);
            placement = ref(found);
        } else if (IS_NONE(a->open)) {                       /* a small or handed-out dict */
            PyObject *params = untracked(PyDict_Copy(pa));
            node->params = params;
            if (params == NULL || dict_put(params, (PyObject *)b, n) < 0)
                goto fail;
            node->nparams = n + 1;
            if (n + 1 >= ShareFrom && (node->open = new_token()) == NULL)
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
    node->sid = sid_of(structure4(aid, a->sid, b->sid, placement));
    Py_CLEAR(placement);
    if (node->sid == -1 && PyErr_Occurred())
        goto fail;
    /* a square (x * x) and an op on a node and one of its inputs (x + x * x) count once */
    if (a == b || in_inputs(a, b))
        node->count = 1 + b->count;
    else if (in_inputs(b, a))
        node->count = 1 + a->count;
    else
        node->count = 1 + a->count + b->count;
    if ((node->buffers = union_buffers(a, b)) == NULL)
        goto fail;
    return (PyObject *)node;
fail:
    Py_XDECREF(placement);
    Py_DECREF(node);
    return NULL;
}

PyObject *op_of1(Node *a, PyObject *attrs, PyObject *aid) {
    PyObject *dtype = result_dtype(attrs);
    Node *node;
    if (dtype == NULL || (node = new_node()) == NULL)
        return NULL;
    node->kind = ref(s_op);
    node->dtype = ref(dtype);
    node->attrs = ref(attrs);
    node->shape = ref(a->shape);
    node->count = 1 + a->count;
    node->buffers = ref(a->buffers != NULL ? a->buffers : EmptyFrozenset);
    if ((node->inputs = untracked(PyTuple_Pack(1, (PyObject *)a))) == NULL)
        goto fail;
    if (IS_NONE(a->params)) {
        if ((node->params = untracked(PyDict_New())) == NULL || dict_put(node->params, (PyObject *)a, 0) < 0)
            goto fail;
        node->nparams = 1;
    } else {
        node->params = ref(a->params);
        node->nparams = a->nparams;
        node->open = IS_NONE(a->open) ? NULL : ref(a->open);
    }
    PyObject *sa = PyLong_FromSsize_t(a->sid);
    node->sid = sid_of(sa == NULL ? NULL : PyTuple_Pack(2, aid, sa));
    Py_XDECREF(sa);
    if (node->sid == -1 && PyErr_Occurred())
        goto fail;
    return (PyObject *)node;
fail:
    Py_DECREF(node);
    return NULL;
}

Node *new_scalar(PyObject *value, PyObject *dtype, Py_ssize_t sid) {
    Node *s = (Node *)untracked(scalar_alloc(ScalarType, 0));
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
    s->sid = sid;
    s->count = 1;
    s->buffers = ref(EmptyFrozenset);
    if (s->attrs == NULL) {
        Py_DECREF(s);
        return NULL;
    }
    return s;
}

PyObject *op_scalar(Node *node, PyObject *value, PyObject *sdtype, Py_ssize_t ssid,
                           PyObject *attrs, PyObject *aid, int scalar_first) {
    PyObject *dtype = result_dtype(attrs), *structure;
    Node *s, *op;
    if (dtype == NULL || (s = new_scalar(value, sdtype, ssid)) == NULL)
        return NULL;
    if ((op = new_node()) == NULL) {
        Py_DECREF(s);
        return NULL;
    }
    op->kind = ref(s_op);
    op->dtype = ref(dtype);
    op->attrs = ref(attrs);
    op->shape = ref(node->shape);
    op->count = node->count + 2;
    op->buffers = ref(node->buffers != NULL ? node->buffers : EmptyFrozenset);
    op->inputs = untracked(scalar_first ? PyTuple_Pack(2, (PyObject *)s, (PyObject *)node)
                                        : PyTuple_Pack(2, (PyObject *)node, (PyObject *)s));
    if (op->inputs == NULL)
        goto fail;
    int leaf = IS_NONE(node->params);
    if (leaf) {
        PyObject *params = op->params = untracked(PyDict_New());
        if (params == NULL ||
            dict_put(params, scalar_first ? (PyObject *)s : (PyObject *)node, 0) < 0 ||
            dict_put(params, scalar_first ? (PyObject *)node : (PyObject *)s, 1) < 0)
            goto fail;
        op->nparams = 2;
    } else if (IS_NONE(node->open)) {
        Py_ssize_t n = node->nparams;
        PyObject *params = op->params = untracked(PyDict_Copy(node->params));
        if (params == NULL || dict_put(params, (PyObject *)s, n) < 0)
            goto fail;
        op->nparams = n + 1;
        if (n + 1 >= ShareFrom && (op->open = new_token()) == NULL)
            goto fail;
    } else if (append_param(op, node, s) < 0) {
        goto fail;
    }
    /* a scalar first follows the op's params too (op_of's "<", mirrored) */
    structure = scalar_first ? structure4(aid, ssid, node->sid, leaf ? Py_None : s_mirrored)
                             : structure4(aid, node->sid, ssid, Py_None);
    op->sid = sid_of(structure);
    if (op->sid == -1 && PyErr_Occurred())
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
        PyObject *item = PyList_GetItem(roots, i);
        if (!is_node(item)) {
            PyErr_SetString(PyExc_TypeError, "roots_params: a list of graph nodes");
            goto done;
        }
        Node *root = (Node *)item;
        PyObject *sid = PyLong_FromSsize_t(root->sid), *placement = NULL;
        if (sid == NULL)
            goto done;
        PyTuple_SetItem(structure, i == 0 ? 0 : 2 * i - 1, sid);
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
