/*
 * check.h -- the C core's minimal test harness.
 *
 * CHECK(cond) records a failure with file and line instead of aborting, so
 * one run reports every broken expectation; CHECK_NEAR compares doubles with
 * a relative tolerance; field_is() reads the field a validator named.
 * check_summary() prints "N passed, N failed" and returns the process exit
 * code.
 */
#ifndef MFU_CHECK_H
#define MFU_CHECK_H

#include <math.h>
#include <stdio.h>
#include <string.h>

static int check_passed;
static int check_failed;

static int check_record(int ok, const char *file, int line, const char *what)
{
    if (ok) {
        check_passed++;
    } else {
        check_failed++;
        fprintf(stderr, "%s:%d: CHECK failed: %s\n", file, line, what);
    }
    return ok;
}

static inline int check_near(double got, double want, double rel_tol)
{
    if (isnan(want))
        return isnan(got);
    return fabs(got - want) <= rel_tol * fmax(fabs(want), 1e-300);
}

/* Whether a validator named the field `want` (NULL names none). */
static inline int field_is(const char *field, const char *want)
{
    return field != NULL && strcmp(field, want) == 0;
}

#define CHECK(cond) check_record((cond) ? 1 : 0, __FILE__, __LINE__, #cond)
#define CHECK_NEAR(got, want, rel_tol) \
    check_record(check_near((got), (want), (rel_tol)), __FILE__, __LINE__, \
                 #got " ~= " #want)

static int check_summary(const char *suite)
{
    printf("%s: %d passed, %d failed\n", suite, check_passed, check_failed);
    return check_failed == 0 ? 0 : 1;
}

#endif /* MFU_CHECK_H */
