/* hikmah.semantic._vectors: a static model's embedding, int8 quantisation and similarities.
 *
 * Every write with the semantic channel on embeds its text and quantises the
 * vector (hikmah/embedding.py, hikmah/quantize.py); done in NumPy, a short text
 * cost about fifty microseconds in some twenty calls, a few of them real work.
 * Here each is one pass over the vector, with NumPy's arithmetic kept to the
 * last bit, so vectors made either way are equal (tests/kernel/test_vectors.py):
 *
 *   unit_sum  the rows of the token ids summed in order, in float32 (NumPy's
 *             sum over axis 0), divided by their norm, whose sum of squares is
 *             NumPy's pairwise sum (np.linalg.norm, np.add.reduce); a sum of
 *             norm 0 stays 0
 *   quantize  scale = max|x| / 127 and codes = rint(x / scale) clipped to
 *             [-127, 127], in float32; a zero row keeps scale 0
 *   similarities  the cosine of a query with the int8 rows of some ids, in one
 *             pass instead of some fifteen NumPy calls (three a recall)
 *   dots      the integer dot product of every int8 row with a query rounded to
 *             int16: an exact search's first pass (hikmah/vector_index.py), in
 *             integers so that the compiler may add them in any order, in SIMD
 *
 * setup.py builds it with -ffp-contract=off, so that no multiply-add is fused.
 */

#include <math.h>
#include <stdint.h>

#include "arrays.h"

#define LEVELS 127 /* quantize.LEVELS */
#define PAIRWISE_BLOCK 128 /* NumPy's PW_BLOCKSIZE */

/* NumPy's pairwise sum (loops_utils.h.src) of the float32 squares of ``a``: eight
 * running sums in blocks of up to 128, halves past that. Each square is rounded to
 * float32 before it is added, as NumPy squares first and sums after. */
static float pairwise_squares(const float *a, Py_ssize_t n) {
    if (n < 8) {
        float sum = 0.0f;
        for (Py_ssize_t i = 0; i < n; i++)
            sum += a[i] * a[i];
        return sum;
    }
    if (n <= PAIRWISE_BLOCK) {
        float r[8];
        Py_ssize_t i;
        for (int j = 0; j < 8; j++)
            r[j] = a[j] * a[j];
        for (i = 8; i < n - (n % 8); i += 8)
            for (int j = 0; j < 8; j++)
                r[j] += a[i + j] * a[i + j];
        float sum = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
        for (; i < n; i++)
            sum += a[i] * a[i];
        return sum;
    }
    Py_ssize_t half = n / 2;
    half -= half % 8;
    return pairwise_squares(a, half) + pairwise_squares(a + half, n - half);
}

static PyObject *unit_sum(PyObject *self, PyObject *args) {
    PyObject *table_obj, *ids_obj, *out_obj;
    Py_ssize_t dims;
    if (!PyArg_ParseTuple(args, "OnOO", &table_obj, &dims, &ids_obj, &out_obj))
        return NULL;
    Array a[2] = {0};
    PyObject *ids = NULL, *result = NULL;
    if (dims <= 0) {
        PyErr_SetString(PyExc_ValueError, "dimensions must be positive");
        goto done;
    }
    if (!borrow(table_obj, &a[0], F32, -1, 0, "table") ||
        !borrow(out_obj, &a[1], F32, dims, 1, "out"))
        goto done;
    if (a[0].view.shape[0] % dims) {
        PyErr_SetString(PyExc_ValueError, "table: not whole rows of the dimensions");
        goto done;
    }
    ids = PySequence_Fast(ids_obj, "ids: not a sequence");
    if (ids == NULL)
        goto done;
    const float *table = AT(a[0], float);
    float *out = AT(a[1], float);
    Py_ssize_t rows = a[0].view.shape[0] / dims, count = PySequence_Fast_GET_SIZE(ids);
    PyObject **items = PySequence_Fast_ITEMS(ids);
    memset(out, 0, (size_t)dims * sizeof(float));
    for (Py_ssize_t k = 0; k < count; k++) {
        Py_ssize_t id = PyNumber_AsSsize_t(items[k], PyExc_IndexError);
        if (id == -1 && PyErr_Occurred())
            goto done;
        if (id < 0 || id >= rows) {
            PyErr_Format(PyExc_IndexError, "token id %zd is not a row of the table", id);
            goto done;
        }
        const float *row = table + id * dims;
        for (Py_ssize_t j = 0; j < dims; j++)
            out[j] += row[j];
    }
    float norm = sqrtf(pairwise_squares(out, dims));
    for (Py_ssize_t j = 0; j < dims; j++)
        out[j] = norm > 0.0f ? out[j] / norm : 0.0f;
    result = Py_NewRef(Py_None);
done:
    Py_XDECREF(ids);
    release(a, 2);
    return result;
}

static PyObject *quantize(PyObject *self, PyObject *args) {
    PyObject *rows_obj, *codes_obj, *scales_obj;
    Py_ssize_t dims;
    if (!PyArg_ParseTuple(args, "OnOO", &rows_obj, &dims, &codes_obj, &scales_obj))
        return NULL;
    Array a[3] = {0};
    PyObject *result = NULL;
    if (dims < 0) {
        PyErr_SetString(PyExc_ValueError, "dimensions must not be negative");
        goto done;
    }
    if (!borrow(rows_obj, &a[0], F32, -1, 0, "rows") ||
        !borrow(scales_obj, &a[2], F32, -1, 1, "scales"))
        goto done;
    Py_ssize_t n = a[2].view.shape[0];
    if (a[0].view.shape[0] != n * dims) {
        PyErr_SetString(PyExc_ValueError, "rows: not one row of the dimensions per scale");
        goto done;
    }
    if (!borrow(codes_obj, &a[1], I8, n * dims, 1, "codes"))
        goto done;
    const float *x = AT(a[0], float);
    int8_t *codes = AT(a[1], int8_t);
    float *scales = AT(a[2], float);
    for (Py_ssize_t i = 0; i < n * dims; i++)
        if (!isfinite(x[i])) {
            PyErr_SetString(PyExc_ValueError, "vectors must be finite");
            goto done;
        }
    for (Py_ssize_t r = 0; r < n; r++, x += dims, codes += dims) {
        float peak = 0.0f;
        for (Py_ssize_t j = 0; j < dims; j++)
            peak = fabsf(x[j]) > peak ? fabsf(x[j]) : peak;
        float scale = peak / (float)LEVELS, safe = scale > 0.0f ? scale : 1.0f;
        scales[r] = scale;
        for (Py_ssize_t j = 0; j < dims; j++) {
            float code = rintf(x[j] / safe);
            codes[j] = (int8_t)(code < -LEVELS ? -LEVELS : (code > LEVELS ? LEVELS : code));
        }
    }
    result = Py_NewRef(Py_None);
done:
    release(a, 3);
    return result;
}

/* A query component rounded to a grid of 2**-24: every product with an int8 code and
 * every partial sum of 256 of them is exact in float64, so a dot product is the same
 * summed in any order (NumPy's BLAS adds a row's products in an order that depends on
 * where the row sits in the block). Two synced devices, which hold the same vectors
 * under other document numbers, score a trace alike. */
#define GRID 16777216.0

static PyObject *similarities(PyObject *self, PyObject *args) {
    PyObject *codes_obj, *scales_obj, *row_of_obj, *query_obj, *ids_obj, *out_obj;
    if (!PyArg_ParseTuple(args, "OOOOOO", &codes_obj, &scales_obj, &row_of_obj, &query_obj,
                          &ids_obj, &out_obj))
        return NULL;
    Array a[6] = {0};
    double *grid = NULL;
    PyObject *result = NULL;
    if (!borrow(codes_obj, &a[0], I8, -1, 0, "codes") ||
        !borrow(scales_obj, &a[1], F32, -1, 0, "scales") ||
        !borrow(row_of_obj, &a[2], I64, -1, 0, "row_of") ||
        !borrow(query_obj, &a[3], F32, -1, 0, "query") ||
        !borrow(ids_obj, &a[4], U64, -1, 0, "ids") ||
        !borrow(out_obj, &a[5], F32, a[4].view.shape[0], 1, "out"))
        goto done;
    Py_ssize_t dims = a[3].view.shape[0], rows = a[1].view.shape[0];
    if (dims == 0 || a[0].view.shape[0] != rows * dims) {
        PyErr_SetString(PyExc_ValueError, "codes: not one row of the query's length per scale");
        goto done;
    }
    grid = PyMem_Malloc((size_t)dims * sizeof(double));
    if (grid == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    const float *query = AT(a[3], float);
    for (Py_ssize_t j = 0; j < dims; j++)
        grid[j] = rint((double)query[j] * GRID) / GRID;
    const int8_t *codes = AT(a[0], int8_t);
    const float *scales = AT(a[1], float);
    const int64_t *row_of = AT(a[2], int64_t);
    const uint64_t *ids = AT(a[4], uint64_t);
    float *out = AT(a[5], float);
    uint64_t mapped = (uint64_t)a[2].view.shape[0];
    for (Py_ssize_t i = 0; i < a[4].view.shape[0]; i++) {
        int64_t row = ids[i] < mapped ? row_of[ids[i]] : -1;
        if (row < 0 || row >= rows) {
            out[i] = NAN; /* not held */
            continue;
        }
        const int8_t *code = codes + row * dims;
        double dot = 0.0;
        for (Py_ssize_t j = 0; j < dims; j++)
            dot += (double)code[j] * grid[j];
        out[i] = (float)(dot * (double)scales[row]);
    }
    result = Py_NewRef(Py_None);
done:
    PyMem_Free(grid);
    release(a, 6);
    return result;
}

/* A product of an int8 code and an int16 query component is below 127 * 32768 in
 * size; 512 of them add up to less than 2**31. */
#define DOT_BLOCK 512

/* GCC vectorizes the inner loop below at -O3 only (eight times faster: integer sums
 * may be added in any order); clang does at -O2 already. */
#if defined(__GNUC__) && !defined(__clang__)
#define VECTORIZED __attribute__((optimize("O3")))
#else
#define VECTORIZED
#endif

static VECTORIZED void dot_rows(const int8_t *codes, const int16_t *query, int64_t *out,
                                Py_ssize_t rows, Py_ssize_t dims) {
    for (Py_ssize_t i = 0; i < rows; i++) {
        const int8_t *code = codes + i * dims;
        int64_t dot = 0;
        for (Py_ssize_t start = 0; start < dims; start += DOT_BLOCK) {
            Py_ssize_t stop = start + DOT_BLOCK < dims ? start + DOT_BLOCK : dims;
            int32_t sum = 0;
            for (Py_ssize_t j = start; j < stop; j++)
                sum += (int16_t)code[j] * query[j];
            dot += sum;
        }
        out[i] = dot;
    }
}

static PyObject *dots(PyObject *self, PyObject *args) {
    PyObject *codes_obj, *query_obj, *out_obj;
    if (!PyArg_ParseTuple(args, "OOO", &codes_obj, &query_obj, &out_obj))
        return NULL;
    Array a[3] = {0};
    PyObject *result = NULL;
    if (!borrow(codes_obj, &a[0], I8, -1, 0, "codes") ||
        !borrow(query_obj, &a[1], I16, -1, 0, "query") ||
        !borrow(out_obj, &a[2], I64, -1, 1, "out"))
        goto done;
    Py_ssize_t dims = a[1].view.shape[0], rows = a[2].view.shape[0];
    if (dims == 0 || a[0].view.shape[0] != rows * dims) {
        PyErr_SetString(PyExc_ValueError, "codes: not one row of the query's length per out");
        goto done;
    }
    const int8_t *codes = AT(a[0], int8_t);
    const int16_t *query = AT(a[1], int16_t);
    int64_t *out = AT(a[2], int64_t);
    Py_BEGIN_ALLOW_THREADS
    dot_rows(codes, query, out, rows, dims);
    Py_END_ALLOW_THREADS
    result = Py_NewRef(Py_None);
done:
    release(a, 3);
    return result;
}

static PyMethodDef methods[] = {
    {"unit_sum", unit_sum, METH_VARARGS,
     "unit_sum(table, dimensions, ids, out): the unit vector of the table's rows ``ids`` "
     "(a flat float32 table of rows of ``dimensions``) summed, into ``out``; 0 for a sum of "
     "norm 0."},
    {"quantize", quantize, METH_VARARGS,
     "quantize(rows, dimensions, codes, scales): the int8 codes and the scale of each row "
     "(flat float32 rows of ``dimensions``, one per scale); ValueError for NaN or infinity."},
    {"similarities", similarities, METH_VARARGS,
     "similarities(codes, scales, row_of, query, ids, out): the cosine of ``query`` with the "
     "int8 row of each of ``ids`` (``row_of[id]``; flat codes, one row of the query's length "
     "per scale), into ``out``; NaN for an id without a row."},
    {"dots", dots, METH_VARARGS,
     "dots(codes, query, out): the dot product of each int8 row of ``codes`` (flat, one row "
     "of the int16 query's length per element of ``out``) with ``query``, into ``out`` "
     "(int64)."},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_vectors",
    "A static model's embedding, int8 quantisation and similarities.", -1, methods,
    NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__vectors(void) { return PyModule_Create(&module); }
