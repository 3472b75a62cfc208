/* The module fusedarrays.cuda._fastlaunch: a kernel launch packed in C and handed to the
 * driver's cuLaunchKernel, for cuda/launch.py's Launcher.
 *
 * Why: cuda.core.launch converts each argument through Python objects, about 0.3 µs an
 * argument over the driver's ~5 µs (a launch of Black-Scholes' kernel: 23 µs on the H100
 * host). Here the arguments are read into one stack buffer by a code per parameter decided
 * when the kernel was loaded, then passed to the driver in one call.
 *
 * The extension links nothing from CUDA: Python hands over the address of cuLaunchKernel
 * (from the libcuda.so that cuda.core already loaded), the kernel's handle (a CUkernel, which
 * cuLaunchKernel takes in place of a CUfunction and launches in the current context) and the
 * stream's handle. Where it also hands over a context and the addresses of cuCtxGetCurrent and
 * cuCtxSetCurrent, each launch first makes that context current in the calling thread if another
 * one is, and makes the other one current again after it: another library may have chosen the
 * thread's device, and keeps it (cuda/context.py). A failed launch returns the driver's error code, and the caller repeats the
 * launch through cuda.core, which raises its own error with the driver's message.
 *
 * Parameter codes, one a kernel parameter (n first), each value in an 8-byte slot:
 *   q  8-byte integer (a pointer, int64 or uint64)   i/I  int32/uint32   h/H  int16/uint16
 *   b/B  int8/uint8   ?  bool as a byte   f  float32 (float16 travels as float32)
 *   d  float64   F/D  complex64/complex128, as two float32/float64 parameters (numba's way)
 */
#define PY_SSIZE_T_CLEAN
#define Py_LIMITED_API 0x030A0000
#include <Python.h>
#include <stdint.h>
#include <string.h>

typedef int (*launch_fn)(void *function, unsigned grid_x, unsigned grid_y, unsigned grid_z,
                         unsigned block_x, unsigned block_y, unsigned block_z,
                         unsigned shared_bytes, void *stream, void **params, void **extra);
typedef int (*get_context_fn)(void **context);
typedef int (*set_context_fn)(void *context);

#define STACK_SLOTS 128

typedef struct {
    PyObject_HEAD
    launch_fn launch;
    void *function;
    void *stream;
    char *codes;            /* one code a parameter, n's first; NUL-terminated */
    Py_ssize_t nargs;       /* parameters after n */
    Py_ssize_t nslots;      /* 8-byte slots: a complex parameter takes two */
    void *context;          /* made current before each launch; NULL: the current one */
    get_context_fn get_context;
    set_context_fn set_context;
} Launch;

static PyObject *LaunchType;

/* Make `context` current in this thread where another one (or none) is: *previous is that one
   (NULL where `context` was current already, or none was); the driver's status. */
static int swap_context(void *context, get_context_fn get, set_context_fn set, void **previous) {
    void *current = NULL;
    int status = get(&current);
    *previous = NULL;
    if (status != 0 || current == context)
        return status;
    status = set(context);
    if (status == 0)
        *previous = current;
    return status;
}

/* swap_context(context, get_address, set_address): (status, the context that was current and
   is to be made current again, or 0). */
static PyObject *py_swap_context(PyObject *module, PyObject *args) {
    unsigned long long context, get, set;
    if (!PyArg_ParseTuple(args, "KKK:swap_context", &context, &get, &set))
        return NULL;
    if (get == 0 || set == 0) {
        PyErr_SetString(PyExc_ValueError, "swap_context needs cuCtxGetCurrent's and "
                                          "cuCtxSetCurrent's addresses");
        return NULL;
    }
    void *previous = NULL;
    int status = swap_context((void *)(uintptr_t)context, (get_context_fn)(uintptr_t)get,
                              (set_context_fn)(uintptr_t)set, &previous);
    return Py_BuildValue("(iK)", status, (unsigned long long)(uintptr_t)previous);
}

/* An integer argument as a C long long within [low, high] (high as unsigned for uint64). */
static int int_in(PyObject *value, long long low, unsigned long long high, unsigned long long *out,
                  char code) {
    PyObject *index = PyLong_Check(value) ? (Py_INCREF(value), value) : PyNumber_Index(value);
    if (index == NULL)
        return -1;
    int overflow = 0;
    long long signed_value = PyLong_AsLongLongAndOverflow(index, &overflow);
    if (signed_value == -1 && PyErr_Occurred()) {
        Py_DECREF(index);
        return -1;
    }
    if (overflow > 0 && high == UINT64_MAX) {           /* uint64 (or an address) above 2^63 */
        unsigned long long unsigned_value = PyLong_AsUnsignedLongLong(index);
        Py_DECREF(index);
        if (unsigned_value == (unsigned long long)-1 && PyErr_Occurred())
            return -1;
        *out = unsigned_value;
        return 0;
    }
    Py_DECREF(index);
    if (overflow || signed_value < low ||
        (signed_value >= 0 && (unsigned long long)signed_value > high)) {
        PyErr_Format(PyExc_OverflowError, "kernel argument %R is out of bounds for its "
                     "parameter type (code '%c')", value, code);
        return -1;
    }
    *out = (unsigned long long)signed_value;
    return 0;
}

/* Read one argument into its slot(s); returns the slots used, or -1 with an exception set. */
static int pack_one(char code, PyObject *value, uint64_t *slot) {
    unsigned long long integer;
    double real;
    float single;
    memset(slot, 0, sizeof(uint64_t));
    switch (code) {
    case 'q':
        if (int_in(value, INT64_MIN, UINT64_MAX, &integer, code) < 0)
            return -1;
        memcpy(slot, &integer, 8);
        return 1;
    case 'i': case 'I': case 'h': case 'H': case 'b': case 'B': {
        long long low = code == 'i' ? INT32_MIN : code == 'h' ? INT16_MIN :
                        code == 'b' ? INT8_MIN : 0;
        unsigned long long high = code == 'i' ? INT32_MAX : code == 'I' ? UINT32_MAX :
                                  code == 'h' ? INT16_MAX : code == 'H' ? UINT16_MAX :
                                  code == 'b' ? INT8_MAX : UINT8_MAX;
        if (int_in(value, low, high, &integer, code) < 0)
            return -1;
        if (code == 'i' || code == 'I') {
            uint32_t v = (uint32_t)integer;
            memcpy(slot, &v, 4);
        } else if (code == 'h' || code == 'H') {
            uint16_t v = (uint16_t)integer;
            memcpy(slot, &v, 2);
        } else {
            uint8_t v = (uint8_t)integer;
            memcpy(slot, &v, 1);
        }
        return 1;
    }
    case '?': {
        int truth = PyObject_IsTrue(value);
        if (truth < 0)
            return -1;
        uint8_t v = (uint8_t)truth;
        memcpy(slot, &v, 1);
        return 1;
    }
    case 'f': case 'd':
        real = PyFloat_AsDouble(value);
        if (real == -1.0 && PyErr_Occurred())
            return -1;
        if (code == 'f') {
            single = (float)real;   /* rounded to nearest, as NumPy's float32(x) */
            memcpy(slot, &single, 4);
        } else {
            memcpy(slot, &real, 8);
        }
        return 1;
    case 'F': case 'D': {
        PyObject *complex = PyObject_CallFunctionObjArgs((PyObject *)&PyComplex_Type, value, NULL);
        if (complex == NULL)
            return -1;
        double parts[2] = {PyComplex_RealAsDouble(complex), PyComplex_ImagAsDouble(complex)};
        Py_DECREF(complex);
        if (PyErr_Occurred())
            return -1;
        memset(slot + 1, 0, sizeof(uint64_t));
        for (int k = 0; k < 2; k++) {
            if (code == 'F') {
                single = (float)parts[k];
                memcpy(slot + k, &single, 4);
            } else {
                memcpy(slot + k, &parts[k], 8);
            }
        }
        return 2;
    }
    }
    PyErr_Format(PyExc_ValueError, "unknown kernel parameter code '%c'", code);
    return -1;
}

static int grid_part(PyObject *config, Py_ssize_t k, unsigned *out) {
    PyObject *item = PyTuple_GetItem(config, k);
    if (item == NULL)
        return -1;
    unsigned long value = PyLong_AsUnsignedLong(item);
    if (value == (unsigned long)-1 && PyErr_Occurred())
        return -1;
    *out = (unsigned)value;
    return 0;
}

/* launch(config, n, args): config a tuple (grid x, y, z, block x, y, z, ...); args a list or
   tuple of the parameters after n. Returns None once queued, else the driver's error code. */
static PyObject *Launch_call(PyObject *self_object, PyObject *call_args, PyObject *kwargs) {
    Launch *self = (Launch *)self_object;
    PyObject *config, *n, *args;
    if (kwargs != NULL && PyDict_Size(kwargs)) {
        PyErr_SetString(PyExc_TypeError, "a launch takes no keyword arguments");
        return NULL;
    }
    if (!PyArg_UnpackTuple(call_args, "launch", 3, 3, &config, &n, &args))
        return NULL;
    unsigned dims[6];
    if (!PyTuple_Check(config)) {
        PyErr_SetString(PyExc_TypeError, "a launch's config is (grid x, y, z, block x, y, z, ...)");
        return NULL;
    }
    for (Py_ssize_t k = 0; k < 6; k++)
        if (grid_part(config, k, &dims[k]) < 0)
            return NULL;
    int is_list = PyList_Check(args);
    if (!is_list && !PyTuple_Check(args)) {
        PyErr_SetString(PyExc_TypeError, "a launch's arguments are a list or a tuple");
        return NULL;
    }
    Py_ssize_t given = is_list ? PyList_Size(args) : PyTuple_Size(args);
    if (given != self->nargs) {
        PyErr_Format(PyExc_ValueError, "the kernel takes %zd arguments after n, got %zd",
                     self->nargs, given);
        return NULL;
    }
    uint64_t stack_values[STACK_SLOTS];
    void *stack_params[STACK_SLOTS];
    uint64_t *values = stack_values;
    void **params = stack_params;
    if (self->nslots > STACK_SLOTS) {
        values = PyMem_Malloc(self->nslots * sizeof(uint64_t));
        params = PyMem_Malloc(self->nslots * sizeof(void *));
        if (values == NULL || params == NULL) {
            PyMem_Free(values == stack_values ? NULL : values);
            PyMem_Free(params == stack_params ? NULL : params);
            return PyErr_NoMemory();
        }
    }
    PyObject *result = NULL;
    Py_ssize_t slot = 0;
    int used = pack_one(self->codes[0], n, values);
    if (used < 0)
        goto done;
    slot += used;
    for (Py_ssize_t k = 0; k < self->nargs; k++) {
        /* held while read: converting it may run Python code that changes the list */
        PyObject *value = is_list ? PyList_GetItem(args, k) : PyTuple_GetItem(args, k);
        if (value == NULL)
            goto done;
        Py_INCREF(value);
        used = pack_one(self->codes[k + 1], value, values + slot);
        Py_DECREF(value);
        if (used < 0)
            goto done;
        slot += used;
    }
    for (Py_ssize_t k = 0; k < slot; k++)
        params[k] = values + k;
    void *previous = NULL;
    int status = self->context == NULL ? 0 :
        swap_context(self->context, self->get_context, self->set_context, &previous);
    if (status != 0) {
        result = PyLong_FromLong(status);
        goto done;
    }
    status = self->launch(self->function, dims[0], dims[1], dims[2], dims[3], dims[4],
                          dims[5], 0, self->stream, params, NULL);
    if (previous != NULL)   /* the other library's context, current again */
        self->set_context(previous);
    if (status == 0) {
        Py_INCREF(Py_None);
        result = Py_None;
    } else {
        result = PyLong_FromLong(status);
    }
done:
    if (values != stack_values) {
        PyMem_Free(values);
        PyMem_Free(params);
    }
    return result;
}

/* Launch(launch_address, kernel_handle, stream_handle, codes[, context, get_address,
   set_address]) */
static PyObject *Launch_new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
    unsigned long long launch_address, function, stream, context = 0, get = 0, set = 0;
    const char *codes;
    Py_ssize_t ncodes;
    if (kwargs != NULL && PyDict_Size(kwargs)) {
        PyErr_SetString(PyExc_TypeError, "Launch takes no keyword arguments");
        return NULL;
    }
    if (!PyArg_ParseTuple(args, "KKKs#|KKK:Launch", &launch_address, &function, &stream, &codes,
                          &ncodes, &context, &get, &set))
        return NULL;
    if (context != 0 && (get == 0 || set == 0)) {
        PyErr_SetString(PyExc_ValueError, "Launch with a context needs cuCtxGetCurrent's and "
                                          "cuCtxSetCurrent's addresses");
        return NULL;
    }
    if (launch_address == 0 || ncodes == 0) {
        PyErr_SetString(PyExc_ValueError, "Launch needs the driver's cuLaunchKernel address and "
                                          "a code for n at least");
        return NULL;
    }
    Py_ssize_t nslots = 0;
    for (Py_ssize_t k = 0; k < ncodes; k++) {
        if (strchr("qiIhHbB?fdFD", codes[k]) == NULL || codes[k] == '\0') {
            PyErr_Format(PyExc_ValueError, "unknown kernel parameter code '%c'", codes[k]);
            return NULL;
        }
        nslots += codes[k] == 'F' || codes[k] == 'D' ? 2 : 1;
    }
    allocfunc alloc = (allocfunc)PyType_GetSlot(type, Py_tp_alloc);
    Launch *self = (Launch *)alloc(type, 0);
    if (self == NULL)
        return NULL;
    self->codes = PyMem_Malloc(ncodes + 1);
    if (self->codes == NULL) {
        Py_DECREF(self);
        return PyErr_NoMemory();
    }
    memcpy(self->codes, codes, ncodes);
    self->codes[ncodes] = '\0';
    self->launch = (launch_fn)(uintptr_t)launch_address;
    self->function = (void *)(uintptr_t)function;
    self->stream = (void *)(uintptr_t)stream;
    self->nargs = ncodes - 1;
    self->nslots = nslots;
    self->context = (void *)(uintptr_t)context;
    self->get_context = (get_context_fn)(uintptr_t)get;
    self->set_context = (set_context_fn)(uintptr_t)set;
    return (PyObject *)self;
}

static void Launch_dealloc(PyObject *self) {
    PyTypeObject *type = Py_TYPE(self);
    PyMem_Free(((Launch *)self)->codes);
    freefunc free_slot = (freefunc)PyType_GetSlot(type, Py_tp_free);
    free_slot(self);
    Py_DECREF(type);
}

static PyObject *Launch_codes(PyObject *self, void *closure) {
    return PyUnicode_FromString(((Launch *)self)->codes);
}

static PyGetSetDef Launch_getset[] = {
    {"codes", Launch_codes, NULL, "the parameter codes, n's first", NULL},
    {NULL},
};

static PyType_Slot Launch_slots[] = {
    {Py_tp_new, Launch_new},
    {Py_tp_dealloc, Launch_dealloc},
    {Py_tp_call, Launch_call},
    {Py_tp_getset, Launch_getset},
    {Py_tp_doc, "Launch(launch_address, kernel_handle, stream_handle, codes[, context, "
                "get_address, set_address]): launch(config, n, args) packs and queues one "
                "launch (module docstring)."},
    {0, NULL},
};

static PyType_Spec Launch_spec = {
    "fusedarrays.cuda._fastlaunch.Launch", sizeof(Launch), 0, Py_TPFLAGS_DEFAULT, Launch_slots,
};

static int exec_module(PyObject *module) {
    LaunchType = PyType_FromSpec(&Launch_spec);
    if (LaunchType == NULL)
        return -1;
    Py_INCREF(LaunchType);
    if (PyModule_AddObject(module, "Launch", LaunchType) < 0) {
        Py_DECREF(LaunchType);
        return -1;
    }
    return 0;
}

static PyModuleDef_Slot module_slots[] = {
    {Py_mod_exec, exec_module},
    {0, NULL},
};

static PyMethodDef module_methods[] = {
    {"swap_context", py_swap_context, METH_VARARGS,
     "swap_context(context, get_address, set_address): make the context current in this "
     "thread where another one is; (status, that other context or 0)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "fusedarrays.cuda._fastlaunch",
    "A kernel launch packed in C for cuda/launch.py (the source's header says why).", 0,
    module_methods, module_slots,
};

PyMODINIT_FUNC PyInit__fastlaunch(void) {
    return PyModuleDef_Init(&module_def);
}
