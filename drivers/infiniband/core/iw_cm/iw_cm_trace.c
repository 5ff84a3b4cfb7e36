// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * The iw_cm tracepoints (trace/iw_cm.h) and their rust_do_trace_* helpers,
 * which trace.rs calls after testing each tracepoint's static key.
 */
#define CREATE_TRACE_POINTS
#define CREATE_RUST_TRACE_POINTS
#include "trace/iw_cm.h"
