/* gpu_specs.h -- placeholder; the peak table lands here. */
#ifndef MFU_GPU_SPECS_H
#define MFU_GPU_SPECS_H
#include "mfu_status.h"
#endif
