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
 * unprobed cannot enter. Before the heap is full a document must reach theta, a lower
 * bound on the k-th best total: the best k-th single-term score, read off the impact
 * prefixes. A document tying the heap's worst enters only with a lower doc.
 *
 * Block-max (bm25_blocks.py; long queries over long lists, about 10^6 documents): the
 * documents fall in blocks of 2^shift, and each long list stores, per block, its best
 * score rounded up to whole steps (a power of two, so every bound is a multiple of u and
 * sums stay exact). Blocks come in doc order, proposed by the lists essential by their
 * maxima; a block whose bounds cannot lift any document into the top k is skipped
 * unread, and inside a block MaxScore runs again on the block bounds, so a list common
 * everywhere but weak in this block is only probed there. A list probed twice in one
 * block has that block's scores laid out by doc, and its further probes are look-ups.
 *
 * Windowed (queries whose lists hold at least `windowed` postings a block): where even
 * block bounds leave nearly every document to complete (3-4 common words of similar
 * weight), documents come a window of 16 blocks at a time. A window's bounds (each list's
 * best block maximum there) skip it unread when no document in it can enter, and stand in
 * for the lists' maxima inside it. The essential lists add their scores into the window's
 * float64 totals, in order and without a branch per posting; the totals that could still
 * enter are picked (eight at a time, AVX-512 or AVX2 where the CPU has them) as the
 * window is zeroed for the next, and the next list is added too while that costs less
 * than probing it for each of them. Sparse windows go block by block. The sums are as
 * exact as before, so the answers are the same bits.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#if defined(__GNUC__) && defined(__x86_64__)
#include <immintrin.h>
#define GK_WIDE_SCAN 1 /* AVX2 and AVX-512 scans, chosen at import by what the CPU has */
#endif

#define GK_KERNEL_VERSION 9

typedef struct {
    const int32_t *docs;
    const float *scores;
    Py_ssize_t pos, end;
    float count;
    int32_t stop;           /* documents from here on lie outside the block being read */
    double maximum;         /* the list's best score, weighed */
    const uint8_t *quanta;  /* per doc block: its best score in whole steps, or NULL */
    double step;            /* one step: a power of two */
    float *row;             /* one block's scores laid out by doc (NULL: never) */
    int32_t row_lo, probed_lo; /* the block laid out in row; the block probed last */
    int shift;              /* a doc block is 2^shift documents */
    const float *column;    /* the score of every document (0: none), or NULL */
    const int32_t *starts;  /* with a column: per doc block, its first posting's offset */
    Py_ssize_t base;        /* the list's first posting */
    Py_ssize_t n_blocks, n_docs; /* the index's doc blocks and documents (column extent) */
} term_t;

typedef struct {
    double *score;
    int32_t *doc;
    Py_ssize_t size, cap;
    double theta0;
} heap_t;

/* The index's arrays (see bm25_query.impact_prefixes for imp_scores and bm25_blocks for
 * quanta, one row of n_blocks a slot). */
typedef struct {
    const int32_t *docs;
    const float *scores, *imp_scores;
    const uint8_t *quanta;
    Py_ssize_t n_postings, n_impacts, n_slots, n_blocks;
    int shift;
    const float *columns;      /* score columns, n_docs each (bm25_blocks), or NULL */
    const int32_t *col_starts; /* per column, n_blocks + 1 offsets */
    Py_ssize_t n_columns, n_docs;
} arrays_t;

/* Whether entry a ranks below entry b (lower score, or the same score and a higher doc). */
static inline int worse(const heap_t *h, Py_ssize_t a, Py_ssize_t b) {
    return h->score[a] < h->score[b] || (h->score[a] == h->score[b] && h->doc[a] > h->doc[b]);
}

/* Whether a document scoring `total`, none of whose documents is below `doc`, could enter:
 * above a full heap's worst (a tie enters with a lower doc), or at least theta0, a lower
 * bound on the k-th best total, while the heap fills. */
static inline int enters(const heap_t *h, double total, int32_t doc) {
    if (h->size < h->cap) return total >= h->theta0;
    return total > h->score[0] || (total == h->score[0] && doc < h->doc[0]);
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

/* Where t's postings of the doc blocks from target's on begin (a list with a column). */
static inline Py_ssize_t block_start(const term_t *t, int32_t target) {
    Py_ssize_t b = target >> t->shift;
    return b >= t->n_blocks ? t->end : t->base + t->starts[b];
}

/* Move t to its first posting with doc >= target (galloping, then bisection; a list with
 * a column first jumps to target's block). */
static void advance(term_t *t, int32_t target) {
    if (t->starts != NULL && t->pos < t->end && t->docs[t->pos] < target) {
        Py_ssize_t at = block_start(t, target);
        if (at > t->pos) t->pos = at;
    }
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

/* The document under t's cursor, or NONE when t is exhausted (or past its block). */
#define NONE INT32_MAX
static inline int32_t current(const term_t *t) {
    return t->pos < t->end && t->docs[t->pos] < t->stop ? t->docs[t->pos] : NONE;
}

/* The end of doc block b (exclusive), NONE past the last representable doc. */
static inline int32_t block_end(Py_ssize_t b, int shift) {
    int64_t end = ((int64_t)b + 1) << shift;
    return end > NONE ? NONE : (int32_t)end;
}

/* Lay out t's scores in the block from lo by doc in t->row (0 where t has none). */
static void lay_out(term_t *t, int32_t lo) {
    int32_t hi = block_end(lo >> t->shift, t->shift);
    memset(t->row, 0, sizeof(float) << t->shift);
    advance(t, lo);
    for (; t->pos < t->end && t->docs[t->pos] < hi; t->pos++)
        t->row[t->docs[t->pos] - lo] = (float)score_at(t);
    t->row_lo = lo;
}

#define PROBE_AHEAD 128

/* t's score for doc, 0 when it has none (adding 0 changes no total). The second probe of
 * a block lays the block's scores out, and the rest are look-ups: probes into a long list
 * (galloping, then bisection) mispredict branches, ~20-30 ns each. */
static inline double probe(term_t *t, int32_t doc) {
    if (t->column != NULL) return weighed(t->column[doc], t->count); /* one read */
    if (t->row != NULL) {
        int32_t lo = doc & ~(((int32_t)1 << t->shift) - 1);
        if (t->row_lo == lo) return t->row[doc - lo];
        if (t->probed_lo == lo) {
            lay_out(t, lo);
            return t->row[doc - lo];
        }
        t->probed_lo = lo;
    }
    advance(t, doc);
#if defined(__GNUC__)
    /* the probes walk the list forward: ask for the lines PROBE_AHEAD postings on now
     * (measured at 10^6 passages, caches cold: p50 -5%; ADR-0003, revision 2026-12-06) */
    if (t->pos + PROBE_AHEAD < t->end) {
        __builtin_prefetch(t->docs + t->pos + PROBE_AHEAD);
        __builtin_prefetch(t->scores + t->pos + PROBE_AHEAD);
    }
#endif
    return t->pos < t->end && t->docs[t->pos] == doc ? score_at(t) : 0.0;
}

/* Complete `doc`'s total with the non-essential terms [0, first), from the highest bound
 * down, and push it if it enters; it is dropped once its total plus the bounds still
 * unprobed (ub[i - 1]: terms 0..i-1) cannot enter. */
static void complete(term_t *terms, const double *ub, Py_ssize_t first, heap_t *h,
                     int32_t doc, double total) {
    Py_ssize_t i = first;
    while (i > 0 && enters(h, total + ub[i - 1], doc)) {
        i--;
        total += probe(&terms[i], doc);
    }
    if (i == 0 && enters(h, total, doc)) push(h, doc, total);
}

/* MaxScore over the documents from `from` on (each list up to its stop): ub[i] is the sum
 * of the bounds of terms 0..i; terms [0, first) whose bounds together cannot enter are not
 * essential: they only complete documents the others propose. */
static void run(term_t *terms, const double *ub, Py_ssize_t n, heap_t *h, int32_t from) {
    Py_ssize_t first = 0;
    while (first < n && !enters(h, ub[first], from)) first++;
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
        from = doc + 1;
        while (first < n && !enters(h, ub[first], from)) first++;
    }
    if (first == n - 1) { /* one essential list: walk it, probing the others */
        term_t *e = &terms[first];
        for (; e->pos < e->end && e->docs[e->pos] < e->stop; e->pos++) {
            int32_t doc = e->docs[e->pos];
            double total = score_at(e);
            if (first > 0 && !enters(h, total + ub[first - 1], doc)) continue;
            complete(terms, ub, first, h, doc, total);
            if (!enters(h, ub[first], doc + 1)) { /* no later document can enter */
                e->pos++;
                return;
            }
        }
    }
}

/* The next document the essential lists propose from `from` on, or NONE: *first is raised
 * past the lists whose bounds together can no longer lift a document into the top k. */
static int32_t proposed(const term_t *terms, const double *ub, Py_ssize_t n, const heap_t *h,
                        Py_ssize_t *first, int32_t from) {
    while (*first < n && !enters(h, ub[*first], from)) (*first)++;
    int32_t doc = NONE;
    for (Py_ssize_t i = *first; i < n; i++) {
        int32_t d = current(&terms[i]);
        if (d < doc) doc = d;
    }
    return doc;
}

/* A term's bound over the doc blocks [b, b + blocks) ([lo, hi), the last one possibly cut
 * short by the index's end): its best block maximum there rounded up to whole steps
 * (exact in float32: 8 bits times a power of two), or, for a list without block maxima,
 * its maximum if it holds a document there, else 0. */
static double block_bound(term_t *t, Py_ssize_t b, Py_ssize_t blocks, int32_t lo, int32_t hi) {
    if (t->quanta != NULL) {
        uint8_t best = 0;
        for (Py_ssize_t j = b; j < b + blocks && j < t->n_blocks; j++)
            if (t->quanta[j] > best) best = t->quanta[j];
        double q = weighed((float)((double)best * t->step), t->count);
        return q < t->maximum ? q : t->maximum;
    }
    advance(t, lo);
    return t->pos < t->end && t->docs[t->pos] < hi ? t->maximum : 0.0;
}

/* Block-max MaxScore: documents come block by block (2^shift documents), proposed by the
 * lists essential by their maxima (ub); in each block the terms' block bounds (bub) decide
 * whether the block is read at all, which lists stay essential there and which get probed
 * (MaxScore again, inside the block). Every bound is a multiple of the score unit, so
 * their sums are exact. */
static void run_blocks(term_t *terms, const double *ub, Py_ssize_t n, heap_t *h, int shift,
                       double *bub, int32_t from, int32_t until) {
    Py_ssize_t first = 0;
    for (;;) {
        int32_t doc = proposed(terms, ub, n, h, &first, from);
        if (doc == NONE || doc >= until) return;
        Py_ssize_t b = doc >> shift;
        int32_t lo = (int32_t)((int64_t)b << shift), hi = block_end(b, shift);
        double sum = 0.0;
        for (Py_ssize_t i = 0; i < n; i++) {
            sum += block_bound(&terms[i], b, 1, lo, hi);
            bub[i] = sum;
        }
        if (enters(h, sum, doc)) {
            for (Py_ssize_t i = 0; i < n; i++) terms[i].stop = hi;
            run(terms, bub, n, h, doc);
            for (Py_ssize_t i = 0; i < n; i++) terms[i].stop = NONE;
        }
        for (Py_ssize_t i = first; i < n; i++) { /* the rest of the block: skipped */
            term_t *t = &terms[i];
            if (t->starts != NULL) advance(t, hi);
            else while (t->pos < t->end && t->docs[t->pos] < hi) t->pos++;
        }
        if (hi == NONE) return;
        from = hi;
    }
}

/* The windowed path (measured at 10^6 passages, ADR-0003): a window is 2^WINDOW_BLOCKS doc
 * blocks (16 of 128 documents: 16 KB of float64 totals, in the L1 cache); a probe costs
 * about PROBE_COST added postings; a window is summed when its essential lists are expected
 * to hold at least one posting per SPARSE of its documents, else it goes block by block. */
#define WINDOW_BLOCKS 4
#define PROBE_COST 16.0
#define SPARSE 64.0

/* Add a column's scores for the documents in [lo, hi) into acc: every document, no doc
 * ids read (adding 0 changes no total); t ends at hi (lo and hi: block boundaries). */
static void accumulate_column(term_t *t, double *acc, int32_t lo, int32_t hi) {
    const float *column = t->column;
    Py_ssize_t end = hi < t->n_docs ? hi : t->n_docs;
    if (t->count == 1.0f)
        for (Py_ssize_t j = lo; j < end; j++) acc[j - lo] += column[j];
    else
        for (Py_ssize_t j = lo; j < end; j++) acc[j - lo] += weighed(column[j], t->count);
    Py_ssize_t at = block_start(t, hi);
    if (at > t->pos) t->pos = at;
}

/* Add t's scores for the documents in [lo, hi) into acc (acc[0] is lo's); t ends at hi. */
static void accumulate(term_t *t, double *acc, int32_t lo, int32_t hi) {
    if (t->column != NULL) {
        accumulate_column(t, acc, lo, hi);
        return;
    }
    advance(t, lo);
    const int32_t *docs = t->docs;
    const float *scores = t->scores;
    Py_ssize_t p = t->pos, end = t->end;
    if (t->count == 1.0f)
        for (; p < end && docs[p] < hi; p++) acc[docs[p] - lo] += scores[p];
    else
        for (; p < end && docs[p] < hi; p++) acc[docs[p] - lo] += weighed(scores[p], t->count);
    t->pos = p;
}

/* Whether any of acc[j..j+8) is at least floor (no branch per element: SSE2 on x86-64,
 * which every x86-64 has; elsewhere the compiler's own code). */
static inline int any_of_8(const double *acc, double floor) {
#if defined(__SSE2__)
    __m128d f = _mm_set1_pd(floor);
    __m128d m = _mm_or_pd(_mm_or_pd(_mm_cmpge_pd(_mm_loadu_pd(acc), f),
                                    _mm_cmpge_pd(_mm_loadu_pd(acc + 2), f)),
                          _mm_or_pd(_mm_cmpge_pd(_mm_loadu_pd(acc + 4), f),
                                    _mm_cmpge_pd(_mm_loadu_pd(acc + 6), f)));
    return _mm_movemask_pd(m);
#else
    int any = 0;
    for (int q = 0; q < 8; q++) any |= acc[q] >= floor;
    return any;
#endif
}

/* The candidates of a summed window: the positions j in [0, n) where acc[j] >= floor go to
 * cand, ascending, and their totals to total; returns how many. Every acc[j] is left 0,
 * ready for the next window: zeroing here, while the line is in the cache, spares a
 * memset of the window (n a multiple of 8). A window of 2,048 totals holds about one
 * candidate at 10^6 passages, so groups of eight are tested at once; this and adding the
 * postings are a window's cost. The widest variant the CPU runs is chosen at import. */
static Py_ssize_t take_sse2(double *acc, Py_ssize_t n, double floor, int32_t *cand,
                            double *total) {
    Py_ssize_t found = 0;
    for (Py_ssize_t j = 0; j < n; j += 8) {
        if (any_of_8(acc + j, floor))
            for (int q = 0; q < 8; q++) { /* no branch: passing is unpredictable */
                cand[found] = (int32_t)(j + q);
                total[found] = acc[j + q];
                found += acc[j + q] >= floor;
            }
        memset(acc + j, 0, 8 * sizeof(double));
    }
    return found;
}

#if defined(GK_WIDE_SCAN)
/* The positions j + q of mask's set bits, ascending, to cand and their totals to total
 * (after `found` already there); returns the new count. */
static inline Py_ssize_t passed(unsigned mask, Py_ssize_t j, const double *acc,
                                int32_t *cand, double *total, Py_ssize_t found) {
    for (; mask; mask &= mask - 1) {
        int q = __builtin_ctz(mask);
        cand[found] = (int32_t)(j + q);
        total[found++] = acc[j + q];
    }
    return found;
}

__attribute__((target("avx2")))
static Py_ssize_t take_avx2(double *acc, Py_ssize_t n, double floor, int32_t *cand,
                            double *total) {
    Py_ssize_t found = 0;
    __m256d f = _mm256_set1_pd(floor), zero = _mm256_setzero_pd();
    for (Py_ssize_t j = 0; j < n; j += 8) {
        __m256d a = _mm256_loadu_pd(acc + j), b = _mm256_loadu_pd(acc + j + 4);
        unsigned mask = (unsigned)_mm256_movemask_pd(_mm256_cmp_pd(a, f, _CMP_GE_OQ))
                        | (unsigned)_mm256_movemask_pd(_mm256_cmp_pd(b, f, _CMP_GE_OQ)) << 4;
        found = passed(mask, j, acc, cand, total, found);
        _mm256_storeu_pd(acc + j, zero);
        _mm256_storeu_pd(acc + j + 4, zero);
    }
    return found;
}

__attribute__((target("avx512f")))
static Py_ssize_t take_avx512(double *acc, Py_ssize_t n, double floor, int32_t *cand,
                              double *total) {
    Py_ssize_t found = 0;
    __m512d f = _mm512_set1_pd(floor), zero = _mm512_setzero_pd();
    for (Py_ssize_t j = 0; j < n; j += 8) {
        unsigned mask = _mm512_cmp_pd_mask(_mm512_loadu_pd(acc + j), f, _CMP_GE_OQ);
        found = passed(mask, j, acc, cand, total, found);
        _mm512_storeu_pd(acc + j, zero);
    }
    return found;
}
#endif

typedef Py_ssize_t (*take_t)(double *, Py_ssize_t, double, int32_t *, double *);
static take_t take = take_sse2; /* the widest variant this CPU runs: set at import */

/* The lowest total that could still enter: the full heap's worst, or theta0 while it fills
 * (a tie with the worst never enters here: later documents have higher ids). */
static inline double admission(const heap_t *h) {
    return h->size < h->cap ? h->theta0 : h->score[0];
}

/* The least partial total over lists [c, n) with which a document could still enter: the
 * admission less the other lists' maxima (every sum here is exact, multiples of u below
 * 2^53 u, and so is the difference). */
static inline double floor_from(const heap_t *h, const double *ub, Py_ssize_t c) {
    return admission(h) - (c > 0 ? ub[c - 1] : 0.0);
}

/* Add t's scores for the documents in [lo, hi) to the candidates' totals (cand ascending;
 * acc, all 0, serves as scratch and is left all 0). */
static void add_to(term_t *t, double *acc, int32_t lo, int32_t hi, const int32_t *cand,
                   double *total, Py_ssize_t found) {
    advance(t, lo);
    Py_ssize_t from = t->pos;
    accumulate(t, acc, lo, hi);
    for (Py_ssize_t j = 0; j < found; j++) total[j] += acc[cand[j]];
    for (Py_ssize_t p = from; p < t->pos; p++) acc[t->docs[p] - lo] = 0.0;
}

/* One window [lo, hi) of the windowed path: lists [summed, n), every essential list among
 * them, add their scores into acc (the window's totals, float64, `width` of them, all 0
 * on entry and on return), and the documents whose partial total plus the other lists'
 * bounds could enter are its candidates. While probing the next list for every candidate
 * would cost more than adding it (`est[i]`: list i's expected postings in a window; a
 * probe costs about PROBE_COST added postings), that list is added too and the
 * candidates filtered by the tighter bound; the rest are completed by probes. A list
 * with a score column is never added here: probing it is one read (at 10^6 passages,
 * p99 -21%: ADR-0003, revision 2026-12-07).
 * floor_from(h, ub, summed) must be positive: a document without postings (total 0) is
 * then never a candidate. Returns where the lists summed began at the end. */
static Py_ssize_t window(term_t *terms, const double *ub, Py_ssize_t n, Py_ssize_t summed,
                         heap_t *h, int32_t lo, int32_t hi, double *acc, Py_ssize_t width,
                         int32_t *cand, double *total, const double *est) {
    for (Py_ssize_t i = summed; i < n; i++) accumulate(&terms[i], acc, lo, hi);
    Py_ssize_t c = summed;
    Py_ssize_t found = take(acc, width, floor_from(h, ub, c), cand, total);
    while (c > 0 && found > 0 && terms[c - 1].column == NULL
           && (double)found * PROBE_COST > est[c - 1]) {
        c--;
        add_to(&terms[c], acc, lo, hi, cand, total, found);
        double floor = floor_from(h, ub, c);
        Py_ssize_t kept = 0;
        for (Py_ssize_t j = 0; j < found; j++)
            if (total[j] >= floor) {
                cand[kept] = cand[j];
                total[kept++] = total[j];
            }
        found = kept;
    }
    for (Py_ssize_t j = 0; j < found; j++) {
        int32_t doc = lo + cand[j];
        if (c > 0) complete(terms, ub, c, h, doc, total[j]);
        else if (enters(h, total[j], doc)) push(h, doc, total[j]);
    }
    return c;
}

/* Windowed accumulation, for queries whose lists are dense (long queries of common words
 * at about 10^6 documents, where MaxScore document at a time completes nearly every
 * document it is offered): documents come a window of 2^wshift at a time. Each window's
 * bounds (wub: the lists' best block maxima there, summed as ub) skip it unread when no
 * document there can enter, and otherwise stand in for the lists' maxima: which lists are
 * summed, which candidates are kept and when a probe stops. The window is summed in the
 * L1 cache without a branch per posting (`window`), or goes block by block
 * (`run_blocks`, which only ever offers documents with postings) when its essential lists
 * are sparse there, or when a document without postings could enter (zero totals while
 * the heap fills). */
static void run_windows(term_t *terms, const double *ub, Py_ssize_t n, heap_t *h, int shift,
                        int wshift, double *acc, int32_t *cand, double *total,
                        const double *est, double *bub, double *wub) {
    Py_ssize_t first = 0, added = n, width = (Py_ssize_t)1 << wshift;
    Py_ssize_t blocks = (Py_ssize_t)1 << (wshift - shift);
    int32_t from = 0;
    for (;;) {
        int32_t doc = proposed(terms, ub, n, h, &first, from);
        if (doc == NONE) return;
        int32_t lo = (int32_t)(((int64_t)doc >> wshift) << wshift);
        int32_t hi = block_end(lo >> wshift, wshift);
        double sum = 0.0;
        for (Py_ssize_t i = 0; i < n; i++) {
            sum += block_bound(&terms[i], lo >> shift, blocks, lo, hi);
            wub[i] = sum;
        }
        if (!enters(h, sum, doc)) { /* no document here can enter: skip the window unread */
            for (Py_ssize_t i = first; i < n; i++) advance(&terms[i], hi);
        } else {
            Py_ssize_t wfirst = first; /* lists essential by the window's bounds */
            while (wfirst < n && !enters(h, wub[wfirst], lo)) wfirst++;
            double essential = 0.0;
            for (Py_ssize_t i = wfirst; i < n; i++) essential += est[i];
            Py_ssize_t summed = added < wfirst ? added : wfirst;
            if (essential * SPARSE >= (double)width && floor_from(h, wub, summed) > 0.0) {
                /* start where the last window's cost model ended: its candidates were too
                 * many to probe above that list, and the next window's lists look alike */
                added = window(terms, wub, n, summed, h, lo, hi, acc, width, cand, total, est);
            } else {
                run_blocks(terms, wub, n, h, shift, bub, lo, hi);
            }
            for (Py_ssize_t i = first; i < n; i++) advance(&terms[i], hi);
        }
        if (hi == NONE) return;
        from = hi;
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

/* One term (lo, hi, count, ilo, ihi[, slot, step[, column]]): postings [lo, hi), impact
 * prefix [ilo, ihi), its row of block maxima (slot; -1 for none) in steps of `step`, and
 * its score column (-1: none). Fills t and its maximum, and raises *theta to its k-th best
 * score when its impact prefix holds k. Returns -1 (an exception set) on bad input. */
static int read_term(PyObject *item, const arrays_t *a, Py_ssize_t k, term_t *t,
                     double *theta) {
    long long lo, hi, ilo, ihi, slot = -1, col = -1;
    double count, step = 0.0;
    if (!PyArg_ParseTuple(item, "LLdLL|LdL", &lo, &hi, &count, &ilo, &ihi, &slot, &step,
                          &col))
        return -1;
    if (lo < 0 || hi < lo || hi > a->n_postings || ilo < 0 || ihi < ilo
        || ihi > a->n_impacts || ihi - ilo > hi - lo || count < 1.0) {
        PyErr_SetString(PyExc_ValueError, "a term's postings lie outside the arrays");
        return -1;
    }
    if (a->quanta != NULL && hi > lo
        && (a->docs[lo] < 0 || (a->docs[hi - 1] >> a->shift) >= a->n_blocks)) {
        PyErr_SetString(PyExc_ValueError, "a term's documents lie outside the blocks");
        return -1;
    }
    if (slot >= 0 && (a->quanta == NULL || slot >= a->n_slots || !(step > 0.0))) {
        PyErr_SetString(PyExc_ValueError, "a term's block maxima lie outside the arrays");
        return -1;
    }
    if (col >= 0 && (col >= a->n_columns
                     || a->col_starts[col * (a->n_blocks + 1) + a->n_blocks] != hi - lo
                     || (hi > lo && a->docs[hi - 1] >= a->n_docs))) {
        PyErr_SetString(PyExc_ValueError, "a term's score column does not fit its postings");
        return -1;
    }
    *t = (term_t){a->docs, a->scores, (Py_ssize_t)lo, (Py_ssize_t)hi, (float)count, NONE,
                  0.0, slot >= 0 ? a->quanta + (Py_ssize_t)slot * a->n_blocks : NULL, step,
                  NULL, -1, -1, a->shift,
                  col >= 0 ? a->columns + (Py_ssize_t)col * a->n_docs : NULL,
                  col >= 0 ? a->col_starts + (Py_ssize_t)col * (a->n_blocks + 1) : NULL,
                  (Py_ssize_t)lo, a->n_blocks, a->n_docs};
    if (ihi > ilo) { /* a long list: its impact prefix holds its best, best first */
        t->maximum = weighed(a->imp_scores[ilo], t->count);
        if (ihi - ilo >= k && weighed(a->imp_scores[ilo + k - 1], t->count) > *theta)
            *theta = weighed(a->imp_scores[ilo + k - 1], t->count);
    } else {
        t->maximum = list_maximum(t);
    }
    return 0;
}

/* Parse the terms, sort them by maximum score, ascending, fill ub (ub[i]: the sum of the
 * maxima of terms 0..i), and raise *theta to the best k-th single-term score. Returns -1
 * on error, 1 when the maxima sum to `limit` or more (a sum might round: the numpy kernel
 * answers), else 0. */
static int read_terms(PyObject *spec, const arrays_t *a, Py_ssize_t k, double limit,
                      term_t *terms, double *ub, Py_ssize_t n, double *theta) {
    for (Py_ssize_t i = 0; i < n; i++) {
        term_t t;
        if (read_term(PySequence_Fast_GET_ITEM(spec, i), a, k, &t, theta) < 0) return -1;
        Py_ssize_t j = i; /* insertion sort: queries have few terms */
        while (j > 0 && terms[j - 1].maximum > t.maximum) {
            terms[j] = terms[j - 1];
            j--;
        }
        terms[j] = t;
    }
    double sum = 0.0;
    for (Py_ssize_t i = 0; i < n; i++) {
        sum += terms[i].maximum;
        ub[i] = sum;
    }
    return sum >= limit ? 1 : 0;
}

/* Room for the call: the terms, their bounds, the heap, the laid-out blocks, and the
 * windowed path's totals, candidates and expected postings. */
typedef struct {
    term_t *terms;
    double *ub, *bub, *wub, *heap_scores, *acc, *total, *est;
    int32_t *heap_docs, *cand;
    float *rows;
} scratch_t;

static void free_scratch(scratch_t *s) {
    PyMem_Free(s->terms);
    PyMem_Free(s->ub);
    PyMem_Free(s->bub);
    PyMem_Free(s->wub);
    PyMem_Free(s->heap_scores);
    PyMem_Free(s->heap_docs);
    PyMem_Free(s->rows);
    PyMem_Free(s->acc);
    PyMem_Free(s->total);
    PyMem_Free(s->cand);
    PyMem_Free(s->est);
}

/* Run MaxScore and list the hits, for terms already read into s: windowed when the lists
 * hold at least `windowed` postings a block, block by block when some list has block
 * maxima and they hold at least `dense` a block, else document at a time. */
static PyObject *ranked(scratch_t *s, Py_ssize_t n, Py_ssize_t k, double theta,
                        const arrays_t *a, Py_ssize_t dense, Py_ssize_t windowed) {
    Py_ssize_t postings = 0;
    int with_maxima = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        postings += s->terms[i].end - s->terms[i].pos;
        with_maxima |= s->terms[i].quanta != NULL;
    }
    int by_windows = a->quanta != NULL && a->shift + WINDOW_BLOCKS <= 20 && n > 1
                     && postings / a->n_blocks >= windowed;
    int by_blocks = !by_windows && with_maxima && n > 1 && postings / a->n_blocks >= dense;
    int wshift = a->shift + WINDOW_BLOCKS;
    size_t width = (size_t)1 << wshift;
    /* no more hits than postings: a huge k allocates no more */
    heap_t h = {NULL, NULL, 0, k < postings ? k : (postings > 0 ? postings : 1), theta};
    h.score = s->heap_scores = PyMem_Malloc((size_t)h.cap * sizeof(double));
    h.doc = s->heap_docs = PyMem_Malloc((size_t)h.cap * sizeof(int32_t));
    if (by_blocks || by_windows) {
        s->rows = PyMem_Malloc(((size_t)n * sizeof(float)) << a->shift);
        if (s->rows != NULL)
            for (Py_ssize_t i = 0; i < n; i++) s->terms[i].row = s->rows + ((size_t)i << a->shift);
    }
    if (by_windows) {
        s->acc = PyMem_Calloc(width, sizeof(double)); /* each window leaves it all 0 */
        s->total = PyMem_Malloc(width * sizeof(double));
        s->cand = PyMem_Malloc(width * sizeof(int32_t));
        s->est = PyMem_Malloc((size_t)n * sizeof(double));
        s->wub = PyMem_Malloc((size_t)n * sizeof(double));
        if (s->est != NULL) {
            double docs = (double)a->n_blocks * (double)((int64_t)1 << a->shift);
            for (Py_ssize_t i = 0; i < n; i++)
                s->est[i] = (double)(s->terms[i].end - s->terms[i].pos) * (double)width / docs;
        }
    }
    if (!h.score || !h.doc || ((by_blocks || by_windows) && !s->rows)
        || (by_windows && (!s->acc || !s->total || !s->cand || !s->est || !s->wub)))
        return PyErr_NoMemory();
    Py_BEGIN_ALLOW_THREADS
    if (by_windows)
        run_windows(s->terms, s->ub, n, &h, a->shift, wshift, s->acc, s->cand, s->total,
                    s->est, s->bub, s->wub);
    else if (by_blocks)
        run_blocks(s->terms, s->ub, n, &h, a->shift, s->bub, 0, NONE);
    else
        run(s->terms, s->ub, n, &h, 0);
    Py_END_ALLOW_THREADS
    return sorted_hits(&h);
}

/* The top k, or Py_None when a sum might round. */
static PyObject *top_k(PyObject *spec_arg, const arrays_t *a, Py_ssize_t k, double limit,
                       Py_ssize_t dense, Py_ssize_t windowed) {
    PyObject *result = NULL, *spec = PySequence_Fast(spec_arg, "terms must be a sequence");
    if (spec == NULL) return NULL;
    scratch_t s = {0};
    Py_ssize_t n = PySequence_Fast_GET_SIZE(spec), room = n ? n : 1;
    double theta = 0.0;
    s.terms = PyMem_Malloc((size_t)room * sizeof(term_t));
    s.ub = PyMem_Malloc((size_t)room * sizeof(double));
    s.bub = PyMem_Malloc((size_t)room * sizeof(double));
    if (!s.terms || !s.ub || !s.bub) {
        PyErr_NoMemory();
    } else {
        int inexact = read_terms(spec, a, k, limit, s.terms, s.ub, n, &theta);
        if (inexact > 0)
            result = Py_NewRef(Py_None);
        else if (inexact == 0)
            result = ranked(&s, n, k, theta, a, dense, windowed);
    }
    free_scratch(&s);
    Py_DECREF(spec);
    return result;
}

#define USAGE "maxscore(docs, scores, imp_scores, terms, k, limit[, quanta, shift, dense" \
              "[, windowed[, columns, starts]]])"

/* The arrays from the call's buffers: views[0..2] docs, scores, imp_scores; views[3], when
 * got, the block maxima (uint8, one row of blocks a slot); views[4..5], when got, the
 * score columns (float32, a row of n_docs each) and their block starts (int32, a row of
 * n_blocks + 1 each). Returns -1 on bad input. */
static int read_arrays(Py_buffer *views, int with_blocks, int with_columns, long shift,
                       arrays_t *a) {
    if (views[0].len != views[1].len || views[0].itemsize != 4 || views[1].itemsize != 4
        || views[2].itemsize != 4) {
        PyErr_SetString(PyExc_ValueError,
                        "docs (int32) and scores (float32) must match; imp_scores is float32");
        return -1;
    }
    *a = (arrays_t){views[0].buf, views[1].buf, views[2].buf, NULL, views[0].len / 4,
                    views[2].len / 4, 0, 0, 0, NULL, NULL, 0, 0};
    if (with_blocks) {
        if (views[3].itemsize != 1 || views[3].ndim != 2 || views[3].shape[1] < 1
            || shift < 0 || shift > 30) {
            PyErr_SetString(PyExc_ValueError, "quanta are uint8 rows of one or more blocks; "
                                              "shift lies in 0..30");
            return -1;
        }
        a->quanta = views[3].buf;
        a->n_slots = views[3].shape[0];
        a->n_blocks = views[3].shape[1];
        a->shift = (int)shift;
    }
    if (with_columns) {
        if (views[4].itemsize != 4 || views[4].ndim != 2 || views[5].itemsize != 4
            || views[5].ndim != 2 || views[5].shape[0] != views[4].shape[0]
            || views[5].shape[1] != a->n_blocks + 1
            || views[4].shape[1] > (a->n_blocks << a->shift)) {
            PyErr_SetString(PyExc_ValueError, "columns are float32 rows of the documents, "
                                              "their starts int32 rows of n_blocks + 1");
            return -1;
        }
        a->columns = views[4].buf;
        a->col_starts = views[5].buf;
        a->n_columns = views[4].shape[0];
        a->n_docs = views[4].shape[1];
    }
    return 0;
}

static PyObject *maxscore(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (nargs != 6 && nargs != 9 && nargs != 10 && nargs != 12) {
        PyErr_SetString(PyExc_TypeError, USAGE);
        return NULL;
    }
    Py_ssize_t k = PyLong_AsSsize_t(args[4]), dense = 0, windowed = PY_SSIZE_T_MAX;
    double limit = PyFloat_AsDouble(args[5]);
    long shift = 0;
    if (nargs >= 9) {
        shift = PyLong_AsLong(args[7]);
        dense = PyLong_AsSsize_t(args[8]);
    }
    if (nargs >= 10) windowed = PyLong_AsSsize_t(args[9]);
    if (PyErr_Occurred()) return NULL;
    if (k < 1 || dense < 0 || windowed < 0) {
        PyErr_SetString(PyExc_ValueError, "k must be positive, dense and windowed not negative");
        return NULL;
    }
    Py_buffer views[6];
    static const int arg_of[6] = {0, 1, 2, 6, 10, 11}; /* which argument each view is */
    int got = 0, want = nargs == 12 ? 6 : nargs >= 9 ? 4 : 3;
    PyObject *result = NULL;
    arrays_t a;
    for (; got < want; got++) {
        int flags = got >= 3 ? PyBUF_ND | PyBUF_C_CONTIGUOUS : PyBUF_C_CONTIGUOUS;
        if (PyObject_GetBuffer(args[arg_of[got]], &views[got], flags) < 0) goto done;
    }
    if (read_arrays(views, want >= 4, want == 6, shift, &a) == 0)
        result = top_k(args[3], &a, k, limit, dense, windowed);
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

/* Exact BM25 (Lucene) totals of candidate documents for segmented indexes (bm25_segments.py):
 * for each term (lo, hi, weight, count) and each candidate (ascending), the posting of the
 * candidate in docs[lo:hi] is found by bisection from the previous one's place, and its
 * score computed as bm25_build.lucene_scores computes it, operation for operation in
 * float32 (x = normInverse * tf; x += 1; q = weight / x; score = weight - q; times the
 * query count), then added in float64 to out[candidate]. Each step is stored (volatile),
 * so no compiler fuses a multiply and an add: the same bits as numpy's element-wise steps. */
static void rescore_terms(const int32_t *docs, const void *tfs, int tf_size, const float *ni,
                          const int64_t *cand, Py_ssize_t n, double *out, Py_ssize_t lo,
                          Py_ssize_t hi, float weight, float count) {
    Py_ssize_t pos = lo;
    for (Py_ssize_t i = 0; i < n && pos < hi; i++) {
        int64_t target = cand[i];
        Py_ssize_t a = pos, b = hi;
        while (a < b) {
            Py_ssize_t mid = a + ((b - a) >> 1);
            if (docs[mid] < target) a = mid + 1;
            else b = mid;
        }
        pos = a;
        if (pos == hi || docs[pos] != target) continue;
        float tf = tf_size == 2 ? (float)((const uint16_t *)tfs)[pos]
                                : (float)((const uint32_t *)tfs)[pos];
        volatile float x = ni[target] * tf;
        x = x + 1.0f;
        volatile float q = weight / x;
        volatile float score = weight - q;
        if (count != 1.0f) score = score * count;
        out[i] += (double)score;
    }
}

static PyObject *rescore(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (nargs != 6 || !PyTuple_Check(args[5])) {
        PyErr_SetString(PyExc_TypeError, "rescore(docs, tfs, norm_inverse, candidates, out, "
                                         "terms: tuple)");
        return NULL;
    }
    Py_buffer v[5];
    int got = 0;
    PyObject *result = NULL;
    for (; got < 5; got++) {
        int flags = got == 4 ? PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS : PyBUF_C_CONTIGUOUS;
        if (PyObject_GetBuffer(args[got], &v[got], flags | PyBUF_FORMAT) < 0) goto done;
    }
    Py_ssize_t n_post = v[0].len / 4, n_docs = v[2].len / 4, n = v[3].len / 8;
    int tf_size = (int)v[1].itemsize;
    if (v[0].itemsize != 4 || (tf_size != 2 && tf_size != 4) || v[1].len / tf_size != n_post
        || v[2].itemsize != 4 || v[3].itemsize != 8 || v[4].itemsize != 8
        || v[4].len / 8 != n) {
        PyErr_SetString(PyExc_ValueError, "docs int32, tfs uint16 or uint32 (one per posting), "
                                          "norm_inverse float32, candidates int64, out float64 "
                                          "(one per candidate)");
        goto done;
    }
    const int64_t *cand = v[3].buf;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (cand[i] < 0 || cand[i] >= n_docs || (i && cand[i] <= cand[i - 1])) {
            PyErr_SetString(PyExc_ValueError, "candidates must ascend, each a document");
            goto done;
        }
    }
    PyObject *terms = args[5];
    for (Py_ssize_t t = 0; t < PyTuple_GET_SIZE(terms); t++) {
        Py_ssize_t lo, hi;
        float weight, count;
        if (!PyArg_ParseTuple(PyTuple_GET_ITEM(terms, t), "nnff", &lo, &hi, &weight, &count))
            goto done;
        if (lo < 0 || hi < lo || hi > n_post) {
            PyErr_SetString(PyExc_ValueError, "a term's postings lie outside docs");
            goto done;
        }
        rescore_terms(v[0].buf, v[1].buf, tf_size, v[2].buf, cand, n, v[4].buf, lo, hi, weight,
                      count);
    }
    result = Py_NewRef(Py_None);
done:
    while (got-- > 0) PyBuffer_Release(&v[got]);
    return result;
}

static PyMethodDef methods[] = {
    {"maxscore", (PyCFunction)(void (*)(void))maxscore, METH_FASTCALL,
     USAGE " -> [(doc, total)] or None\n\n"
     "terms: (lo, hi, count, ilo, ihi[, slot, step]) per query term: postings docs[lo:hi]\n"
     "(ascending), impact prefix imp_scores[ilo:ihi] (best first), and the row slot of\n"
     "quanta (-1: none) holding per block of 2**shift documents its best score in whole\n"
     "steps. Lists of at least dense postings per block go block by block, of at least\n"
     "windowed (default: never) a window of 16 blocks at a time, summed. A term may\n"
     "name its row of columns (its score for every document) and starts (the offset of\n"
     "its first posting in each block, and its length). Scores are\n"
     "non-negative multiples of one unit u and limit is 2**53 u; None when the terms'\n"
     "maxima sum to limit or more."},
    {"rescore", (PyCFunction)(void (*)(void))rescore, METH_FASTCALL,
     "rescore(docs, tfs, norm_inverse, candidates, out, terms) -> None\n\n"
     "Adds to out[i] each term's exact Lucene score of document candidates[i] (ascending):\n"
     "terms is a tuple of (lo, hi, weight, count), the term's postings docs[lo:hi] and\n"
     "tfs[lo:hi], its float32 weight and query count; norm_inverse is per document."},
    {"find_term", (PyCFunction)(void (*)(void))find_term, METH_FASTCALL,
     "find_term(hashes, offsets, blob, term, crc32) -> term id, or -1 when absent\n\n"
     "hashes (uint32, ascending) and offsets (int64, one more) index the terms' UTF-8 bytes\n"
     "in blob; term is the bytes sought and crc32 their zlib.crc32."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_bm25c", "Compiled BM25 top-k (see bm25_query.py).", -1,
    methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__bm25c(void) {
#if defined(GK_WIDE_SCAN)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f")) take = take_avx512;
    else if (__builtin_cpu_supports("avx2")) take = take_avx2;
#endif
    PyObject *m = PyModule_Create(&module);
    if (m != NULL && PyModule_AddIntConstant(m, "VERSION", GK_KERNEL_VERSION) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
