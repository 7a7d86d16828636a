/* gpu_lookup.c -- device name + hints -> table row (rules in gpu_lookup.h). */
#include <math.h>
#include <string.h>

#include "gpu_lookup.h"
#include "gpu_name.h"
#include "mfu_text.h"

/* ---- the name as tokens --------------------------------------------------- */

#define MFU_MAX_TOKENS (MFU_GPU_NAME_MAX / 2 + 1)

typedef struct name_tokens {
    char buffer[MFU_GPU_NAME_MAX + 1];
    const char *token[MFU_MAX_TOKENS];
    size_t count;  /* all tokens */
    size_t device; /* tokens before "mig": the device's own */
    int is_mig;
} name_tokens;

/* Split the normalized name in t->buffer at its single spaces. */
static void split_tokens(name_tokens *t)
{
    char *p = t->buffer;
    size_t i;
    t->count = 0;
    while (*p != '\0' && t->count < MFU_MAX_TOKENS) {
        t->token[t->count++] = p;
        while (*p != '\0' && *p != ' ')
            p++;
        if (*p == ' ')
            *p++ = '\0';
    }
    t->device = t->count;
    t->is_mig = 0;
    for (i = 0; i < t->count; i++) {
        if (strcmp(t->token[i], "mig") == 0) {
            t->device = i;
            t->is_mig = 1;
            break;
        }
    }
}

static int device_has(const name_tokens *t, const char *word)
{
    size_t i;
    for (i = 0; i < t->device; i++) {
        if (strcmp(t->token[i], word) == 0)
            return 1;
    }
    return 0;
}

/* ---- a row's token lists (space-separated words) --------------------------- */

enum token_class { CLASS_NONE, CLASS_FORM, CLASS_MEMORY_SIZE, CLASS_MEMORY_TYPE };

static enum token_class classify(const char *tok, size_t len)
{
    size_t digits = 0;
    if ((len == 4 && strncmp(tok, "pcie", 4) == 0) ||
        (len == 3 && strncmp(tok, "nvl", 3) == 0) ||
        (len >= 3 && len <= 4 && strncmp(tok, "sxm", 3) == 0))
        return CLASS_FORM;
    if (len >= 4 && strncmp(tok, "hbm", 3) == 0)
        return CLASS_MEMORY_TYPE;
    while (digits < len && tok[digits] >= '0' && tok[digits] <= '9')
        digits++;
    if (digits > 0 && ((len == digits + 1 && tok[digits] == 'g') ||
                       (len == digits + 2 && tok[digits] == 'g' &&
                        tok[digits + 1] == 'b')))
        return CLASS_MEMORY_SIZE;
    return CLASS_NONE;
}

/* Is a word of `list` the token `word` (class CLASS_NONE), or any token of
 * class `cls` (word NULL)? */
static int list_has_any(const char *list, const char *word, enum token_class cls)
{
    size_t wlen = word != NULL ? strlen(word) : 0;
    const char *p = list;
    if (list == NULL)
        return 0;
    while (*p != '\0') {
        const char *end = p;
        size_t len;
        while (*end != '\0' && *end != ' ')
            end++;
        len = (size_t)(end - p);
        if (word != NULL ? (len == wlen && strncmp(p, word, wlen) == 0)
                         : (len > 0 && classify(p, len) == cls))
            return 1;
        p = (*end == ' ') ? end + 1 : end;
    }
    return 0;
}

static int list_has(const char *list, const char *word)
{
    return list_has_any(list, word, CLASS_NONE);
}

static int list_has_class(const char *list, enum token_class cls)
{
    return list_has_any(list, NULL, cls);
}

/* ---- rule 1: does a row fit the name and the hints? ----------------------- */

typedef struct candidate {
    const mfu_gpu_spec *spec;
    int variant_hits;
    double memory_distance; /* |log(reported / datasheet)|, or 0 */
    double fraction;
    int is_partition;
} candidate;

static int row_fits(const mfu_gpu_spec *spec, const name_tokens *t,
                    const mfu_device_query *q, candidate *c)
{
    size_t i;
    int hits = 0;
    double fraction = 1.0;
    int partition = 0;

    if (!device_has(t, spec->model_token))
        return 0;
    for (i = 0; i < t->device; i++) {
        if (list_has(spec->reject_tokens, t->token[i]))
            return 0;
    }
    if (spec->required_token != NULL && !device_has(t, spec->required_token))
        return 0;
    for (i = 0; i < t->device; i++) {
        enum token_class cls = classify(t->token[i], strlen(t->token[i]));
        if (list_has(spec->variant_tokens, t->token[i]))
            hits++;
        else if (cls != CLASS_NONE && list_has_class(spec->variant_tokens, cls))
            return 0; /* e.g. "pcie" named, the row is the SXM one */
    }
    /* Compute capability: NVIDIA rows only (ROCm reports gfx numbers). */
    if (spec->cc_major >= 0 && q->cc_major >= 0) {
        if (q->cc_major != spec->cc_major)
            return 0;
        if (q->cc_minor >= 0 && q->cc_minor != spec->cc_minor)
            return 0;
    }
    /* SM / CU count and partitions. */
    if (t->is_mig) {
        if (q->num_sms < 1 || spec->num_sms < 1 || q->num_sms > spec->num_sms)
            return 0;
        fraction = (double)q->num_sms / (double)spec->num_sms;
        partition = 1;
    } else if (q->num_sms >= 1 && spec->num_sms >= 1 &&
               q->num_sms != spec->num_sms) {
        if (spec->cc_major < 0 && q->num_sms < spec->num_sms &&
            spec->num_sms % q->num_sms == 0) {
            fraction = (double)q->num_sms / (double)spec->num_sms;
            partition = 1; /* AMD compute partition (CPX/DPX/QPX) */
        } else {
            return 0;
        }
    }
    /* Memory of whole devices only. */
    c->memory_distance = 0.0;
    if (!partition && q->total_memory_bytes > 0 && spec->memory_bytes > 0 &&
        !spec->memory_shared_with_cpu) {
        double ratio = (double)q->total_memory_bytes / (double)spec->memory_bytes;
        if (ratio < 0.75 || ratio > 1.25)
            return 0;
        c->memory_distance = fabs(log(ratio));
    }
    c->spec = spec;
    c->variant_hits = hits;
    c->fraction = fraction;
    c->is_partition = partition;
    return 1;
}

/* ---- rule 0: a row's display name, given with no hint ----------------------- */

static int no_hints(const mfu_device_query *q)
{
    return q->cc_major < 0 && q->cc_minor < 0 && q->num_sms < 0 &&
           q->total_memory_bytes == 0;
}

/* The row whose display name `name` is (blanks around it ignored), or NULL. */
static const mfu_gpu_spec *display_name_row(const char *name)
{
    size_t len = mfu_text_bounded_len(name, MFU_GPU_NAME_MAX + 1);
    size_t i, n = mfu_gpu_spec_count();
    const mfu_gpu_spec *spec;
    while (len > 0 && mfu_text_is_space(*name)) {
        name++;
        len--;
    }
    while (len > 0 && mfu_text_is_space(name[len - 1]))
        len--;
    for (i = 0; i < n; i++) {
        if (mfu_gpu_spec_get(i, &spec) == MFU_OK &&
            mfu_text_span_equals(name, len, spec->name))
            return spec;
    }
    return NULL;
}

/* ---- the lookup ------------------------------------------------------------- */

static mfu_status check_query(const mfu_device_query *q)
{
    if (q->name == NULL)
        return MFU_ERR_INVALID_ARGUMENT;
    if (q->cc_major < -1 || q->cc_major > MFU_GPU_CC_MAX || q->cc_minor < -1 ||
        q->cc_minor > MFU_GPU_CC_MAX)
        return MFU_ERR_INVALID_ARGUMENT;
    if (q->num_sms == 0 || q->num_sms < -1)
        return MFU_ERR_INVALID_ARGUMENT;
    return MFU_OK;
}

static void found(mfu_gpu_match *out, const candidate *c)
{
    out->spec = c->spec;
    out->mig_fraction = c->fraction;
    out->is_partition = c->is_partition;
    out->num_candidates = 1;
}

static void clear_match(mfu_gpu_match *out)
{
    size_t i;
    out->spec = NULL;
    out->mig_fraction = 1.0;
    out->is_partition = 0;
    out->num_candidates = 0;
    for (i = 0; i < MFU_GPU_CANDIDATES_MAX; i++) {
        out->candidates[i] = NULL;
        out->candidate_fraction[i] = 0.0;
    }
}

/* Rule 2 over the rows that fit: the tie-breaks, then one row or the tied
 * ones listed in out->candidates. Three passes over the table instead of a
 * candidate array of the table's size. */
static mfu_status break_ties(const name_tokens *tokens, const mfu_device_query *query,
                             mfu_gpu_match *out)
{
    candidate c = {0}, kept = {0}, best_default = {0};
    size_t i, n = mfu_gpu_spec_count();
    const mfu_gpu_spec *spec;
    int fits = 0, top_hits = -1, num_kept = 0, num_defaults = 0;
    double closest = HUGE_VAL;

    /* (a) the most variant tokens named, */
    for (i = 0; i < n; i++) {
        if (mfu_gpu_spec_get(i, &spec) == MFU_OK && row_fits(spec, tokens, query, &c)) {
            fits++;
            if (c.variant_hits > top_hits)
                top_hits = c.variant_hits;
        }
    }
    out->num_candidates = fits;
    if (fits == 0)
        return MFU_ERR_NOT_FOUND;
    /* (b) among those, the closest memory size (0 for all when not given), */
    for (i = 0; i < n; i++) {
        if (mfu_gpu_spec_get(i, &spec) == MFU_OK && row_fits(spec, tokens, query, &c) &&
            c.variant_hits == top_hits && c.memory_distance < closest)
            closest = c.memory_distance;
    }
    /* (c) the rows within 5% of it, and the bare-name defaults among them
     * whose SM count was given and matched. */
    for (i = 0; i < n; i++) {
        if (mfu_gpu_spec_get(i, &spec) != MFU_OK || !row_fits(spec, tokens, query, &c) ||
            c.variant_hits != top_hits || c.memory_distance > closest + 0.05)
            continue;
        if (num_kept == 0)
            kept = c;
        if (num_kept < MFU_GPU_CANDIDATES_MAX) {
            out->candidates[num_kept] = c.spec;
            out->candidate_fraction[num_kept] = c.fraction;
        }
        num_kept++;
        if (query->num_sms >= 1 && spec->bare_name_default &&
            spec->num_sms == query->num_sms && num_defaults++ == 0)
            best_default = c;
    }
    if (num_kept == 1 || num_defaults == 1) {
        const candidate *winner = num_kept == 1 ? &kept : &best_default;
        clear_match(out);
        found(out, winner);
        return MFU_OK;
    }
    out->num_candidates = num_kept; /* ambiguous */
    return MFU_ERR_NOT_FOUND;
}

mfu_status mfu_gpu_lookup(const mfu_device_query *query, mfu_gpu_match *out)
{
    name_tokens tokens;
    const mfu_gpu_spec *spec;
    mfu_status st;

    if (query == NULL || out == NULL)
        return MFU_ERR_INVALID_ARGUMENT;
    clear_match(out);
    st = check_query(query);
    if (st != MFU_OK)
        return st;
    st = mfu_gpu_normalize_name(query->name, tokens.buffer, sizeof tokens.buffer);
    if (st != MFU_OK)
        return st;

    if (no_hints(query)) {
        spec = display_name_row(query->name);
        if (spec != NULL) {
            candidate c = {0};
            c.spec = spec;
            c.fraction = 1.0;
            found(out, &c);
            return MFU_OK;
        }
    }
    split_tokens(&tokens);
    return break_ties(&tokens, query, out);
}

/* ---- rule 3: do the tied rows agree? ---------------------------------------- */

mfu_status mfu_gpu_candidates_peak(const mfu_gpu_match *match, mfu_dtype dtype,
                                   double *tflops_out, double *bandwidth_out)
{
    double first_tflops = 0.0, first_bandwidth = 0.0;
    int bandwidth_agrees = 1, i;

    if (match == NULL || tflops_out == NULL || bandwidth_out == NULL ||
        (int)dtype < 0 || dtype >= MFU_DTYPE_COUNT)
        return MFU_ERR_INVALID_ARGUMENT;
    *tflops_out = 0.0;
    *bandwidth_out = 0.0;
    if (match->spec != NULL || match->num_candidates < 2 ||
        match->num_candidates > MFU_GPU_CANDIDATES_MAX)
        return MFU_ERR_NOT_FOUND;
    for (i = 0; i < match->num_candidates; i++) {
        const mfu_gpu_spec *row = match->candidates[i];
        double fraction = match->candidate_fraction[i], tflops, bandwidth;
        if (row == NULL || !(fraction > 0.0 && fraction <= 1.0))
            return MFU_ERR_INVALID_ARGUMENT;
        if (mfu_gpu_spec_peak_tflops(row, dtype, &tflops) != MFU_OK)
            return MFU_ERR_NOT_FOUND; /* absent in this row */
        tflops *= fraction;
        bandwidth = row->memory_bandwidth_bytes_per_sec * fraction;
        if (i == 0) {
            first_tflops = tflops;
            first_bandwidth = bandwidth;
        } else if (tflops != first_tflops) {
            return MFU_ERR_NOT_FOUND; /* the rows differ */
        }
        if (!(bandwidth > 0.0) || bandwidth != first_bandwidth)
            bandwidth_agrees = 0;
    }
    *tflops_out = first_tflops;
    *bandwidth_out = bandwidth_agrees ? first_bandwidth : 0.0;
    return MFU_OK;
}
