/* flops.h -- placeholder; FLOP formulas land here. */
#ifndef MFU_FLOPS_H
#define MFU_FLOPS_H
#include "mfu_status.h"
#endif
