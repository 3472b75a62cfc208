/* fusedarrays.ir._fastgraph: the graph's hot path in C (ir/native.py says when it is used).
 *
 * Building a lazy expression is Python work per op; done in Python it cost 4-10 times a NumPy
 * ufunc call per op and bound lazy evaluation on the host (issue 12). Here an operator on
 * arrays and Python floats or ints whose loop was resolved before is one C call (operators.c:
 * look up the loop by the operands' dtype objects; nodes.c: build the node with its params,
 * sid, count and buffers; arrays.c: wrap it in a new pending array), and an evaluation seen
 * before binds its params to the kernel's arguments in C (packing.c). Anything else calls the
 * Python path, which stays the reference: tests/pure/test_native.py builds the same graphs both
 * ways and compares them node for node.
 *
 * The semantics are ir/graph.py's and ir/params.py's, which document them; functions here carry
 * their Python names. Everything runs under the GIL without calling Python code between reading
 * and writing a node's shared params (a dict appended in place, the right to append a popped
 * token list): the atomicity ir/params.py relies on.
 *
 * Limited API (3.10): one binary for every CPython from 3.10 on. packing.c alone asks for 3.11's
 * where the headers have it (the buffer protocol: BUFFERS below).
 */
#ifndef FUSEDARRAYS_FASTGRAPH_H
#define FUSEDARRAYS_FASTGRAPH_H

#ifndef Py_LIMITED_API
#define Py_LIMITED_API 0x030A0000
#endif
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>

#define IS_NONE(x) ((x) == NULL || (x) == Py_None)

/* ir/graph.Node's fields (NodeBase): C members, so that nodes are built here */
typedef struct {
    PyObject_HEAD
    PyObject *kind, *dtype, *shape, *inputs, *attrs;
    PyObject *sid;          /* ints: sid, _nparams, count */
    PyObject *params;       /* _params */
    PyObject *nparams;      /* _nparams */
    PyObject *open;         /* _open */
    PyObject *key;          /* _key */
    PyObject *count;
    PyObject *buffers;
    PyObject *realized;
    PyObject *weakrefs;
} Node;

/* api/array.ndarray's fields (ArrayBase) */
typedef struct {
    PyObject_HEAD
    PyObject *node, *view_of, *views, *weakrefs;
    Py_ssize_t pending;     /* 1 + its index in the pending registry, 0 where not in it */
} Array;

/* set by module.c's configure (ir/graph.py) and configure_arrays (api/array.py) */
extern PyObject *NodeBaseType, *ArrayBaseType, *OperatorType, *GraphPackerType;
extern PyTypeObject *NodeType, *ScalarType, *ArrayType;
extern allocfunc node_alloc, scalar_alloc, array_alloc;
extern PyObject *Sids, *SidFn, *Uids, *BroadcastFn;
extern Py_ssize_t ShareFrom, InternMax;
extern PyObject *ScalarNodes;     /* scalarops._scalar_nodes: scalar sid → {value: node} */
extern PyObject *MaxNodes, *ConfigGlobals, *CheckLimitFn;
extern PyObject *s_op, *s_scalar, *s_leaf, *s_same, *s_mirrored, *s_generation, *s_storage,
    *s_fresh,
    *EmptyTuple, *EmptyFrozenset, *Zero, *One;

static inline void set_ref(PyObject **slot, PyObject *value) {   /* steals value */
    PyObject *old = *slot;
    *slot = value;
    Py_XDECREF(old);
}

static inline PyObject *ref(PyObject *o) {
    Py_INCREF(o);
    return o;
}

/* Nodes, arrays and the tuples and dicts made here form no reference cycles (a graph is a DAG
   whose leaves' buffers hold their nodes by weak reference), so the cyclic collector has
   nothing to find in them: untracked, they cost it nothing (it was a sixth of an operator's
   time, scanning the young objects every few hundred allocations). */
static inline PyObject *untracked(PyObject *o) {
    if (o != NULL)
        PyObject_GC_UnTrack(o);
    return o;
}

static inline int is_node(PyObject *o) {
    return NodeType != NULL && PyObject_TypeCheck(o, NodeType);
}

/* nodes.c */
extern PyType_Spec node_spec;
PyObject *op_of1(Node *a, PyObject *attrs, PyObject *aid);
PyObject *op_of2(Node *a, Node *b, PyObject *attrs, PyObject *aid);
Node *new_scalar(PyObject *value, PyObject *dtype, PyObject *sid);
PyObject *fresh_leaf(PyObject *buffer, PyObject *dtype, PyObject *view, PyObject *sid);
Node *interned_scalar(PyObject *value, PyObject *dtype, PyObject *sid);
PyObject *op_scalar(Node *node, PyObject *value, PyObject *sdtype, PyObject *ssid,
                    PyObject *attrs, PyObject *aid, int scalar_first);
PyObject *roots_params(PyObject *roots);

/* arrays.c */
extern PyMemberDef array_members[];
int array_traverse(Array *self, visitproc visit, void *arg);
int array_clear(Array *self);
void array_dealloc(Array *self);
PyObject *wrap(PyObject *node);
Node *resolved(Array *array);
int pending_add(Array *array);
PyObject *pending_readers(PyObject *buffer);
Py_ssize_t pending_count(void);

/* operators.c */
extern PyType_Spec operator_spec, array_spec;
extern const char *slot_names[];
extern int nslots;
int install_slot(int slot, PyObject *op);

/* packing.c */
extern PyType_Spec graph_packer_spec;
PyObject *py_buffer_address(PyObject *module, PyObject *obj);

#endif
