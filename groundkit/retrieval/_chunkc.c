/* The chunk -> code table of BM25 index builds (optional, compiled).
 *
 * Used by groundkit/retrieval/bm25_tokens.py (CompiledChunks) in place of its Python
 * tables: a build looks up every chunk of every text (tens of millions of them), and in
 * Python each costs a bytes object, a hash and a dict probe that misses the CPU cache.
 * Here a batch's buffer is split on ASCII whitespace, exactly as bytes.split() cuts it,
 * and each chunk is found in an open-addressing table (linear probing, FNV-1a hashes)
 * whose keys live in one byte arena, without creating a Python object per chunk.
 *
 * A chunk the table has never seen is entered as pending: lookup() hands back, besides
 * every chunk's code, the new chunks in order of first sight and the positions whose code
 * is still a pending index (into those new chunks); Python analyses them and settle()
 * records their codes. A lookup before the last one was settled is refused.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#define GK_CHUNKS_VERSION 1
#define PENDING 0x80000000u /* in slot_t.len: the value is an index into the pending list */

/* 16 bytes, so that more of the table stays in the CPU cache: a build's table holds
 * hundreds of thousands of chunks, and a miss per lookup was most of its time. */
typedef struct {
    uint32_t tag; /* the hash's high half (its low bits place the slot) */
    uint32_t len; /* 0: an empty slot (a chunk is never empty) */
    int32_t value;
    uint32_t off; /* into the arena */
} slot_t;

typedef struct {
    PyObject_HEAD
    slot_t *slots;
    size_t cap, used; /* cap is a power of two, at most three quarters used */
    char *arena;
    size_t arena_len, arena_cap;
    size_t *pending; /* the slot of each unsettled chunk */
    size_t n_pending, pending_cap;
} table_t;

#define PAD 8 /* zero bytes after the arena and the scratch copy: a word read never passes */

/* The first n bytes at p (1..8) as a word, the bytes after them read as zero; the 8
 * bytes at p must be readable. Words are compared and hashed, never stored. */
static inline uint64_t word_at(const unsigned char *p, size_t n) {
    uint64_t w;
    memcpy(&w, p, 8);
    if (n >= 8) {
        return w;
    }
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    return w & ~(UINT64_MAX >> (8 * n));
#else
    return w & ((1ull << (8 * n)) - 1);
#endif
}

static inline uint64_t hash_bytes(const unsigned char *p, size_t n) {
    uint64_t h = n * 0x9e3779b97f4a7c15ull;
    for (; n > 8; n -= 8, p += 8) {
        h = (h ^ word_at(p, 8)) * 0xff51afd7ed558ccdull;
    }
    h = (h ^ word_at(p, n)) * 0xff51afd7ed558ccdull;
    h ^= h >> 33; /* murmur3's finaliser */
    h *= 0xc4ceb9fe1a85ec53ull;
    return h ^ (h >> 33);
}

static inline int same_bytes(const unsigned char *a, const unsigned char *b, size_t n) {
    for (; n > 8; n -= 8, a += 8, b += 8) {
        if (word_at(a, 8) != word_at(b, 8)) {
            return 0;
        }
    }
    return word_at(a, n) == word_at(b, n);
}

/* The slot holding chunk p[0:n], or the empty slot where it would go. */
static size_t probe(const table_t *t, const char *p, uint32_t n, uint64_t h) {
    size_t mask = t->cap - 1, i = (size_t)h & mask;
    for (;;) {
        const slot_t *s = &t->slots[i];
        if (s->len == 0 || (s->tag == (uint32_t)(h >> 32) && (s->len & ~PENDING) == n &&
                            same_bytes((const unsigned char *)t->arena + s->off,
                                       (const unsigned char *)p, n))) {
            return i;
        }
        i = (i + 1) & mask;
    }
}

static int grow_slots(table_t *t) {
    size_t cap = t->cap * 2, mask = cap - 1;
    slot_t *slots = PyMem_Calloc(cap, sizeof(slot_t));
    if (slots == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    for (size_t j = 0; j < t->cap; j++) {
        const slot_t *s = &t->slots[j];
        if (s->len == 0) {
            continue;
        }
        size_t i = (size_t)hash_bytes((const unsigned char *)t->arena + s->off,
                                      s->len & ~PENDING) & mask;
        while (slots[i].len != 0) {
            i = (i + 1) & mask;
        }
        slots[i] = *s;
        if (s->len & PENDING) {
            t->pending[s->value] = i;
        }
    }
    PyMem_Free(t->slots);
    t->slots = slots;
    t->cap = cap;
    return 0;
}

/* Room for `extra` more items of `size` bytes in *buf (holding `len`, room for *cap). */
static int reserve(void **buf, size_t *cap, size_t len, size_t extra, size_t size) {
    if (len + extra <= *cap) {
        return 0;
    }
    size_t want = *cap ? *cap : 1024;
    while (want < len + extra) {
        want *= 2;
    }
    void *grown = PyMem_Realloc(*buf, want * size);
    if (grown == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    *buf = grown;
    *cap = want;
    return 0;
}

/* Enter chunk p[0:n] (not in the table; its empty slot is `i`) as pending. */
static int enter(table_t *t, size_t i, const char *p, uint32_t n, uint64_t h) {
    if ((t->used + 1) * 4 > t->cap * 3) {
        if (grow_slots(t) < 0) {
            return -1;
        }
        i = probe(t, p, n, h);
    }
    if (t->arena_len + n > UINT32_MAX) {
        PyErr_SetString(PyExc_OverflowError, "a chunk table holds fewer than 2**32 bytes");
        return -1;
    }
    if (reserve((void **)&t->arena, &t->arena_cap, t->arena_len, n + PAD, 1) < 0 ||
        reserve((void **)&t->pending, &t->pending_cap, t->n_pending, 1, sizeof(size_t)) < 0) {
        return -1;
    }
    memcpy(t->arena + t->arena_len, p, n);
    memset(t->arena + t->arena_len + n, 0, PAD);
    t->slots[i] = (slot_t){(uint32_t)(h >> 32), n | PENDING, (int32_t)t->n_pending,
                           (uint32_t)t->arena_len};
    t->arena_len += n;
    t->pending[t->n_pending++] = i;
    t->used++;
    return 0;
}

/* The code of each chunk of p[0:n] into codes (*count of them), and the positions of
 * pending codes into *positions. p is followed by PAD readable bytes. */
typedef struct {
    int32_t *codes, *positions;
    size_t count, n_positions, positions_cap;
} found_t;

static int fill(table_t *t, const char *p, Py_ssize_t n, found_t *out, PyObject *fresh) {
    Py_ssize_t at = 0;
    for (;;) {
        while (at < n && Py_ISSPACE(p[at])) {
            at++;
        }
        if (at == n) {
            return 0;
        }
        Py_ssize_t start = at;
        while (at < n && !Py_ISSPACE(p[at])) {
            at++;
        }
        uint32_t len = (uint32_t)(at - start);
        uint64_t h = hash_bytes((const unsigned char *)p + start, len);
        size_t i = probe(t, p + start, len, h);
        if (t->slots[i].len == 0) {
            PyObject *chunk = PyBytes_FromStringAndSize(p + start, len);
            if (chunk == NULL || PyList_Append(fresh, chunk) < 0 ||
                enter(t, i, p + start, len, h) < 0) {
                Py_XDECREF(chunk);
                return -1;
            }
            Py_DECREF(chunk);
            i = t->pending[t->n_pending - 1];
        }
        const slot_t *s = &t->slots[i];
        if (s->len & PENDING) {
            if (reserve((void **)&out->positions, &out->positions_cap, out->n_positions, 1,
                        sizeof(int32_t)) < 0) {
                return -1;
            }
            out->positions[out->n_positions++] = (int32_t)out->count;
        }
        out->codes[out->count++] = s->value;
    }
}

static PyObject *table_lookup(table_t *t, PyObject *arg) {
    if (t->n_pending) {
        PyErr_SetString(PyExc_RuntimeError, "lookup() before the last lookup was settled");
        return NULL;
    }
    Py_buffer view;
    if (PyObject_GetBuffer(arg, &view, PyBUF_SIMPLE) < 0) {
        return NULL;
    }
    PyObject *codes = NULL, *positions = NULL, *fresh = NULL, *result = NULL;
    found_t found = {0};
    char *copy = NULL; /* the buffer, padded: words are read past a chunk's end */
    if (view.len > (Py_ssize_t)(PENDING - 1)) {
        PyErr_SetString(PyExc_OverflowError, "a lookup holds fewer than 2**31 bytes");
        goto done;
    }
    copy = PyMem_Malloc((size_t)view.len + PAD);
    codes = PyByteArray_FromStringAndSize(NULL, (view.len + 1) / 2 * 4); /* chunks at most */
    fresh = PyList_New(0);
    if (copy == NULL || codes == NULL || fresh == NULL) {
        goto done;
    }
    memcpy(copy, view.buf, (size_t)view.len);
    memset(copy + view.len, 0, PAD);
    found.codes = (int32_t *)PyByteArray_AS_STRING(codes);
    if (fill(t, copy, view.len, &found, fresh) < 0 ||
        PyByteArray_Resize(codes, (Py_ssize_t)(found.count * sizeof(int32_t))) < 0) {
        goto done;
    }
    positions = PyByteArray_FromStringAndSize(found.positions ? (char *)found.positions : "",
                                              (Py_ssize_t)(found.n_positions * sizeof(int32_t)));
    if (positions != NULL) {
        result = PyTuple_Pack(3, codes, positions, fresh);
    }
done:
    if (copy == NULL && !PyErr_Occurred()) {
        PyErr_NoMemory();
    }
    PyMem_Free(copy);
    PyMem_Free(found.positions);
    Py_XDECREF(codes);
    Py_XDECREF(positions);
    Py_XDECREF(fresh);
    PyBuffer_Release(&view);
    return result;
}

static PyObject *table_settle(table_t *t, PyObject *arg) {
    Py_buffer view;
    if (PyObject_GetBuffer(arg, &view, PyBUF_SIMPLE) < 0) {
        return NULL;
    }
    if ((size_t)view.len != t->n_pending * sizeof(int32_t)) {
        PyBuffer_Release(&view);
        PyErr_Format(PyExc_ValueError, "settle() takes %zu int32 codes", t->n_pending);
        return NULL;
    }
    const int32_t *values = view.buf;
    for (size_t k = 0; k < t->n_pending; k++) {
        slot_t *s = &t->slots[t->pending[k]];
        s->value = values[k];
        s->len &= ~PENDING;
    }
    t->n_pending = 0;
    PyBuffer_Release(&view);
    Py_RETURN_NONE;
}

static PyObject *table_new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
    if (PyTuple_GET_SIZE(args) != 0 || (kwargs != NULL && PyDict_GET_SIZE(kwargs) != 0)) {
        PyErr_SetString(PyExc_TypeError, "ChunkTable() takes no arguments");
        return NULL;
    }
    table_t *t = (table_t *)type->tp_alloc(type, 0);
    if (t == NULL) {
        return NULL;
    }
    t->cap = 1024;
    t->slots = PyMem_Calloc(t->cap, sizeof(slot_t));
    if (t->slots == NULL) {
        Py_DECREF(t);
        return PyErr_NoMemory();
    }
    return (PyObject *)t;
}

static void table_dealloc(table_t *t) {
    PyMem_Free(t->slots);
    PyMem_Free(t->arena);
    PyMem_Free(t->pending);
    Py_TYPE(t)->tp_free((PyObject *)t);
}

static Py_ssize_t table_len(table_t *t) { return (Py_ssize_t)t->used; }

static PyMethodDef table_methods[] = {
    {"lookup", (PyCFunction)table_lookup, METH_O,
     "lookup(buffer) -> (codes, positions, new)\n\n"
     "The code (int32) of every chunk of buffer, cut as bytes.split() cuts it; new: the\n"
     "chunks never seen before, in order of first sight; positions (int32): where codes\n"
     "holds an index into new instead, until settle() gives the new chunks' codes."},
    {"settle", (PyCFunction)table_settle, METH_O,
     "settle(codes) -> None\n\nThe codes (native int32) of the last lookup's new chunks, in order."},
    {NULL, NULL, 0, NULL},
};

static PySequenceMethods table_sequence = {.sq_length = (lenfunc)table_len};

static PyTypeObject table_type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "groundkit.retrieval._chunkc.ChunkTable",
    .tp_basicsize = sizeof(table_t),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "chunk (bytes) -> int32 code, for index builds; len() is the chunks held",
    .tp_new = table_new,
    .tp_dealloc = (destructor)table_dealloc,
    .tp_methods = table_methods,
    .tp_as_sequence = &table_sequence,
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_chunkc", "Compiled chunk table for BM25 builds (bm25_tokens.py).",
    -1, NULL, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__chunkc(void) {
    if (PyType_Ready(&table_type) < 0) {
        return NULL;
    }
    PyObject *m = PyModule_Create(&module);
    if (m == NULL) {
        return NULL;
    }
    if (PyModule_AddIntConstant(m, "VERSION", GK_CHUNKS_VERSION) < 0 ||
        PyModule_AddObjectRef(m, "ChunkTable", (PyObject *)&table_type) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
