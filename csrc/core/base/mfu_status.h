/*
 * mfu_status.h -- the status codes every fallible core function returns.
 *
 * The core never prints, never exits and never raises: a function that can
 * fail returns an mfu_status and writes its results through out-parameters.
 * MFU_OK is zero so callers can write `if (st != MFU_OK)`. The CPython layer
 * maps each code to one exception type (see csrc/python/mfu_module.h).
 */
#ifndef MFU_STATUS_H
#define MFU_STATUS_H

typedef enum mfu_status {
    MFU_OK = 0,
    MFU_ERR_INVALID_ARGUMENT = 1, /* a value out of its domain: negative, NaN, ... */
    MFU_ERR_OVERFLOW = 2,         /* a result does not fit its integer type */
    MFU_ERR_NOT_FOUND = 3,        /* a lookup matched nothing (e.g. unknown GPU) */
    MFU_ERR_NO_MEMORY = 4,        /* an allocation failed */
    MFU_ERR_UNAVAILABLE = 5,      /* a facility is absent (no GPU driver, ...) */
    MFU_ERR_DRIVER = 6,           /* a driver call returned an error */
    MFU_ERR_NOT_READY = 7         /* a value is not resolved yet (GPU still busy) */
} mfu_status;

/* A static, human-readable name for `status` ("invalid argument", ...). */
const char *mfu_status_str(mfu_status status);

#endif /* MFU_STATUS_H */
