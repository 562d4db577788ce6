/* Document-at-a-time MaxScore top-k over doc-ordered BM25 postings (optional, compiled).
 *
 * Called by groundkit/retrieval/bm25_query.py (Kernels._maxscore) for several-term queries
 * over non-negative scores. Every sum here is exact in float64: all scores are multiples
 * of one unit u (the float32 ulp of the smallest positive score), and the call returns
 * None, for the numpy kernel to answer, when the terms' maxima sum to `limit` (2^53 u) or
 * more. So adding a document's scores in any order gives the bits of the numpy kernel's
 * query-order sum, and the k best documents (ties to the lower doc) are exactly its own.
 *
 * MaxScore (Turtle and Flood 1995), as in PISA: terms sorted by their maximum score,
 * ascending; ub[i] is the sum of the maxima of terms 0..i. Terms below the first
 * "essential" one cannot, together, lift a document into the top k, so only essential
 * lists propose documents; the others are probed (galloping search) from the highest
 * maximum down, and a document is dropped as soon as its score plus the maxima still
 * unprobed cannot enter. Documents arrive in increasing order, so a document tying the
 * heap's worst loses (the heap's documents are all lower); before the heap is full a
 * document must reach theta, a lower bound on the k-th best total: the best k-th
 * single-term score, read off the impact prefixes. (Seeding theta with the exact totals
 * of each list's best k, as the numpy kernel does, was measured slower here: the seeds'
 * look-ups into long lists cost more than the postings they let the merge skip.)
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#define GK_KERNEL_VERSION 5

typedef struct {
    const int32_t *docs;
    const float *scores;
    Py_ssize_t pos, end;
    float count;
} term_t;

typedef struct {
    double *score;
    int32_t *doc;
    Py_ssize_t size, cap;
    double theta0;
} heap_t;

/* The index's arrays (see bm25_query.impact_prefixes for imp_scores). */
typedef struct {
    const int32_t *docs;
    const float *scores, *imp_scores;
    Py_ssize_t n_postings, n_impacts;
} arrays_t;

/* Whether entry a ranks below entry b (lower score, or the same score and a higher doc). */
static inline int worse(const heap_t *h, Py_ssize_t a, Py_ssize_t b) {
    return h->score[a] < h->score[b] || (h->score[a] == h->score[b] && h->doc[a] > h->doc[b]);
}

/* Whether a document scoring `total` (arriving after every document in the heap) enters. */
static inline int enters(const heap_t *h, double total) {
    return h->size == h->cap ? total > h->score[0] : total >= h->theta0;
}

static void swap(heap_t *h, Py_ssize_t a, Py_ssize_t b) {
    double s = h->score[a]; h->score[a] = h->score[b]; h->score[b] = s;
    int32_t d = h->doc[a]; h->doc[a] = h->doc[b]; h->doc[b] = d;
}

static void sift_down(heap_t *h, Py_ssize_t i) {
    for (;;) {
        Py_ssize_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < h->size && worse(h, l, m)) m = l;
        if (r < h->size && worse(h, r, m)) m = r;
        if (m == i) return;
        swap(h, i, m);
        i = m;
    }
}

static void push(heap_t *h, int32_t doc, double total) {
    if (h->size < h->cap) {
        Py_ssize_t i = h->size++;
        h->score[i] = total;
        h->doc[i] = doc;
        while (i > 0 && worse(h, i, (i - 1) / 2)) {
            swap(h, i, (i - 1) / 2);
            i = (i - 1) / 2;
        }
    } else {
        h->score[0] = total;
        h->doc[0] = doc;
        sift_down(h, 0);
    }
}

/* float32(score * count), as the numpy kernel weighs a repeated query term */
static inline double weighed(float score, float count) {
    return count == 1.0f ? (double)score : (double)(float)(score * count);
}

static inline double score_at(const term_t *t) {
    return weighed(t->scores[t->pos], t->count);
}

/* Move t to its first posting with doc >= target (galloping, then bisection). */
static void advance(term_t *t, int32_t target) {
    Py_ssize_t lo = t->pos, step = 1, hi;
    if (lo >= t->end || t->docs[lo] >= target) return;
    hi = lo + 1;
    while (hi < t->end && t->docs[hi] < target) {
        lo = hi;
        step <<= 1;
        hi = lo + step;
    }
    if (hi > t->end) hi = t->end;
    /* docs[lo] < target; answer in (lo, hi] */
    lo += 1;
    while (lo < hi) {
        Py_ssize_t mid = lo + ((hi - lo) >> 1);
        if (t->docs[mid] < target) lo = mid + 1; else hi = mid;
    }
    t->pos = lo;
}

/* The document under t's cursor, or NONE when t is exhausted. */
#define NONE INT32_MAX
static inline int32_t current(const term_t *t) {
    return t->pos < t->end ? t->docs[t->pos] : NONE;
}

/* Complete `doc`'s total with the non-essential terms [0, first), from the highest maximum
 * down, and push it if it enters; it is dropped once its total plus the maxima still
 * unprobed cannot enter. */
static void complete(term_t *terms, const double *ub, Py_ssize_t first, heap_t *h,
                     int32_t doc, double total) {
    Py_ssize_t i = first;
    while (i > 0 && enters(h, total + ub[i - 1])) {
        term_t *t = &terms[--i];
        advance(t, doc);
        if (t->pos < t->end && t->docs[t->pos] == doc) total += score_at(t);
    }
    if (i == 0 && enters(h, total)) push(h, doc, total);
}

static void run(term_t *terms, const double *ub, Py_ssize_t n, heap_t *h) {
    Py_ssize_t first = 0; /* terms [0, first) are not essential */
    while (first < n && !enters(h, ub[first])) first++;
    while (first < n - 1) { /* several essential lists: merge them */
        int32_t doc = current(&terms[first]);
        for (Py_ssize_t i = first + 1; i < n; i++) {
            int32_t d = current(&terms[i]);
            if (d < doc) doc = d;
        }
        if (doc == NONE) return;
        double total = 0.0;
        for (Py_ssize_t i = first; i < n; i++) {
            term_t *t = &terms[i];
            if (t->pos < t->end && t->docs[t->pos] == doc) {
                total += score_at(t);
                t->pos++;
            }
        }
        complete(terms, ub, first, h, doc, total);
        while (first < n && !enters(h, ub[first])) first++;
    }
    if (first == n - 1) { /* one essential list: walk it, probing the others */
        term_t *e = &terms[first];
        for (; e->pos < e->end; e->pos++) {
            double total = score_at(e);
            if (first > 0 && !enters(h, total + ub[first - 1])) continue;
            complete(terms, ub, first, h, e->docs[e->pos], total);
            if (!enters(h, ub[first])) return; /* not even the best total can enter now */
        }
    }
}

static PyObject *sorted_hits(heap_t *h) {
    /* heap-sort in place: the worst goes to the end each round, so the array ends best first */
    Py_ssize_t n = h->size;
    while (h->size > 1) {
        swap(h, 0, h->size - 1);
        h->size--;
        sift_down(h, 0);
    }
    PyObject *out = PyList_New(n);
    if (out == NULL) return NULL;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *pair = Py_BuildValue("(id)", (int)h->doc[i], h->score[i]);
        if (pair == NULL) { Py_DECREF(out); return NULL; }
        PyList_SET_ITEM(out, i, pair);
    }
    return out;
}

/* The maximum of t's scores (times its query count). */
static double list_maximum(const term_t *t) {
    double best = 0.0;
    term_t probe = *t;
    for (; probe.pos < probe.end; probe.pos++) {
        double s = score_at(&probe);
        if (s > best) best = s;
    }
    return best;
}

/* Parse (lo, hi, count, ilo, ihi) per term (postings [lo, hi), impact prefix [ilo, ihi)),
 * sort the terms by maximum score, ascending, fill ub, and raise *theta to the best k-th
 * single-term score. Returns -1 on error, 1 when the maxima sum to `limit` or more (a sum
 * might round: the numpy kernel answers), else 0. */
static int read_terms(PyObject *spec, const arrays_t *a, Py_ssize_t k, double limit,
                      term_t *terms, double *maxima, double *ub, Py_ssize_t n, double *theta) {
    for (Py_ssize_t i = 0; i < n; i++) {
        long long lo, hi, ilo, ihi;
        double count;
        if (!PyArg_ParseTuple(PySequence_Fast_GET_ITEM(spec, i), "LLdLL", &lo, &hi, &count,
                              &ilo, &ihi))
            return -1;
        if (lo < 0 || hi < lo || hi > a->n_postings || ilo < 0 || ihi < ilo
            || ihi > a->n_impacts || ihi - ilo > hi - lo || count < 1.0) {
            PyErr_SetString(PyExc_ValueError, "a term's postings lie outside the arrays");
            return -1;
        }
        term_t t = {a->docs, a->scores, (Py_ssize_t)lo, (Py_ssize_t)hi, (float)count};
        double maximum;
        if (ihi > ilo) { /* a long list: its impact prefix holds its best, best first */
            maximum = weighed(a->imp_scores[ilo], t.count);
            if (ihi - ilo >= k && weighed(a->imp_scores[ilo + k - 1], t.count) > *theta)
                *theta = weighed(a->imp_scores[ilo + k - 1], t.count);
        } else {
            maximum = list_maximum(&t);
        }
        Py_ssize_t j = i; /* insertion sort: queries have few terms */
        while (j > 0 && maxima[j - 1] > maximum) {
            terms[j] = terms[j - 1];
            maxima[j] = maxima[j - 1];
            j--;
        }
        terms[j] = t;
        maxima[j] = maximum;
    }
    double sum = 0.0;
    for (Py_ssize_t i = 0; i < n; i++) {
        sum += maxima[i];
        ub[i] = sum;
    }
    return sum >= limit ? 1 : 0;
}

/* Room for the call: the terms, their bounds and the heap. */
typedef struct {
    term_t *terms;
    double *maxima, *ub, *heap_scores;
    int32_t *heap_docs;
} scratch_t;

static void free_scratch(scratch_t *s) {
    PyMem_Free(s->terms);
    PyMem_Free(s->maxima);
    PyMem_Free(s->ub);
    PyMem_Free(s->heap_scores);
    PyMem_Free(s->heap_docs);
}

/* Run MaxScore and list the hits, for terms already read into s. */
static PyObject *ranked(scratch_t *s, Py_ssize_t n, Py_ssize_t k, double theta) {
    Py_ssize_t postings = 0;
    for (Py_ssize_t i = 0; i < n; i++) postings += s->terms[i].end - s->terms[i].pos;
    /* no more hits than postings: a huge k allocates no more */
    heap_t h = {NULL, NULL, 0, k < postings ? k : (postings > 0 ? postings : 1), theta};
    h.score = s->heap_scores = PyMem_Malloc((size_t)h.cap * sizeof(double));
    h.doc = s->heap_docs = PyMem_Malloc((size_t)h.cap * sizeof(int32_t));
    if (!h.score || !h.doc) return PyErr_NoMemory();
    Py_BEGIN_ALLOW_THREADS
    run(s->terms, s->ub, n, &h);
    Py_END_ALLOW_THREADS
    return sorted_hits(&h);
}

/* The top k, or Py_None when a sum might round. */
static PyObject *top_k(PyObject *spec_arg, const arrays_t *a, Py_ssize_t k, double limit) {
    PyObject *result = NULL, *spec = PySequence_Fast(spec_arg, "terms must be a sequence");
    if (spec == NULL) return NULL;
    scratch_t s = {0};
    Py_ssize_t n = PySequence_Fast_GET_SIZE(spec), room = n ? n : 1;
    double theta = 0.0;
    s.terms = PyMem_Malloc((size_t)room * sizeof(term_t));
    s.maxima = PyMem_Malloc((size_t)room * sizeof(double));
    s.ub = PyMem_Malloc((size_t)room * sizeof(double));
    if (!s.terms || !s.maxima || !s.ub) {
        PyErr_NoMemory();
    } else {
        int inexact = read_terms(spec, a, k, limit, s.terms, s.maxima, s.ub, n, &theta);
        if (inexact > 0)
            result = Py_NewRef(Py_None);
        else if (inexact == 0)
            result = ranked(&s, n, k, theta);
    }
    free_scratch(&s);
    Py_DECREF(spec);
    return result;
}

static PyObject *maxscore(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (nargs != 6) {
        PyErr_SetString(PyExc_TypeError, "maxscore(docs, scores, imp_scores, terms, k, limit)");
        return NULL;
    }
    Py_ssize_t k = PyLong_AsSsize_t(args[4]);
    double limit = PyFloat_AsDouble(args[5]);
    if (PyErr_Occurred()) return NULL;
    if (k < 1) {
        PyErr_SetString(PyExc_ValueError, "k must be positive");
        return NULL;
    }
    Py_buffer views[3];
    int got = 0;
    PyObject *result = NULL;
    arrays_t a;
    for (; got < 3; got++)
        if (PyObject_GetBuffer(args[got], &views[got], PyBUF_C_CONTIGUOUS) < 0) goto done;
    if (views[0].len != views[1].len || views[0].itemsize != 4 || views[1].itemsize != 4
        || views[2].itemsize != 4) {
        PyErr_SetString(PyExc_ValueError,
                        "docs (int32) and scores (float32) must match; imp_scores is float32");
        goto done;
    }
    a.docs = views[0].buf;
    a.scores = views[1].buf;
    a.imp_scores = views[2].buf;
    a.n_postings = views[0].len / 4;
    a.n_impacts = views[2].len / 4;
    result = top_k(args[3], &a, k, limit);
done:
    while (got-- > 0) PyBuffer_Release(&views[got]);
    return result;
}

/* The id of the term whose UTF-8 bytes are `term` and whose crc32 is `h`, or -1.
 * hashes[i] is term i's crc32, ascending; its bytes are blob[offsets[i]:offsets[i + 1]]. */
static Py_ssize_t term_position(const uint32_t *hashes, const int64_t *offsets, Py_ssize_t n,
                                const char *blob, Py_ssize_t blob_len, const char *term,
                                Py_ssize_t len, uint32_t h) {
    Py_ssize_t lo = 0, hi = n;
    while (lo < hi) {
        Py_ssize_t mid = lo + ((hi - lo) >> 1);
        if (hashes[mid] < h) lo = mid + 1;
        else hi = mid;
    }
    for (; lo < n && hashes[lo] == h; lo++) {
        int64_t a = offsets[lo], b = offsets[lo + 1];
        if (a < 0 || b < a || b > blob_len) return -2;
        if (b - a == len && memcmp(blob + a, term, (size_t)len) == 0) return lo;
    }
    return -1;
}

static PyObject *find_term(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (nargs != 5 || !PyBytes_Check(args[3])) {
        PyErr_SetString(PyExc_TypeError, "find_term(hashes, offsets, blob, term: bytes, crc32)");
        return NULL;
    }
    unsigned long h = PyLong_AsUnsignedLong(args[4]);
    if (PyErr_Occurred()) return NULL;
    Py_buffer views[3];
    int got = 0;
    PyObject *result = NULL;
    for (; got < 3; got++)
        if (PyObject_GetBuffer(args[got], &views[got], PyBUF_C_CONTIGUOUS) < 0) goto done;
    Py_ssize_t n = views[0].len / 4;
    if (views[0].itemsize != 4 || views[1].itemsize != 8 || views[1].len != (n + 1) * 8
        || h > UINT32_MAX) {
        PyErr_SetString(PyExc_ValueError, "hashes are uint32, offsets int64 (one more), "
                                          "crc32 below 2**32");
        goto done;
    }
    Py_ssize_t at = term_position(views[0].buf, views[1].buf, n, views[2].buf, views[2].len,
                                  PyBytes_AS_STRING(args[3]), PyBytes_GET_SIZE(args[3]),
                                  (uint32_t)h);
    if (at == -2) PyErr_SetString(PyExc_ValueError, "a term offset lies outside the blob");
    else result = PyLong_FromSsize_t(at);
done:
    while (got-- > 0) PyBuffer_Release(&views[got]);
    return result;
}

static PyMethodDef methods[] = {
    {"maxscore", (PyCFunction)(void (*)(void))maxscore, METH_FASTCALL,
     "maxscore(docs, scores, imp_scores, terms, k, limit) -> [(doc, total)] or None\n\n"
     "terms: (lo, hi, count, ilo, ihi) per query term: postings docs[lo:hi] (ascending),\n"
     "impact prefix imp_scores[ilo:ihi] (best first). Scores are non-negative multiples\n"
     "of one unit u and limit is 2**53 u; None when the terms' maxima sum to limit or more."},
    {"find_term", (PyCFunction)(void (*)(void))find_term, METH_FASTCALL,
     "find_term(hashes, offsets, blob, term, crc32) -> term id, or -1 when absent\n\n"
     "hashes (uint32, ascending) and offsets (int64, one more) index the terms' UTF-8 bytes\n"
     "in blob; term is the bytes sought and crc32 their zlib.crc32."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_bm25c", "Compiled BM25 top-k (see bm25_compiled.py).", -1,
    methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__bm25c(void) {
    PyObject *m = PyModule_Create(&module);
    if (m != NULL && PyModule_AddIntConstant(m, "VERSION", GK_KERNEL_VERSION) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
