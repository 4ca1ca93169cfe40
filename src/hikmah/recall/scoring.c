/* hikmah.recall._scoring: Resonance Recall's score of each candidate, in one pass.
 *
 * Recall (hikmah/recall.py) chooses which candidates to score and in what order;
 * this module computes, for each of them, the numbers of the formula
 * (docs/storage.md, "Recall without a scan"; docs/semantic.md for the two weightings and
 * the semantic blend):
 *
 *   lexical   reference:  coverage = |M|/|Q|,           overlap = |M| / (|Q| + |T| - |M|)
 *             idf-cosine: coverage = idf(M)/idf(Q),     overlap = |M| / sqrt(|Q| |T|)
 *             lexical = max(wc coverage + wo overlap, match_floor), 0 without a match
 *   cue       wl lexical + wt tag_coverage (one of them when the query has only terms
 *             or only tags); with the semantic channel
 *             max(cue, (1 - w) cue + w clip((cos - floor) / (full - floor), 0, 1))
 *             for a trace admitted: its cosine at least `alone`, or a tag of the
 *             query, or a query term with a cosine at least `support`; 0 for any
 *             other (a trace with no vector yet keeps its lexical cue)
 *   meta      the weighted sum of recency, salience, confidence, provenance,
 *             urgency and feedback
 *   score     cue (relevance_base + metadata_share meta), at least the overdue floor
 *             for an overdue commitment; kept when admitted and the cue (or the cue of
 *             words and tags alone) reaches the gate or it is overdue
 *
 * and the two upper bounds recall prunes by: of matched terms and tags alone, and
 * of a candidate's features (exact but for urgency, counted in full for whatever
 * may be urgent). It replaced forty-odd NumPy passes per tier of candidates and
 * keeps their arithmetic operation for operation (a float32 product of a weight
 * and a float32 column, IEEE double elsewhere, sums in the same order), so every
 * score is what it was to the last bit (tests/kernel/test_scoring.py transcribes
 * the formula); setup.py builds it with -ffp-contract=off, so that no
 * multiply-add is fused.
 *
 * Arrays come in through the buffer protocol (arrays.h).
 */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "arrays.h"

#define DAY_MS 86400000.0
#define NO_DEADLINE (-1)
#define EPSILON 1e-9 /* slack between a bound and the score it bounds (recall._EPSILON) */

/* -- parameters ------------------------------------------------------------------- */

/* Everything a recall's scores depend on besides the candidates: the policy's
 * weights, the query's shape and the clock. Built once per recall (params()). */
typedef struct {
    int idf_cosine;    /* [recall] weighting: 0 reference, 1 idf-cosine */
    int listing;       /* no terms and no tags: scored by meta alone */
    int has_terms, has_tags;
    double n_query;    /* distinct query terms, at least 1 */
    double n_tags;     /* distinct query tags, at least 1 */
    double query_idf;  /* summed idf of the query terms (idf-cosine) */
    double coverage_w, overlap_w, match_floor, cue_lexical, cue_tag;
    double recency_w, provenance_w, prospective_w, feedback_w;
    float salience_w, confidence_w; /* NumPy multiplies the float32 columns in float32 */
    double meta_max;   /* the sum of the meta weights: the most meta can be */
    double recency_scale, prospective_scale, undated_urgency, unverified_factor;
    double relevance_base, metadata_share, overdue_floor, listing_scale, gate;
    double sem_weight, sem_floor, sem_span, sem_alone, sem_support; /* the [semantic] blend */
    int64_t now;
    int active, commitment; /* STATUS_CODE["active"], KIND_CODE["commitment"] */
} Params;

static const char *PARAMS_NAME = "hikmah.recall._scoring.Params";

static void free_params(PyObject *capsule) {
    PyMem_Free(PyCapsule_GetPointer(capsule, PARAMS_NAME));
}

static PyObject *params(PyObject *self, PyObject *args, PyObject *kwargs) {
    static char *names[] = {
        "idf_cosine", "listing", "n_query", "n_tags", "query_idf", "coverage_w", "overlap_w",
        "match_floor", "cue_lexical", "cue_tag", "recency_w", "salience_w", "confidence_w",
        "provenance_w", "prospective_w", "feedback_w", "recency_scale", "prospective_scale",
        "undated_urgency", "unverified_factor", "relevance_base", "metadata_share",
        "overdue_floor", "listing_scale", "gate", "sem_weight", "sem_floor", "sem_full",
        "sem_alone", "sem_support", "now", "active", "commitment", NULL};
    Params p;
    int n_query, n_tags;
    double salience_w, confidence_w, sem_full;
    long long now;
    if (!PyArg_ParseTupleAndKeywords(
            args, kwargs, "$ppii" "ddddd" "ddddd" "ddddd" "ddddd" "ddddd" "d" "Lii", names, &p.idf_cosine,
            &p.listing, &n_query, &n_tags, &p.query_idf, &p.coverage_w, &p.overlap_w,
            &p.match_floor, &p.cue_lexical, &p.cue_tag, &p.recency_w, &salience_w,
            &confidence_w, &p.provenance_w, &p.prospective_w, &p.feedback_w, &p.recency_scale,
            &p.prospective_scale, &p.undated_urgency, &p.unverified_factor,
            &p.relevance_base, &p.metadata_share, &p.overdue_floor, &p.listing_scale, &p.gate,
            &p.sem_weight, &p.sem_floor, &sem_full, &p.sem_alone, &p.sem_support, &now, &p.active,
            &p.commitment))
        return NULL;
    p.has_terms = n_query > 0;
    p.has_tags = n_tags > 0;
    p.n_query = n_query > 1 ? n_query : 1;
    p.n_tags = n_tags > 1 ? n_tags : 1;
    p.salience_w = (float)salience_w;
    p.confidence_w = (float)confidence_w;
    /* In the order recall adds them up. */
    p.meta_max = p.recency_w + salience_w + confidence_w + p.provenance_w + p.prospective_w
                 + p.feedback_w;
    p.sem_span = sem_full - p.sem_floor;
    p.now = now;
    Params *held = PyMem_Malloc(sizeof(Params));
    if (held == NULL)
        return PyErr_NoMemory();
    *held = p;
    PyObject *capsule = PyCapsule_New(held, PARAMS_NAME, free_params);
    if (capsule == NULL)
        PyMem_Free(held);
    return capsule;
}


static const Params *params_of(PyObject *capsule) {
    if (!PyCapsule_IsValid(capsule, PARAMS_NAME)) {
        PyErr_SetString(PyExc_TypeError, "params: not what _scoring.params made");
        return NULL;
    }
    return PyCapsule_GetPointer(capsule, PARAMS_NAME);
}

/* -- the formula ------------------------------------------------------------------ */

static inline double larger(double a, double b) { return a >= b ? a : b; }

typedef struct {
    double coverage, overlap, lexical;
} Lexical;

/* The lexical score of a candidate holding ``matched`` of the query's terms (their
 * idf summing to ``matched_idf``) among its ``length`` distinct terms. */
static inline Lexical lexical_of(const Params *p, double matched, double matched_idf,
                                 double length) {
    Lexical l;
    if (p->idf_cosine) {
        l.coverage = p->query_idf > 0 ? matched_idf / p->query_idf : matched / p->n_query;
        l.overlap = matched / sqrt(p->n_query * larger(length, larger(matched, 1.0)));
    } else {
        l.coverage = matched / p->n_query;
        l.overlap = matched / larger(p->n_query + length - matched, 1.0);
    }
    l.lexical = matched > 0
                    ? larger(p->coverage_w * l.coverage + p->overlap_w * l.overlap, p->match_floor)
                    : 0.0;
    return l;
}

/* The most lexical score ``matched`` terms can give, whatever the trace's length:
 * the overlap is at most coverage under reference, sqrt(|M|/|Q|) under idf-cosine. */
static inline double lexical_bound(const Params *p, double matched, double matched_idf) {
    double share = matched / p->n_query, best;
    if (p->idf_cosine) {
        double coverage = p->query_idf > 0 ? matched_idf / p->query_idf : share;
        best = p->coverage_w * coverage + p->overlap_w * sqrt(share);
    } else {
        best = (p->coverage_w + p->overlap_w) * share;
    }
    return matched > 0 ? larger(best, p->match_floor) : 0.0;
}

static inline double cue_of(const Params *p, double lexical, double tag_coverage) {
    if (p->has_terms && p->has_tags)
        return p->cue_lexical * lexical + p->cue_tag * tag_coverage;
    return p->has_terms ? lexical : tag_coverage;
}

static inline double semantic_part(const Params *p, double cosine) {
    double part = (cosine - p->sem_floor) / p->sem_span;
    return part < 0.0 ? 0.0 : (part > 1.0 ? 1.0 : part);
}

/* Recency and feedback: the parts of meta that change after a trace is written. A
 * pinned trace does not age, and bad outcomes do not lower it. */
static inline void aged(const Params *p, int64_t created, uint8_t pinned, float feedback,
                        double *recency, double *feedback_out) {
    if (pinned == 1) {
        *recency = 1.0;
        *feedback_out = (double)(feedback >= 0.0f ? feedback : 0.0f);
        return;
    }
    int64_t age = p->now - created;
    *recency = 1.0 / (1.0 + ((double)(age > 0 ? age : 0) / DAY_MS) / p->recency_scale);
    *feedback_out = (double)feedback;
}

/* A trace's authority, lowered while unverified. */
static inline double provenance_of(const Params *p, float authority, uint8_t verified) {
    return (double)authority * (verified == 1 ? 1.0 : p->unverified_factor);
}

/* The cue's bound turned into a score's bound (recall._Scorer._bounded). */
static inline double bounded(const Params *p, double cue, double meta, uint8_t overdue) {
    double bound = cue * (p->relevance_base + p->metadata_share * meta) * (1 + EPSILON);
    if (cue < p->gate - EPSILON && !overdue)
        bound = -1.0;
    if (overdue)
        bound = larger(bound, p->overdue_floor * (1 + EPSILON));
    return bound;
}

/* -- entry points ----------------------------------------------------------------- */

typedef struct {
    Kind kind;
    int writable, optional;
    const char *name;
} Spec;

/* Borrow the arrays of the tuple ``seq`` as ``spec`` says, all of one length
 * (returned in ``n``; None stands for an optional array, left unborrowed). */
static int bind(PyObject *seq, const Spec *spec, int count, Array *a, Py_ssize_t *n) {
    if (!PyTuple_Check(seq) || PyTuple_GET_SIZE(seq) != count) {
        PyErr_Format(PyExc_TypeError, "expected a tuple of %d arrays", count);
        return 0;
    }
    for (int i = 0; i < count; i++) {
        PyObject *obj = PyTuple_GET_ITEM(seq, i);
        if (obj == Py_None && spec[i].optional)
            continue;
        if (!borrow(obj, &a[i], spec[i].kind, *n, spec[i].writable, spec[i].name))
            return 0;
        *n = a[i].view.shape[0];
    }
    return 1;
}

#define COUNT(spec) ((int)(sizeof(spec) / sizeof(spec[0])))

/* The parameters in ``capsule``, and the arrays of ``arrays`` borrowed as ``spec``
 * says; NULL, with nothing left borrowed, on an error. */
static const Params *borrow_all(PyObject *capsule, PyObject *arrays, const Spec *spec,
                                int count, Array *a, Py_ssize_t *n) {
    const Params *p = params_of(capsule);
    if (p == NULL || !bind(arrays, spec, count, a, n)) {
        release(a, count);
        return NULL;
    }
    return p;
}

/* The arguments of an entry point called as f(params, arrays), as borrow_all. */
static const Params *enter(PyObject *args, const Spec *spec, int count, Array *a,
                           Py_ssize_t *n) {
    PyObject *capsule, *arrays;
    if (!PyArg_ParseTuple(args, "OO!", &capsule, &PyTuple_Type, &arrays))
        return NULL;
    return borrow_all(capsule, arrays, spec, count, a, n);
}

static const Spec FIRST_BOUND[] = {
    {F64, 0, 0, "matched"}, {F64, 0, 0, "tagged"}, {F64, 0, 0, "matched_idf"},
    {U8, 0, 0, "overdue"},  {F64, 1, 0, "out"},
};

static PyObject *first_bound(PyObject *self, PyObject *args) {
    Array a[COUNT(FIRST_BOUND)] = {0};
    Py_ssize_t n = -1;
    const Params *p = enter(args, FIRST_BOUND, COUNT(FIRST_BOUND), a, &n);
    if (p == NULL)
        return NULL;
    const double *matched = AT(a[0], double), *tagged = AT(a[1], double),
                 *matched_idf = AT(a[2], double);
    const uint8_t *overdue = AT(a[3], uint8_t);
    double *out = AT(a[4], double);
    for (Py_ssize_t i = 0; i < n; i++) {
        /* A bound of the counts alone: neighbours often hold the same (a common word's
         * thousands of candidates), and the same counts give the same bound. */
        if (i > 0 && matched[i] == matched[i - 1] && matched_idf[i] == matched_idf[i - 1]
            && tagged[i] == tagged[i - 1] && overdue[i] == overdue[i - 1]) {
            out[i] = out[i - 1];
            continue;
        }
        double cue = cue_of(p, lexical_bound(p, matched[i], matched_idf[i]), tagged[i] / p->n_tags);
        out[i] = bounded(p, cue, p->meta_max, overdue[i]);
    }
    release(a, COUNT(FIRST_BOUND));
    Py_RETURN_NONE;
}

static const Spec FEATURE_BOUND[] = {
    {F64, 0, 0, "matched"}, {F64, 0, 0, "tagged"},  {F64, 0, 0, "matched_idf"},
    {U8, 0, 0, "overdue"},  {U16, 0, 0, "nterms"},  {I64, 0, 0, "created"},
    {U8, 0, 0, "pinned"},   {F32, 0, 0, "feedback"}, {F64, 0, 0, "fixed"},
    {F64, 1, 0, "out"},
};

static PyObject *feature_bound(PyObject *self, PyObject *args) {
    Array a[COUNT(FEATURE_BOUND)] = {0};
    Py_ssize_t n = -1;
    const Params *p = enter(args, FEATURE_BOUND, COUNT(FEATURE_BOUND), a, &n);
    if (p == NULL)
        return NULL;
    const double *matched = AT(a[0], double), *tagged = AT(a[1], double),
                 *matched_idf = AT(a[2], double), *fixed = AT(a[8], double);
    const uint8_t *overdue = AT(a[3], uint8_t), *pinned = AT(a[6], uint8_t);
    const uint16_t *nterms = AT(a[4], uint16_t);
    const int64_t *created = AT(a[5], int64_t);
    const float *feedback = AT(a[7], float);
    double *out = AT(a[9], double);
    for (Py_ssize_t i = 0; i < n; i++) {
        Lexical l = lexical_of(p, matched[i], matched_idf[i], (double)nterms[i]);
        double recency, fb;
        aged(p, created[i], pinned[i], feedback[i], &recency, &fb);
        double meta = fixed[i] + p->recency_w * recency + p->feedback_w * fb;
        out[i] = bounded(p, cue_of(p, l.lexical, tagged[i] / p->n_tags), meta, overdue[i]);
    }
    release(a, COUNT(FEATURE_BOUND));
    Py_RETURN_NONE;
}

static const Spec FIXED_META[] = {
    {I64, 0, 0, "deadline"},   {U8, 0, 0, "kind"},      {F32, 0, 0, "salience"},
    {F32, 0, 0, "confidence"}, {F32, 0, 0, "authority"}, {U8, 0, 0, "verified"},
    {F64, 1, 0, "out"},
};

static PyObject *fixed_meta(PyObject *self, PyObject *args) {
    Array a[COUNT(FIXED_META)] = {0};
    Py_ssize_t n = -1;
    const Params *p = enter(args, FIXED_META, COUNT(FIXED_META), a, &n);
    if (p == NULL)
        return NULL;
    const int64_t *deadline = AT(a[0], int64_t);
    const uint8_t *kind = AT(a[1], uint8_t), *verified = AT(a[5], uint8_t);
    const float *salience = AT(a[2], float), *confidence = AT(a[3], float),
                *authority = AT(a[4], float);
    double *out = AT(a[6], double);
    for (Py_ssize_t i = 0; i < n; i++) {
        double may_be_urgent = (deadline[i] != NO_DEADLINE) || (kind[i] == p->commitment);
        out[i] = p->prospective_w * may_be_urgent + (double)(p->salience_w * salience[i])
                 + (double)(p->confidence_w * confidence[i])
                 + p->provenance_w * provenance_of(p, authority[i], verified[i]);
    }
    release(a, COUNT(FIXED_META));
    Py_RETURN_NONE;
}

static const Spec SCORE_IN[] = {
    {F64, 0, 0, "matched"},    {F64, 0, 0, "tagged"},     {F64, 0, 0, "matched_idf"},
    {U16, 0, 0, "nterms"},     {I64, 0, 0, "created"},    {I64, 0, 0, "deadline"},
    {F32, 0, 0, "salience"},   {F32, 0, 0, "confidence"}, {F32, 0, 0, "authority"},
    {U8, 0, 0, "verified"},    {F32, 0, 0, "feedback"},   {U8, 0, 0, "pinned"},
    {U8, 0, 0, "status"},      {U8, 0, 0, "kind"},        {F64, 0, 1, "similarity"},
    {F64, 1, 0, "score"},      {U8, 1, 0, "keep"},
};
/* What ``why`` shows of each score, when asked for. */
static const Spec SCORE_WHY[] = {
    {F64, 1, 0, "cue"},          {F64, 1, 0, "meta"},       {F64, 1, 0, "coverage"},
    {F64, 1, 0, "jaccard"},      {F64, 1, 0, "overlap"},    {F64, 1, 0, "lexical"},
    {F64, 1, 0, "tag_coverage"}, {F64, 1, 0, "semantic_part"},
    {F64, 1, 0, "recency"},      {F64, 1, 0, "provenance"}, {F64, 1, 0, "urgency"},
    {F64, 1, 0, "feedback"},     {U8, 1, 0, "overdue"},
};

static PyObject *score(PyObject *self, PyObject *args) {
    PyObject *capsule, *arrays, *why_arrays;
    if (!PyArg_ParseTuple(args, "OO!O", &capsule, &PyTuple_Type, &arrays, &why_arrays))
        return NULL;
    Array a[COUNT(SCORE_IN)] = {0}, w[COUNT(SCORE_WHY)] = {0};
    Py_ssize_t n = -1;
    int explain = why_arrays != Py_None;
    const Params *p = borrow_all(capsule, arrays, SCORE_IN, COUNT(SCORE_IN), a, &n);
    if (p == NULL)
        return NULL;
    if (explain && !bind(why_arrays, SCORE_WHY, COUNT(SCORE_WHY), w, &n)) {
        release(a, COUNT(SCORE_IN));
        release(w, COUNT(SCORE_WHY));
        return NULL;
    }
    const double *matched = AT(a[0], double), *tagged = AT(a[1], double),
                 *matched_idf = AT(a[2], double), *similarity = AT(a[14], double);
    const uint16_t *nterms = AT(a[3], uint16_t);
    const int64_t *created = AT(a[4], int64_t), *deadline = AT(a[5], int64_t);
    const float *salience = AT(a[6], float), *confidence = AT(a[7], float),
                *authority = AT(a[8], float), *feedback = AT(a[10], float);
    const uint8_t *verified = AT(a[9], uint8_t), *pinned = AT(a[11], uint8_t),
                  *status = AT(a[12], uint8_t), *kind = AT(a[13], uint8_t);
    double *out_score = AT(a[15], double);
    uint8_t *out_keep = AT(a[16], uint8_t);
    for (Py_ssize_t i = 0; i < n; i++) {
        Lexical l = lexical_of(p, matched[i], matched_idf[i], (double)nterms[i]);
        double tag_coverage = tagged[i] / p->n_tags;
        double cue = p->listing ? 0.0 : cue_of(p, l.lexical, tag_coverage);
        double lexical_cue = cue, part = 0.0;
        /* A trace the channel has no vector for yet (its vector is being made) is
         * judged by its words alone. */
        int blended = similarity != NULL && !isnan(similarity[i]);
        int admitted = 1;
        if (blended) {
            double cosine = similarity[i];
            part = semantic_part(p, cosine);
            /* Meaning alone, or words the meaning backs: a tag the person named, or
             * query terms in a trace at least `support` similar (a shared everyday word
             * in an unrelated trace is not relevance). */
            admitted = cosine >= p->sem_alone || tagged[i] > 0
                       || (matched[i] > 0 && cosine >= p->sem_support);
            /* Meaning lifts a trace above what its words give, never below: a fact
             * named in passing in a long text keeps its words' cue. */
            cue = admitted ? larger(cue, (1.0 - p->sem_weight) * cue + p->sem_weight * part)
                           : 0.0;
        }
        double recency, fb;
        aged(p, created[i], pinned[i], feedback[i], &recency, &fb);
        double provenance = provenance_of(p, authority[i], verified[i]);
        int dated = deadline[i] != NO_DEADLINE, active = status[i] == p->active;
        int commitment = kind[i] == p->commitment;
        double urgency = 0.0;
        int overdue = 0;
        if (dated || commitment) {
            double days_left = (double)(deadline[i] - p->now) / DAY_MS;
            double due = 1.0 / (1.0 + larger(days_left, 0.0) / p->prospective_scale);
            urgency = active && dated ? (days_left <= 0 ? 1.0 : due)
                                      : (active && commitment ? p->undated_urgency : 0.0);
            overdue = active && commitment && dated && days_left <= 0;
        }
        double meta = p->recency_w * recency + (double)(p->salience_w * salience[i])
                      + (double)(p->confidence_w * confidence[i]) + p->provenance_w * provenance
                      + p->prospective_w * urgency + p->feedback_w * fb;
        double value;
        int keep;
        if (p->listing) {
            value = p->listing_scale * meta;
            keep = 1;
        } else {
            value = cue * (p->relevance_base + p->metadata_share * meta);
            if (overdue)
                value = larger(value, p->overdue_floor);
            /* An overdue commitment comes back whatever its cue (the reference), once
             * the channel finds it relevant at all when the channel judges. */
            keep = admitted && (cue >= p->gate || lexical_cue >= p->gate || overdue);
        }
        out_score[i] = value;
        out_keep[i] = (uint8_t)keep;
        if (explain) {
            AT(w[0], double)[i] = cue;
            AT(w[1], double)[i] = meta;
            AT(w[2], double)[i] = l.coverage;
            AT(w[3], double)[i] = p->idf_cosine
                                      ? matched[i] / larger(p->n_query + (double)nterms[i]
                                                                - matched[i], 1.0)
                                      : l.overlap;
            AT(w[4], double)[i] = l.overlap;
            AT(w[5], double)[i] = l.lexical;
            AT(w[6], double)[i] = tag_coverage;
            AT(w[7], double)[i] = part;
            AT(w[8], double)[i] = recency;
            AT(w[9], double)[i] = provenance;
            AT(w[10], double)[i] = urgency;
            AT(w[11], double)[i] = fb;
            AT(w[12], uint8_t)[i] = (uint8_t)overdue;
        }
    }
    release(a, COUNT(SCORE_IN));
    release(w, COUNT(SCORE_WHY));
    Py_RETURN_NONE;
}

/* -- candidates ------------------------------------------------------------------- */

typedef struct {
    uint32_t doc;
    int list;
} Head;

#define FEW_LISTS 8 /* up to which a scan of the heads finds the least */

static inline int before(Head a, Head b) {
    return a.doc < b.doc || (a.doc == b.doc && a.list < b.list);
}

static void sift_down(Head *heap, int size, int at) {
    for (;;) {
        int least = at, left = 2 * at + 1, right = left + 1;
        if (left < size && before(heap[left], heap[least]))
            least = left;
        if (right < size && before(heap[right], heap[least]))
            least = right;
        if (least == at)
            return;
        Head swap = heap[at];
        heap[at] = heap[least];
        heap[least] = swap;
        at = least;
    }
}

static const Spec MERGE_OUT[] = {
    {U32, 1, 0, "docs"}, {F64, 1, 0, "matched"}, {F64, 1, 0, "tagged"},
    {F64, 1, 0, "matched_idf"}, {U8, 1, 0, "overdue"},
};

/* The documents in any of ``lists`` (each ascending and distinct: the query's term
 * lists, then its tag lists, then the overdue commitments), ascending, with in how
 * many term and tag lists each is, the idf of its term lists summed in list order
 * (as NumPy's bincount of a stable sort adds them), and whether it is overdue. */
static PyObject *merge(PyObject *self, PyObject *args) {
    PyObject *lists, *idf_obj, *outs;
    int n_terms, n_tags;
    if (!PyArg_ParseTuple(args, "O!iiOO!", &PyTuple_Type, &lists, &n_terms, &n_tags, &idf_obj,
                          &PyTuple_Type, &outs))
        return NULL;
    int k = (int)PyTuple_GET_SIZE(lists);
    if (n_terms < 0 || n_tags < 0 || n_terms + n_tags + 1 != k) {
        PyErr_SetString(PyExc_ValueError, "merge: the term, tag and overdue lists, in order");
        return NULL;
    }
    Array *in = PyMem_Calloc((size_t)k + 1, sizeof(Array));
    Head *heap = PyMem_Calloc((size_t)k, sizeof(Head));
    Py_ssize_t *at = PyMem_Calloc((size_t)k, sizeof(Py_ssize_t));
    Array out[COUNT(MERGE_OUT)] = {0};
    PyObject *result = NULL;
    Py_ssize_t total = 0, n = -1, count = 0;
    if (in == NULL || heap == NULL || at == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    for (int i = 0; i < k; i++) {
        if (!borrow(PyTuple_GET_ITEM(lists, i), &in[i], U32, -1, 0, "a posting list"))
            goto done;
        total += in[i].view.shape[0];
    }
    const double *idf = NULL;
    if (idf_obj != Py_None) {
        if (!borrow(idf_obj, &in[k], F64, n_terms, 0, "idf"))
            goto done;
        idf = AT(in[k], double);
    }
    if (!bind(outs, MERGE_OUT, COUNT(MERGE_OUT), out, &n))
        goto done;
    if (n < total) {
        PyErr_Format(PyExc_ValueError, "merge: room for %zd documents, not %zd", n, total);
        goto done;
    }
    uint32_t *docs = AT(out[0], uint32_t);
    double *matched = AT(out[1], double), *tagged = AT(out[2], double),
           *matched_idf = AT(out[3], double);
    uint8_t *overdue = AT(out[4], uint8_t);
    int size = 0;
    for (int i = 0; i < k; i++)
        if (in[i].view.shape[0] > 0)
            heap[size++] = (Head){AT(in[i], uint32_t)[0], i};
    for (int i = size / 2 - 1; i >= 0; i--)
        sift_down(heap, size, i);
    while (size > 0) {
        Head top;
        if (size <= FEW_LISTS) { /* a few lists: the least head by a scan beats the heap */
            int least = 0;
            for (int h = 1; h < size; h++)
                if (before(heap[h], heap[least]))
                    least = h;
            top = heap[least];
            Py_ssize_t next = ++at[top.list];
            if (next < in[top.list].view.shape[0])
                heap[least].doc = AT(in[top.list], uint32_t)[next];
            else
                heap[least] = heap[--size];
        } else {
            top = heap[0];
            Py_ssize_t next = ++at[top.list];
            if (next < in[top.list].view.shape[0])
                heap[0].doc = AT(in[top.list], uint32_t)[next];
            else
                heap[0] = heap[--size];
            sift_down(heap, size, 0);
        }
        if (count == 0 || docs[count - 1] != top.doc) {
            docs[count] = top.doc;
            matched[count] = tagged[count] = matched_idf[count] = 0.0;
            overdue[count] = 0;
            count++;
        }
        Py_ssize_t last = count - 1;
        if (top.list < n_terms) {
            matched[last] += 1.0;
            if (idf != NULL)
                matched_idf[last] += idf[top.list];
        } else if (top.list < n_terms + n_tags) {
            tagged[last] += 1.0;
        } else {
            overdue[last] = 1;
        }
    }
    result = PyLong_FromSsize_t(count);
done:
    if (in != NULL)
        release(in, k + 1);
    release(out, COUNT(MERGE_OUT));
    PyMem_Free(in);
    PyMem_Free(heap);
    PyMem_Free(at);
    return result;
}

/* -- tiers ------------------------------------------------------------------------ */

#define DISTINCT 256 /* bounds a grouping takes; more: NumPy's sort does it */

static const Spec GROUP[] = {{F64, 0, 0, "bound"}, {I64, 1, 0, "order"}};

/* The candidates whose bound is >= 0, in falling order of bound and by index among
 * equals (a stable sort's order), into ``order``; returns [(start, bound), ...] of
 * each run of one bound after how many there are, or None past DISTINCT bounds. A query's first bounds take
 * a few values (one per combination of terms and tags held), so a counting sort of
 * one pass does what a sort of every candidate did. */
static PyObject *group(PyObject *self, PyObject *args) {
    PyObject *arrays;
    if (!PyArg_ParseTuple(args, "O!", &PyTuple_Type, &arrays))
        return NULL;
    Array a[COUNT(GROUP)] = {0};
    Py_ssize_t n = -1;
    if (!bind(arrays, GROUP, COUNT(GROUP), a, &n)) {
        release(a, COUNT(GROUP));
        return NULL;
    }
    const double *bound = AT(a[0], double);
    int64_t *order = AT(a[1], int64_t);
    double values[DISTINCT];
    Py_ssize_t counts[DISTINCT], starts[DISTINCT];
    int distinct = 0, last = -1;
    PyObject *result = NULL;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (!(bound[i] >= 0))
            continue;
        if (last < 0 || values[last] != bound[i]) { /* runs of one bound are common */
            last = -1;
            for (int v = 0; v < distinct; v++)
                if (values[v] == bound[i]) {
                    last = v;
                    break;
                }
            if (last < 0) {
                if (distinct == DISTINCT) {
                    release(a, COUNT(GROUP));
                    Py_RETURN_NONE;
                }
                values[distinct] = bound[i];
                counts[distinct] = 0;
                last = distinct++;
            }
        }
        counts[last]++;
    }
    /* Falling order of the distinct bounds (an insertion sort: there are few). */
    int rank[DISTINCT];
    for (int v = 0; v < distinct; v++) {
        int at = v;
        while (at > 0 && values[rank[at - 1]] < values[v]) {
            rank[at] = rank[at - 1];
            at--;
        }
        rank[at] = v;
    }
    Py_ssize_t next = 0;
    for (int r = 0; r < distinct; r++) {
        starts[rank[r]] = next;
        next += counts[rank[r]];
    }
    result = PyList_New(distinct);
    if (result == NULL) {
        release(a, COUNT(GROUP));
        return NULL;
    }
    for (int r = 0; r < distinct; r++) {
        PyObject *run = Py_BuildValue("(nd)", starts[rank[r]], values[rank[r]]);
        if (run == NULL) {
            Py_DECREF(result);
            release(a, COUNT(GROUP));
            return NULL;
        }
        PyList_SET_ITEM(result, r, run);
    }
    last = -1;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (!(bound[i] >= 0))
            continue;
        if (last < 0 || values[last] != bound[i])
            for (last = 0; values[last] != bound[i]; last++)
                ;
        order[starts[last]++] = i;
    }
    release(a, COUNT(GROUP));
    return Py_BuildValue("(nN)", next, result);
}

static PyMethodDef methods[] = {
    {"params", (PyCFunction)(void (*)(void))params, METH_VARARGS | METH_KEYWORDS,
     "params(**weights) -> the parameters of one recall's scores."},
    {"first_bound", first_bound, METH_VARARGS,
     "first_bound(params, (matched, tagged, matched_idf, overdue, out)): the best score "
     "each candidate could have by its matched terms and tags alone; -1 where it cannot "
     "be recalled."},
    {"feature_bound", feature_bound, METH_VARARGS,
     "feature_bound(params, (matched, tagged, matched_idf, overdue, nterms, created, "
     "pinned, feedback, fixed, out)): the best score each candidate could have by its "
     "features; -1 where it cannot be recalled."},
    {"fixed_meta", fixed_meta, METH_VARARGS,
     "fixed_meta(params, (deadline, kind, salience, confidence, authority, verified, out)): "
     "the most meta what is fixed when a trace is written allows."},
    {"score", score, METH_VARARGS,
     "score(params, (matched, ..., similarity | None, score, keep), why | None): the score "
     "of each candidate, whether it may be recalled and, with ``why``, every term of it."},
    {"group", group, METH_VARARGS,
     "group((bound, order)) -> (count, [(start, bound), ...]) | None: the candidates of "
     "bound >= 0 by falling bound (a stable order) into ``order``, how many, and where each "
     "bound's run starts; None past 256 distinct bounds."},
    {"merge", merge, METH_VARARGS,
     "merge(lists, n_terms, n_tags, idf | None, (docs, matched, tagged, matched_idf, "
     "overdue)) -> how many documents: the candidates of the lists, ascending."},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_scoring", "Resonance Recall's score of each candidate, in one pass.",
    -1, methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__scoring(void) { return PyModule_Create(&module); }
