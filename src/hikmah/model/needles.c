/* hikmah.model._needles: which of many short substrings a text holds, in one call.
 *
 * The credential detector (hikmah/secrets.py) runs on every field of every write
 * and first asks which of some hundred needles ("ghp_", "AKIA", "password", ...)
 * a text holds: only the shapes and checks a needle of the text names run at all.
 * Asked in Python, one `in` a needle, that question cost about as much as all the
 * rest of the detector for a short field; here it is one pass of memmem a needle.
 *
 * Texts and needles are bytes (the detector's are UTF-8): a UTF-8 text holds a
 * needle's bytes exactly when it holds the needle. A needle whose first two bytes
 * are nowhere next to each other in the text is passed over without a search: one
 * pass over the text marks the pairs it has, and most needles' pairs are not among a
 * field's few hundred.
 */

#define _GNU_SOURCE /* memmem */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#define PAIR(a, b) (((unsigned)(unsigned char)(a) << 8) | (unsigned char)(b))
#define MARKED(pairs, pair) ((pairs)[(pair) >> 6] >> ((pair) & 63) & 1)

/* Marks (or clears) in ``pairs`` every two bytes next to each other in ``text``. */
static void mark_pairs(uint64_t *pairs, const char *text, Py_ssize_t size, int on) {
    for (Py_ssize_t i = 0; i + 1 < size; i++) {
        unsigned pair = PAIR(text[i], text[i + 1]);
        if (on)
            pairs[pair >> 6] |= (uint64_t)1 << (pair & 63);
        else
            pairs[pair >> 6] = 0;
    }
}

static PyObject *found(PyObject *self, PyObject *args) {
    const char *text;
    Py_ssize_t size;
    PyObject *needles;
    if (!PyArg_ParseTuple(args, "y#O!", &text, &size, &PyTuple_Type, &needles))
        return NULL;
    PyObject *result = PyList_New(0);
    if (result == NULL)
        return NULL;
    static uint64_t pairs[65536 / 64]; /* all clear between calls; the GIL is held */
    mark_pairs(pairs, text, size, 1);
    Py_ssize_t count = PyTuple_GET_SIZE(needles);
    for (Py_ssize_t i = 0; i < count; i++) {
        PyObject *needle = PyTuple_GET_ITEM(needles, i);
        if (!PyBytes_Check(needle) || PyBytes_GET_SIZE(needle) == 0) {
            PyErr_SetString(PyExc_TypeError, "needles: a tuple of non-empty bytes");
            Py_CLEAR(result);
            break;
        }
        const char *bytes = PyBytes_AS_STRING(needle);
        Py_ssize_t length = PyBytes_GET_SIZE(needle);
        if (length > size || (length > 1 && !MARKED(pairs, PAIR(bytes[0], bytes[1]))) ||
            memmem(text, (size_t)size, bytes, (size_t)length) == NULL)
            continue;
        PyObject *index = PyLong_FromSsize_t(i);
        if (index == NULL || PyList_Append(result, index) < 0) {
            Py_XDECREF(index);
            Py_CLEAR(result);
            break;
        }
        Py_DECREF(index);
    }
    mark_pairs(pairs, text, size, 0);
    return result;
}

static PyMethodDef methods[] = {
    {"found", found, METH_VARARGS,
     "found(text, needles): the positions in ``needles`` (a tuple of non-empty bytes) of "
     "those ``text`` (bytes) holds, in order."},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_needles", "Which of many short substrings a text holds.", -1,
    methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__needles(void) { return PyModule_Create(&module); }
