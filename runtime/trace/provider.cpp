// Instantiates the tracepoint probes of the "rtcosim" provider in this
// library. Compiled with relaxed warnings: LTTng's macros are not ours.
#define LTTNG_UST_TRACEPOINT_CREATE_PROBES
#define LTTNG_UST_TRACEPOINT_DEFINE
#include "runtime/trace/rtcosim_tp.h"
