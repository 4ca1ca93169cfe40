/* Arrays through the buffer protocol, for hikmah's C modules (scoring.c, vectors.c):
 * one-dimensional and contiguous, borrowed for one call and released after it; results
 * go into arrays the caller allocated, so no module needs NumPy's headers. */

#ifndef HIKMAH_ARRAYS_H
#define HIKMAH_ARRAYS_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <string.h>

/* The element kinds handed over, by the buffer protocol's format letters. */
typedef enum { F64, F32, I64, U64, U32, I16, U16, U8, I8 } Kind;

typedef struct {
    Py_buffer view;
    int held;
} Array;

static inline int kind_matches(const Py_buffer *view, Kind kind) {
    const char *format = view->format ? view->format : "B";
    char letter = format[strlen(format) - 1]; /* past any byte-order mark */
    switch (kind) {
    case F64: return letter == 'd' && view->itemsize == 8;
    case F32: return letter == 'f' && view->itemsize == 4;
    case I64: return (letter == 'l' || letter == 'q') && view->itemsize == 8;
    case U64: return (letter == 'L' || letter == 'Q') && view->itemsize == 8;
    case U32: return (letter == 'I' || letter == 'L') && view->itemsize == 4;
    case I16: return letter == 'h' && view->itemsize == 2;
    case U16: return letter == 'H' && view->itemsize == 2;
    case U8: return (letter == 'B' || letter == '?') && view->itemsize == 1;
    case I8: return letter == 'b' && view->itemsize == 1;
    }
    return 0;
}

/* Borrow ``obj`` as a contiguous one-dimensional array of ``kind`` (``n`` long
 * unless n < 0); 0 and an exception when it is not one. */
static inline int borrow(PyObject *obj, Array *a, Kind kind, Py_ssize_t n, int writable,
                         const char *name) {
    int flags = PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | (writable ? PyBUF_WRITABLE : 0);
    if (PyObject_GetBuffer(obj, &a->view, flags) < 0)
        return 0;
    a->held = 1;
    if (a->view.ndim != 1 || !kind_matches(&a->view, kind)) {
        PyErr_Format(PyExc_TypeError, "%s: not a one-dimensional array of the expected type",
                     name);
        return 0;
    }
    if (n >= 0 && a->view.shape[0] != n) {
        PyErr_Format(PyExc_ValueError, "%s: %zd elements, not %zd", name, a->view.shape[0], n);
        return 0;
    }
    return 1;
}

static inline void release(Array *arrays, int count) {
    for (int i = 0; i < count; i++)
        if (arrays[i].held) {
            PyBuffer_Release(&arrays[i].view);
            arrays[i].held = 0;
        }
}

#define AT(array, type) ((type *)(array).view.buf)

#endif
