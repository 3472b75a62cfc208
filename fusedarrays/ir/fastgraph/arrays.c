/* Arrays: ArrayBase's fields (api/array.ndarray), wrapping a new op node in an array, and the
 * registry of pending arrays that a write into a buffer consults (api/pending.py: before a buffer
 * is written, the pending arrays reading it are computed).
 *
 * The registry holds its arrays by borrowed pointer, in creation order; an array knows its
 * place in it and leaves it when it dies (array_dealloc), so registering costs an append and no
 * weak reference (which the collector would have to scan), and a scan visits live arrays only.
 */
#include "fastgraph.h"

PyMemberDef array_members[] = {
    {"_node", T_OBJECT_EX, offsetof(Array, node), 0, NULL},
    {"_view_of", T_OBJECT_EX, offsetof(Array, view_of), 0, NULL},
    {"_views", T_OBJECT_EX, offsetof(Array, views), 0, NULL},
    {"__weaklistoffset__", T_PYSSIZET, offsetof(Array, weakrefs), READONLY, NULL},
    {NULL, 0, 0, 0, NULL},
};

/* ---- the pending registry ------------------------------------------------------------------ */

static Array **registry;            /* borrowed; NULL where an array left */
static Py_ssize_t registry_len, registry_cap, registry_live;

static void compact(void) {
    Py_ssize_t j = 0;
    for (Py_ssize_t i = 0; i < registry_len; i++) {
        Array *a = registry[i];
        if (a != NULL) {
            registry[j] = a;
            a->pending = ++j;
        }
    }
    registry_len = j;
}

static void leave(Array *array) {
    registry[array->pending - 1] = NULL;
    array->pending = 0;
    registry_live--;
}

int pending_add(Array *array) {
    if (array->pending)
        return 0;
    if (registry_len == registry_cap) {
        if (registry_live < registry_len / 2) {
            compact();
        } else {
            Py_ssize_t cap = registry_cap ? 2 * registry_cap : 1024;
            Array **grown = PyMem_Realloc(registry, cap * sizeof(Array *));
            if (grown == NULL) {
                PyErr_NoMemory();
                return -1;
            }
            registry = grown;
            registry_cap = cap;
        }
    }
    registry[registry_len++] = array;
    array->pending = registry_len;
    registry_live++;
    return 0;
}

/* the array's node, its realized leaf where it was computed (Python: _resolved) */
Node *resolved(Array *array) {
    Node *node = (Node *)array->node;
    if (node != NULL && !IS_NONE(node->realized)) {
        PyObject *leaf = ref(node->realized);
        set_ref(&array->node, leaf);
        node = (Node *)leaf;
    }
    return node;
}

/* The pending arrays that read `buffer` (None: no buffer), in creation order; computed arrays
   leave the registry on the way. The registry is copied first (new references): resolving an
   array's node may free its graph, and freeing a buffer may run Python code, in which another
   thread may add, drop or compact entries. */
PyObject *pending_readers(PyObject *buffer) {
    PyObject *live = PyList_New(0), *found = PyList_New(0);
    if (live == NULL || found == NULL)
        goto fail;
    for (Py_ssize_t i = 0; i < registry_len; i++)
        if (registry[i] != NULL && PyList_Append(live, (PyObject *)registry[i]) < 0)
            goto fail;
    for (Py_ssize_t i = 0; i < PyList_Size(live); i++) {
        Array *a = (Array *)PyList_GetItem(live, i);
        Node *node = resolved(a);
        int pending = node != NULL && node->kind != s_leaf &&
                      !(PyUnicode_Check(node->kind) &&
                        PyUnicode_CompareWithASCIIString(node->kind, "leaf") == 0);
        if (!pending) {
            if (a->pending)
                leave(a);
            continue;
        }
        if (buffer == Py_None || node->buffers == NULL)
            continue;
        int reads = PySet_Contains(node->buffers, buffer);
        if (reads < 0 || (reads && PyList_Append(found, (PyObject *)a) < 0))
            goto fail;
    }
    if (registry_live < registry_len / 2)
        compact();
    Py_DECREF(live);
    return found;
fail:
    Py_XDECREF(live);
    Py_XDECREF(found);
    return NULL;
}

Py_ssize_t pending_count(void) {
    return registry_live;
}

/* ---- the array type's life ------------------------------------------------------------------ */

int array_traverse(Array *self, visitproc visit, void *arg) {
    Py_VISIT(Py_TYPE(self));
    Py_VISIT(self->node);
    Py_VISIT(self->view_of);
    Py_VISIT(self->views);
    return 0;
}

int array_clear(Array *self) {
    Py_CLEAR(self->node);
    Py_CLEAR(self->view_of);
    Py_CLEAR(self->views);
    return 0;
}

void array_dealloc(Array *self) {
    PyTypeObject *tp = Py_TYPE(self);
    PyObject_GC_UnTrack(self);
    if (self->pending)
        leave(self);
    if (self->weakrefs != NULL)
        PyObject_ClearWeakRefs((PyObject *)self);
    array_clear(self);
    ((freefunc)PyType_GetSlot(tp, Py_tp_free))(self);
    Py_DECREF(tp);
}

/* _wrap(node): a new array over an op node (stolen), registered as pending; the node limit */
PyObject *wrap(PyObject *node) {
    if (node == NULL)
        return NULL;
    Array *array = (Array *)untracked(array_alloc(ArrayType, 0));
    if (array == NULL) {
        Py_DECREF(node);
        return NULL;
    }
    array->node = node;
    array->view_of = ref(Py_None);
    array->views = ref(Py_None);
    if (pending_add(array) < 0)
        goto fail;
    /* the node limit, read again when a setting may have changed (config._generation) */
    PyObject *generation = PyDict_GetItemWithError(ConfigGlobals, s_generation);
    PyObject *seen = PyList_GetItem(MaxNodes, 0);
    if (generation == NULL) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_RuntimeError, "fusedarrays.config has no _generation");
        goto fail;
    }
    int same = generation == seen ? 1 : PyObject_RichCompareBool(generation, seen, Py_EQ);
    if (same < 0)
        goto fail;
    Py_ssize_t limit = same ? PyLong_AsSsize_t(PyList_GetItem(MaxNodes, 1)) : 0;
    if (limit == -1 && PyErr_Occurred()) {
        PyErr_Clear();
        same = 0;
    }
    PyObject *count = ((Node *)node)->count;
    if (!same || count == NULL || PyLong_AsSsize_t(count) > limit) {
        PyObject *r = PyObject_CallFunctionObjArgs(CheckLimitFn, node, (PyObject *)array, NULL);
        if (r == NULL)
            goto fail;
        Py_DECREF(r);
    }
    return (PyObject *)array;
fail:
    Py_DECREF(array);
    return NULL;
}
