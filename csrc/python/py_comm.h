/*
 * py_comm.h -- communication in mfu_tracker._C (py_comm.c): the sinks that
 * receive the process's collectives, and the table of functions the C++
 * observer (mfu_tracker._torch, csrc/torch/comm.cpp) reaches them through,
 * published as the PyCapsule MFU_COMM_API_CAPSULE.
 *
 * A *sink* is a StepTracker that subscribed (StepTracker._comm_subscribe;
 * Tracker does at construction under a process group): every collective
 * launched, completed and waited for is recorded in each sink's step engine
 * (core/steps/steps.h, "Communication"; waits as the kinds' phases). At most
 * MFU_COMM_SINKS_MAX at once. A sink unsubscribes when its tracker closes
 * or is freed.
 *
 * Threads. The functions below may be called from any thread, with or
 * without the GIL (the observer calls them from the training thread, from
 * autograd's device threads and from a backend's completion threads). They
 * take the registry's lock, then each sink's lock; a thread holding the GIL
 * waits for either with the GIL released, so no lock is ever awaited while
 * holding the GIL another lock holder needs. Nothing here calls Python or
 * raises. The registry lives until the process ends (an observer thread may
 * still call it at exit).
 *
 * Identity. A sink is a slot and the slot's generation at the time: a
 * ticket or a wait taken before a sink left (and another took its slot)
 * does not touch the newcomer.
 */
#ifndef MFU_PY_COMM_H
#define MFU_PY_COMM_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdint.h>

#include "../core/comm/comm.h"
#include "../core/base/mfu_limits.h"
#include "../core/base/phases.h"
#include "../core/steps/steps.h"
#include "mfu_capsules.h" /* the table _C publishes: mfu_comm_api */

#endif /* MFU_PY_COMM_H */
