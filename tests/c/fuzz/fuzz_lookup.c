/*
 * fuzz_lookup.c -- mfu_gpu_lookup() on whatever a driver (or a user's
 * override) might report: arbitrary bytes as the device name, any SM
 * count, compute capability and memory size.
 *
 * Input: flags u8, cc_major i32, cc_minor i32, num_sms i32, memory u64,
 * then the name (the rest). Flag bit 0 passes the name unterminated when
 * it is longer than MFU_GPU_NAME_MAX + 1 bytes (gpu_name.h promises never
 * to read past that many bytes); bit 1 scales memory to GB.
 *
 * Properties:
 *  - status is OK, NOT_FOUND or INVALID_ARGUMENT, and INVALID exactly when
 *    a hint is out of its documented range or the name is empty,
 *    over-long or has no token left after normalisation;
 *  - OK: a row of the table, num_candidates 1, mig_fraction in (0, 1],
 *    1 unless a partition, every peak of the row finite and positive or
 *    absent; the row's model token is a token of the normalized name;
 *  - NOT_FOUND: spec NULL; >= 2 candidates means ambiguous, and then the
 *    first MFU_GPU_CANDIDATES_MAX are listed: table rows whose model token
 *    is a token of the name, fractions in (0, 1]; nothing else is listed;
 *  - mfu_gpu_candidates_peak: OK only for a listed ambiguous match, with
 *    the peak every listed row has for the dtype (x its fraction) and a
 *    bandwidth that is 0 or every row's; NOT_FOUND otherwise;
 *  - with no hint, a name equal to a row's display name (ASCII case and
 *    blanks around it ignored) is OK with that row;
 *  - the same query twice gives the same answer (no hidden state).
 */
#include <math.h>

#include "fuzz_input.h"
#include "gpu_lookup.h"
#include "gpu_name.h"

static int has_token(const char *normalized, const char *token)
{
    size_t n = strlen(token);
    const char *p = normalized;
    while (*p != '\0') {
        const char *end = strchr(p, ' ');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (len == n && strncmp(p, token, n) == 0)
            return 1;
        if (end == NULL)
            break;
        p = end + 1;
    }
    return 0;
}

static int in_table(const mfu_gpu_spec *spec)
{
    const mfu_gpu_spec *row;
    for (size_t i = 0; i < mfu_gpu_spec_count(); i++) {
        FUZZ_CHECK(mfu_gpu_spec_get(i, &row) == MFU_OK);
        if (row == spec)
            return 1;
    }
    return 0;
}

/* Rule 3 against the listed rows, by hand. */
static void check_candidates(const mfu_gpu_match *m, mfu_status st, const char *normalized)
{
    int listed = 0;
    if (st == MFU_ERR_NOT_FOUND && m->num_candidates >= 2)
        listed = m->num_candidates < MFU_GPU_CANDIDATES_MAX ? m->num_candidates
                                                            : MFU_GPU_CANDIDATES_MAX;
    for (int i = 0; i < MFU_GPU_CANDIDATES_MAX; i++) {
        if (i >= listed) {
            FUZZ_CHECK(m->candidates[i] == NULL);
            continue;
        }
        FUZZ_CHECK(m->candidates[i] != NULL && in_table(m->candidates[i]));
        FUZZ_CHECK(has_token(normalized, m->candidates[i]->model_token));
        FUZZ_CHECK(m->candidate_fraction[i] > 0.0 && m->candidate_fraction[i] <= 1.0);
    }
    for (int d = 0; d < MFU_DTYPE_COUNT; d++) {
        double tflops = -1.0, bandwidth = -1.0;
        mfu_status cs = mfu_gpu_candidates_peak(m, (mfu_dtype)d, &tflops, &bandwidth);
        FUZZ_CHECK(cs == MFU_OK || cs == MFU_ERR_NOT_FOUND);
        if (cs != MFU_OK) {
            FUZZ_CHECK(tflops == 0.0 && bandwidth == 0.0);
            continue;
        }
        FUZZ_CHECK(listed >= 2 && listed == m->num_candidates);
        FUZZ_CHECK(isfinite(tflops) && tflops > 0.0 && bandwidth >= 0.0);
        for (int i = 0; i < listed; i++) {
            double row_tflops;
            const mfu_gpu_spec *row = m->candidates[i];
            FUZZ_CHECK(mfu_gpu_spec_peak_tflops(row, (mfu_dtype)d, &row_tflops) == MFU_OK);
            FUZZ_CHECK(row_tflops * m->candidate_fraction[i] == tflops);
            if (bandwidth > 0.0)
                FUZZ_CHECK(row->memory_bandwidth_bytes_per_sec * m->candidate_fraction[i] ==
                           bandwidth);
        }
    }
}

static char lower(char c)
{
    return (c >= 'A' && c <= 'Z') ? (char)(c - 'A' + 'a') : c;
}

static int is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' ||
           c == '\f';
}

/* The row whose display name `name` (len bytes) is, blanks and case aside. */
static const mfu_gpu_spec *display_row(const char *name, size_t len)
{
    const mfu_gpu_spec *row;
    while (len > 0 && is_space(*name)) {
        name++;
        len--;
    }
    while (len > 0 && is_space(name[len - 1]))
        len--;
    for (size_t i = 0; i < mfu_gpu_spec_count(); i++) {
        size_t k = 0;
        FUZZ_CHECK(mfu_gpu_spec_get(i, &row) == MFU_OK);
        while (k < len && row->name[k] != '\0' &&
               lower(name[k]) == lower(row->name[k]))
            k++;
        if (k == len && row->name[k] == '\0')
            return row;
    }
    return NULL;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_input in = fi_make(data, size);
    uint8_t flags = fi_u8(&in);
    mfu_device_query q;
    mfu_gpu_match m, again;
    mfu_status st, st2, norm_st;
    char normalized[MFU_GPU_NAME_MAX + 1];
    size_t len;
    char *name;
    int hints_ok;

    q.cc_major = fi_i32(&in);
    q.cc_minor = fi_i32(&in);
    q.num_sms = fi_i32(&in);
    q.total_memory_bytes = fi_u64(&in);
    if (flags & 2)
        q.total_memory_bytes = (q.total_memory_bytes % 2048) * 1000000000ULL;
    name = fi_rest_cstr(&in, &len);
    if ((flags & 1) && len > MFU_GPU_NAME_MAX + 1) {
        /* Unterminated: exactly MFU_GPU_NAME_MAX + 1 readable bytes. */
        char *raw = malloc(MFU_GPU_NAME_MAX + 1);
        memcpy(raw, name, MFU_GPU_NAME_MAX + 1);
        free(name);
        name = raw;
    }
    q.name = name;

    st = mfu_gpu_lookup(&q, &m);
    FUZZ_CHECK(st == MFU_OK || st == MFU_ERR_NOT_FOUND ||
               st == MFU_ERR_INVALID_ARGUMENT);

    hints_ok = q.cc_major >= -1 && q.cc_major <= 99 && q.cc_minor >= -1 &&
               q.cc_minor <= 99 && (q.num_sms == -1 || q.num_sms >= 1);
    norm_st = mfu_gpu_normalize_name(q.name, normalized, sizeof normalized);
    FUZZ_CHECK(norm_st == MFU_OK || norm_st == MFU_ERR_INVALID_ARGUMENT);
    FUZZ_CHECK((st == MFU_ERR_INVALID_ARGUMENT) ==
               (!hints_ok || norm_st != MFU_OK));

    if (norm_st == MFU_OK)
        check_candidates(&m, st, normalized);
    if (st == MFU_OK) {
        FUZZ_CHECK(in_table(m.spec));
        FUZZ_CHECK(m.num_candidates == 1);
        FUZZ_CHECK(m.mig_fraction > 0.0 && m.mig_fraction <= 1.0);
        FUZZ_CHECK(m.is_partition || m.mig_fraction == 1.0);
        FUZZ_CHECK(has_token(normalized, m.spec->model_token));
        for (int d = 0; d < MFU_DTYPE_COUNT; d++) {
            double tflops = -1.0;
            mfu_status ps = mfu_gpu_spec_peak_tflops(m.spec, (mfu_dtype)d, &tflops);
            FUZZ_CHECK(ps == MFU_OK || ps == MFU_ERR_NOT_FOUND);
            if (ps == MFU_OK)
                FUZZ_CHECK(isfinite(tflops * m.mig_fraction) && tflops > 0.0);
        }
    } else {
        FUZZ_CHECK(m.spec == NULL);
        FUZZ_CHECK(m.num_candidates >= 0);
        if (st == MFU_ERR_INVALID_ARGUMENT)
            FUZZ_CHECK(m.num_candidates == 0);
    }

    if (norm_st == MFU_OK && hints_ok && q.cc_major == -1 && q.cc_minor == -1 &&
        q.num_sms == -1 && q.total_memory_bytes == 0) {
        size_t name_len = 0;
        while (name_len <= MFU_GPU_NAME_MAX && q.name[name_len] != '\0')
            name_len++;
        const mfu_gpu_spec *row = display_row(q.name, name_len);
        if (row != NULL)
            FUZZ_CHECK(st == MFU_OK && m.spec == row);
    }

    st2 = mfu_gpu_lookup(&q, &again);
    FUZZ_CHECK(st2 == st && again.spec == m.spec &&
               again.num_candidates == m.num_candidates &&
               again.is_partition == m.is_partition);
    for (int i = 0; i < MFU_GPU_CANDIDATES_MAX; i++)
        FUZZ_CHECK(again.candidates[i] == m.candidates[i] &&
                   again.candidate_fraction[i] == m.candidate_fraction[i]);

    free(name);
    return 0;
}
