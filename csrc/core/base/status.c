/* status.c -- names for mfu_status codes. */
#include "mfu_status.h"

const char *mfu_status_str(mfu_status status)
{
    switch (status) {
    case MFU_OK: return "ok";
    case MFU_ERR_INVALID_ARGUMENT: return "invalid argument";
    case MFU_ERR_OVERFLOW: return "integer overflow";
    case MFU_ERR_NOT_FOUND: return "not found";
    case MFU_ERR_NO_MEMORY: return "out of memory";
    case MFU_ERR_UNAVAILABLE: return "unavailable";
    case MFU_ERR_DRIVER: return "driver call failed";
    case MFU_ERR_NOT_READY: return "not ready";
    }
    return "unknown status";
}
