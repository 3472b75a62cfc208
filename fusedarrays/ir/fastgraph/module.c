/* The module fusedarrays.ir._fastgraph: its types, what the Python modules hand over to it
 * (configure from ir/graph.py, configure_arrays from api/array.py, install_operators from
 * api/elementwise.py), and the functions the Python path calls.
 */
#include "fastgraph.h"

PyObject *NodeBaseType, *ArrayBaseType, *OperatorType, *GraphPackerType;
PyTypeObject *NodeType, *ScalarType, *ArrayType;     /* Node, _Scalar, ndarray */
allocfunc node_alloc, scalar_alloc, array_alloc;
PyObject *Sids, *SidFn, *Uids, *BroadcastFn;
Py_ssize_t ShareFrom = 16, InternMax = 1024;
PyObject *ScalarNodes;
PyObject *MaxNodes, *ConfigGlobals, *CheckLimitFn;
PyObject *s_op, *s_scalar, *s_leaf, *s_same, *s_mirrored, *s_generation, *s_storage, *s_fresh,
    *EmptyTuple, *EmptyFrozenset, *Zero, *One;

static void keep(PyObject **slot, PyObject *value) {
    Py_XINCREF(value);
    set_ref(slot, value);
}

/* configure(Node, _Scalar, sids, sid, uids, broadcast_shapes, share_from) */
static PyObject *configure(PyObject *module, PyObject *args) {
    PyObject *node_type, *scalar_type, *sids, *sid_fn, *uids, *broadcast;
    Py_ssize_t share_from;
    if (!PyArg_ParseTuple(args, "O!O!O!OOOn:configure", &PyType_Type, &node_type, &PyType_Type,
                          &scalar_type, &PyDict_Type, &sids, &sid_fn, &uids, &broadcast,
                          &share_from))
        return NULL;
    if (!PyObject_IsSubclass(node_type, NodeBaseType) ||
        !PyObject_IsSubclass(scalar_type, node_type)) {
        PyErr_SetString(PyExc_TypeError, "configure: Node must subclass NodeBase, and _Scalar "
                                         "Node");
        return NULL;
    }
    keep((PyObject **)&NodeType, node_type);
    keep((PyObject **)&ScalarType, scalar_type);
    node_alloc = (allocfunc)PyType_GetSlot(NodeType, Py_tp_alloc);
    scalar_alloc = (allocfunc)PyType_GetSlot(ScalarType, Py_tp_alloc);
    keep(&Sids, sids);
    keep(&SidFn, sid_fn);
    keep(&Uids, uids);
    keep(&BroadcastFn, broadcast);
    ShareFrom = share_from;
    Py_RETURN_NONE;
}

/* configure_scalars(scalar_nodes, intern_max): scalarops' table of interned scalar nodes */
static PyObject *configure_scalars(PyObject *module, PyObject *args) {
    PyObject *scalar_nodes;
    Py_ssize_t intern_max;
    if (!PyArg_ParseTuple(args, "O!n:configure_scalars", &PyDict_Type, &scalar_nodes,
                          &intern_max))
        return NULL;
    keep(&ScalarNodes, scalar_nodes);
    InternMax = intern_max;
    Py_RETURN_NONE;
}

/* configure_arrays(ndarray, max_nodes, config, check_limit): max_nodes the list
   [config generation, MAX_NODES] that check_limit(node, array) keeps current */
static PyObject *configure_arrays(PyObject *module, PyObject *args) {
    PyObject *array_type, *max_nodes, *config, *check_limit;
    if (!PyArg_ParseTuple(args, "O!O!O!O:configure_arrays", &PyType_Type, &array_type,
                          &PyList_Type, &max_nodes, &PyModule_Type, &config, &check_limit))
        return NULL;
    if (!PyObject_IsSubclass(array_type, ArrayBaseType)) {
        PyErr_SetString(PyExc_TypeError, "configure_arrays: the array type must subclass "
                                         "ArrayBase");
        return NULL;
    }
    if (PyList_Size(max_nodes) < 2) {
        PyErr_SetString(PyExc_ValueError, "configure_arrays: max_nodes holds two numbers");
        return NULL;
    }
    keep((PyObject **)&ArrayType, array_type);
    array_alloc = (allocfunc)PyType_GetSlot(ArrayType, Py_tp_alloc);
    keep(&MaxNodes, max_nodes);
    keep(&ConfigGlobals, PyModule_GetDict(config));
    keep(&CheckLimitFn, check_limit);
    Py_RETURN_NONE;
}

/* install_operators({dunder name: Operator}): the Operators behind ArrayBase's slots */
static PyObject *install_operators(PyObject *module, PyObject *operators) {
    if (!PyDict_Check(operators)) {
        PyErr_SetString(PyExc_TypeError, "install_operators: a dict of Operators");
        return NULL;
    }
    for (int i = 0; i < nslots; i++) {
        PyObject *op = PyDict_GetItemString(operators, slot_names[i]);
        if (op != NULL && !PyObject_TypeCheck(op, (PyTypeObject *)OperatorType)) {
            PyErr_Format(PyExc_TypeError, "install_operators: %s is no Operator",
                         slot_names[i]);
            return NULL;
        }
    }
    for (int i = 0; i < nslots; i++)
        if (install_slot(i, PyDict_GetItemString(operators, slot_names[i])) < 0)
            return NULL;
    Py_RETURN_NONE;
}

static PyObject *slot_dunders(PyObject *module, PyObject *unused) {
    PyObject *names = PyTuple_New(nslots);
    for (int i = 0; names != NULL && i < nslots; i++) {
        PyObject *name = PyUnicode_FromString(slot_names[i]);
        if (name == NULL) {
            Py_CLEAR(names);
            break;
        }
        PyTuple_SetItem(names, i, name);
    }
    return names;
}

static PyObject *py_op_of(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 3 || !PyTuple_Check(args[0])) {
        PyErr_SetString(PyExc_TypeError, "op_of(inputs, attrs, aid)");
        return NULL;
    }
    Py_ssize_t n = PyTuple_Size(args[0]);
    PyObject *a = n >= 1 ? PyTuple_GetItem(args[0], 0) : NULL;
    PyObject *b = n == 2 ? PyTuple_GetItem(args[0], 1) : NULL;
    if ((n != 1 && n != 2) || !is_node(a) || (b != NULL && !is_node(b))) {
        PyErr_SetString(PyExc_TypeError, "op_of: one or two graph nodes");
        return NULL;
    }
    return n == 1 ? op_of1((Node *)a, args[1], args[2])
                  : op_of2((Node *)a, (Node *)b, args[1], args[2]);
}

static PyObject *py_op_scalar(PyObject *module, PyObject *args, PyObject *kwargs) {
    static char *names[] = {"node", "value", "dtype", "sid", "attrs", "aid", "scalar_first",
                            NULL};
    PyObject *node, *value, *dtype, *attrs, *aid, *sid;
    int first = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OOOOOO|p:op_scalar", names, &node, &value,
                                     &dtype, &sid, &attrs, &aid, &first))
        return NULL;
    if (!is_node(node)) {
        PyErr_SetString(PyExc_TypeError, "op_scalar: a graph node");
        return NULL;
    }
    return op_scalar((Node *)node, value, dtype, sid, attrs, aid, first);
}

static PyObject *py_scalar(PyObject *module, PyObject *args) {
    PyObject *value, *dtype, *sid;
    if (!PyArg_ParseTuple(args, "OOO:scalar", &value, &dtype, &sid))
        return NULL;
    if (ScalarType == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "scalar: configure() first");
        return NULL;
    }
    return (PyObject *)new_scalar(value, dtype, sid);
}

static PyObject *py_fresh_leaf(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 4 || NodeType == NULL || !PyLong_Check(args[3])) {
        PyErr_SetString(PyExc_TypeError, "fresh_leaf(buffer, dtype, view, sid), after configure()");
        return NULL;
    }
    return fresh_leaf(args[0], args[1], args[2], args[3]);
}

static PyObject *py_roots_params(PyObject *module, PyObject *roots) {
    if (!PyList_Check(roots)) {
        PyErr_SetString(PyExc_TypeError, "roots_params: a list of graph nodes");
        return NULL;
    }
    return roots_params(roots);
}

static PyObject *py_wrap(PyObject *module, PyObject *node) {
    if (ArrayType == NULL || !is_node(node)) {
        PyErr_SetString(PyExc_TypeError, "wrap: a graph node, after configure_arrays()");
        return NULL;
    }
    return wrap(ref(node));
}

static PyObject *py_pending_add(PyObject *module, PyObject *array) {
    if (!PyObject_TypeCheck(array, (PyTypeObject *)ArrayBaseType)) {
        PyErr_SetString(PyExc_TypeError, "pending_add: an array");
        return NULL;
    }
    if (pending_add((Array *)array) < 0)
        return NULL;
    Py_RETURN_NONE;
}

static PyObject *py_pending_readers(PyObject *module, PyObject *buffer) {
    return pending_readers(buffer);
}

static PyObject *py_pending_count(PyObject *module, PyObject *unused) {
    return PyLong_FromSsize_t(pending_count());
}

#define FASTCALL(fn) ((PyCFunction)(void (*)(void))(fn))

static PyMethodDef module_methods[] = {
    {"configure", configure, METH_VARARGS,
     "configure(Node, _Scalar, sids, sid, uids, broadcast_shapes, share_from): ir/graph's "
     "types and tables."},
    {"configure_scalars", configure_scalars, METH_VARARGS,
     "configure_scalars(scalar_nodes, intern_max): ir/scalarops' interned scalar nodes."},
    {"configure_arrays", configure_arrays, METH_VARARGS,
     "configure_arrays(ndarray, max_nodes, config, check_limit): api/array's type and node "
     "limit."},
    {"install_operators", install_operators, METH_O,
     "install_operators({dunder: Operator}): the Operator behind each of ArrayBase's "
     "operator slots."},
    {"slot_dunders", slot_dunders, METH_NOARGS, "The dunder names of ArrayBase's slots."},
    {"op_of", FASTCALL(py_op_of), METH_FASTCALL,
     "op_of(inputs, attrs, aid): graph.op_of for one or two inputs."},
    {"op_scalar", (PyCFunction)(void (*)(void))py_op_scalar, METH_VARARGS | METH_KEYWORDS,
     "op_scalar(node, value, dtype, sid, attrs, aid, scalar_first=False): scalarops.op_scalar."},
    {"scalar", py_scalar, METH_VARARGS, "scalar(value, dtype, sid): a scalar node."},
    {"fresh_leaf", FASTCALL(py_fresh_leaf), METH_FASTCALL,
     "fresh_leaf(buffer, dtype, view, sid): graph.fresh_leaf with its sid."},
    {"roots_params", py_roots_params, METH_O,
     "roots_params([root, ...]) -> (params, structure): params.roots_params."},
    {"wrap", py_wrap, METH_O, "wrap(node): array._wrap."},
    {"pending_add", py_pending_add, METH_O, "pending_add(array): register a pending array."},
    {"pending_readers", py_pending_readers, METH_O,
     "pending_readers(buffer): the registered arrays still pending that read buffer (None: "
     "only drop those computed), in creation order."},
    {"pending_count", py_pending_count, METH_NOARGS, "How many arrays are registered."},
    {"buffer_address", py_buffer_address, METH_O,
     "buffer_address(obj): the address of the first byte of the C-contiguous buffer obj "
     "exports, or None (no such buffer, or a build without the buffer protocol)."},
    {NULL, NULL, 0, NULL},
};

static int module_exec(PyObject *module) {
    if ((s_op = PyUnicode_InternFromString("op")) == NULL ||
        (s_scalar = PyUnicode_InternFromString("scalar")) == NULL ||
        (s_leaf = PyUnicode_InternFromString("leaf")) == NULL ||
        (s_same = PyUnicode_InternFromString("=")) == NULL ||
        (s_mirrored = PyUnicode_InternFromString("<")) == NULL ||
        (s_generation = PyUnicode_InternFromString("_generation")) == NULL ||
        (s_storage = PyUnicode_InternFromString("storage")) == NULL ||
        (s_fresh = PyUnicode_InternFromString("fresh")) == NULL ||
        (EmptyTuple = PyTuple_New(0)) == NULL ||
        (EmptyFrozenset = PyFrozenSet_New(NULL)) == NULL ||
        (Zero = PyLong_FromLong(0)) == NULL || (One = PyLong_FromLong(1)) == NULL)
        return -1;
    if ((NodeBaseType = PyType_FromSpec(&node_spec)) == NULL ||
        (ArrayBaseType = PyType_FromSpec(&array_spec)) == NULL ||
        (OperatorType = PyType_FromSpec(&operator_spec)) == NULL ||
        (GraphPackerType = PyType_FromSpec(&graph_packer_spec)) == NULL)
        return -1;
    if (PyModule_AddObjectRef(module, "NodeBase", NodeBaseType) < 0 ||
        PyModule_AddObjectRef(module, "ArrayBase", ArrayBaseType) < 0 ||
        PyModule_AddObjectRef(module, "Operator", OperatorType) < 0 ||
        PyModule_AddObjectRef(module, "GraphPacker", GraphPackerType) < 0)
        return -1;
    return 0;
}

static PyModuleDef_Slot module_slots[] = {
    {Py_mod_exec, module_exec},
    {0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "_fastgraph",
    "The graph's hot path in C (fusedarrays/ir/native.py says when it is used).",
    0, module_methods, module_slots, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__fastgraph(void) {
    return PyModuleDef_Init(&module_def);
}
