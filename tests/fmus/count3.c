/* The staircase counter of count2.c as an FMI 3.0 FMU (model exchange and
 * co-simulation), with a port of every FMI 3.0 scalar type:
 *   Int32 output counter, Float64 output x (the state, x' = counter),
 *   Int8 input inc (start 1) echoed as inc_out, Boolean input enable (start
 *   true), Boolean output even, Enumeration output mode (1 + counter mod 3),
 *   Int64 output big = offset + counter (offset an Int64 parameter),
 *   and inputs u8, i16, u16, u32, u64, i64 (UInt8 ... Int64) and f32
 *   (Float32), each echoed by an output of its type (u8_out, ...).
 * Each getter and setter refuses a value reference of another type. The
 * Int64 parameter stop_at (0: never) ends the simulation at the event where
 * the counter reaches it: terminateSimulation from fmi3UpdateDiscreteStates,
 * or from fmi3DoStep with lastSuccessfulTime that event's time. The Float64
 * locals tolerance and stop_time show what fmi3EnterInitializationMode was
 * given (-1: undefined). Like the Reference FMUs, model exchange refuses
 * to set its inputs (all discrete) in Continuous-Time Mode: only in Event
 * Mode (FMI 3.0, 3.2.2). */
#include <stdlib.h>
#include <string.h>

#include "tasks/fmu/fmi_api.h"
/* Events are handled inside fmi3DoStep: an importer that asks for event mode is not served. */
#define FMI3_REFUSES_EVENT_MODE 1
#include "tests/fmus/counter_model.h"
#include "tests/fmus/fmi3_common.h"

#define EXPORT __attribute__((visibility("default")))

enum {
  VR_TIME,
  VR_X,
  VR_DX,
  VR_COUNTER,
  VR_INC,
  VR_ENABLE,
  VR_BIG,
  VR_OFFSET,
  VR_MODE,
  VR_U8,
  VR_U8_OUT,
  VR_I16,
  VR_I16_OUT,
  VR_U16,
  VR_U16_OUT,
  VR_U32,
  VR_U32_OUT,
  VR_U64,
  VR_U64_OUT,
  VR_F32,
  VR_F32_OUT,
  VR_I64,
  VR_I64_OUT,
  VR_EVEN,
  VR_INC_OUT,
  VR_STOP_AT,
  VR_TOLERANCE,
  VR_STOP_TIME,
  NVR
};
enum Kind { K_F64, K_F32, K_I8, K_U8, K_I16, K_U16, K_I32, K_U32, K_I64, K_U64, K_BOOL, K_ENUM };

static const enum Kind kind[NVR] = {
    [VR_TIME] = K_F64,    [VR_X] = K_F64,         [VR_DX] = K_F64,       [VR_COUNTER] = K_I32, [VR_INC] = K_I8,
    [VR_ENABLE] = K_BOOL, [VR_BIG] = K_I64,       [VR_OFFSET] = K_I64,   [VR_MODE] = K_ENUM,   [VR_U8] = K_U8,
    [VR_U8_OUT] = K_U8,   [VR_I16] = K_I16,       [VR_I16_OUT] = K_I16,  [VR_U16] = K_U16,     [VR_U16_OUT] = K_U16,
    [VR_U32] = K_U32,     [VR_U32_OUT] = K_U32,   [VR_U64] = K_U64,      [VR_U64_OUT] = K_U64, [VR_F32] = K_F32,
    [VR_F32_OUT] = K_F32, [VR_I64] = K_I64,       [VR_I64_OUT] = K_I64,  [VR_EVEN] = K_BOOL,   [VR_INC_OUT] = K_I8,
    [VR_STOP_AT] = K_I64, [VR_TOLERANCE] = K_F64, [VR_STOP_TIME] = K_F64};
/* The inputs and the parameter: the only variables that can be set. */
static const int settable[NVR] = {
    [VR_INC] = 1, [VR_ENABLE] = 1, [VR_OFFSET] = 1, [VR_U8] = 1,  [VR_I16] = 1,    [VR_U16] = 1,
    [VR_U32] = 1, [VR_U64] = 1,    [VR_F32] = 1,    [VR_I64] = 1, [VR_STOP_AT] = 1};

typedef struct {
  Counter c;
  double time;
  double tolerance, stop_time; /* as fmi3EnterInitializationMode gave them; -1: undefined */
  bool continuous_time;        /* model exchange: in Continuous-Time Mode */
  int64_t i[NVR];              /* every signed integer, the enumeration */
  uint64_t u[NVR];             /* every unsigned integer */
  float f[NVR];
  bool b[NVR];
  fmi3InstanceEnvironment env;
  fmi3LogMessageCallback log;
} Model;

static void defaults(Model* m) {
  counter_init(&m->c);
  m->time = 0.0;
  memset(m->i, 0, sizeof m->i);
  memset(m->u, 0, sizeof m->u);
  memset(m->f, 0, sizeof m->f);
  memset(m->b, 0, sizeof m->b);
  m->i[VR_INC] = 1;
  m->b[VR_ENABLE] = true;
  m->continuous_time = false;
}

/* The outputs from the inputs and the counter. */
static void show(Model* m) {
  m->i[VR_COUNTER] = m->c.counter;
  m->i[VR_INC_OUT] = m->i[VR_INC];
  m->i[VR_BIG] = m->i[VR_OFFSET] + m->c.counter;
  m->i[VR_MODE] = 1 + ((m->c.counter % 3) + 3) % 3;
  m->u[VR_U8_OUT] = m->u[VR_U8];
  m->i[VR_I16_OUT] = m->i[VR_I16];
  m->u[VR_U16_OUT] = m->u[VR_U16];
  m->u[VR_U32_OUT] = m->u[VR_U32];
  m->u[VR_U64_OUT] = m->u[VR_U64];
  m->f[VR_F32_OUT] = m->f[VR_F32];
  m->i[VR_I64_OUT] = m->i[VR_I64];
  m->b[VR_EVEN] = (m->c.counter % 2) == 0;
}

static fmi3Status bad(Model* m, const char* what) {
  if (m->log) m->log(m->env, fmi3Error, "logStatusError", what);
  return fmi3Error;
}

FMI3_INSTANTIATION("{count-3}")
EXPORT fmi3Status fmi3EnterInitializationMode(fmi3Instance i, fmi3Boolean td, fmi3Float64 tol, fmi3Float64 t0,
                                              fmi3Boolean sd, fmi3Float64 stop) {
  Model* m = (Model*)i;
  m->time = t0;
  m->tolerance = td ? tol : -1.0;
  m->stop_time = sd ? stop : -1.0;
  return fmi3OK;
}
EXPORT fmi3Status fmi3ExitInitializationMode(fmi3Instance i) {
  counter_init(&((Model*)i)->c);
  return fmi3OK;
}
FMI3_NOTHING_TO_DO(fmi3Terminate)
EXPORT fmi3Status fmi3Reset(fmi3Instance i) {
  defaults((Model*)i);
  return fmi3OK;
}
EXPORT fmi3Status fmi3EnterEventMode(fmi3Instance i) {
  ((Model*)i)->continuous_time = false;
  return fmi3OK;
}
EXPORT fmi3Status fmi3EnterContinuousTimeMode(fmi3Instance i) {
  ((Model*)i)->continuous_time = true;
  return fmi3OK;
}
EXPORT fmi3Status fmi3UpdateDiscreteStates(fmi3Instance i, fmi3Boolean* need, fmi3Boolean* term, fmi3Boolean* nom,
                                           fmi3Boolean* values, fmi3Boolean* defined, fmi3Float64* next) {
  Model* m = (Model*)i;
  m->c.stop_at = m->i[VR_STOP_AT];
  (void)counter_event(&m->c, m->time, m->i[VR_INC], m->b[VR_ENABLE]);
  *need = *term = *nom = *values = false;
  *term = m->c.ended;
  *defined = true;
  *next = m->c.next;
  return fmi3OK;
}

EXPORT fmi3Status fmi3GetFloat64(fmi3Instance i, const fmi3ValueReference vr[], size_t n, fmi3Float64 v[], size_t nv) {
  Model* m = (Model*)i;
  if (nv != n) return fmi3Error;
  for (size_t k = 0; k < n; ++k) {
    switch (vr[k]) {
      case VR_TIME:
        v[k] = m->time;
        break;
      case VR_X:
        v[k] = m->c.x;
        break;
      case VR_DX:
        v[k] = (double)m->c.counter;
        break;
      case VR_TOLERANCE:
        v[k] = m->tolerance;
        break;
      case VR_STOP_TIME:
        v[k] = m->stop_time;
        break;
      default:
        return bad(m, "fmi3GetFloat64: not a Float64");
    }
  }
  return fmi3OK;
}
EXPORT fmi3Status fmi3SetFloat64(fmi3Instance i, const fmi3ValueReference vr[], size_t n, const fmi3Float64 v[],
                                 size_t nv) {
  (void)vr, (void)v, (void)nv;
  return n == 0 ? fmi3OK : bad((Model*)i, "fmi3SetFloat64: no Float64 can be set");
}

/* fmi3GetT / fmi3SetT for the values kept in STORE, of kind K (or K2). */
#define TYPED(T, K, K2, STORE)                                                                                    \
  EXPORT fmi3Status fmi3Get##T(fmi3Instance i, const fmi3ValueReference vr[], size_t n, fmi3##T v[], size_t nv) { \
    Model* m = (Model*)i;                                                                                         \
    if (nv != n) return fmi3Error;                                                                                \
    show(m);                                                                                                      \
    for (size_t k = 0; k < n; ++k) {                                                                              \
      if (vr[k] >= NVR || (kind[vr[k]] != K && kind[vr[k]] != K2)) return bad(m, "fmi3Get" #T ": not a " #T);     \
      v[k] = (fmi3##T)m->STORE[vr[k]];                                                                            \
    }                                                                                                             \
    return fmi3OK;                                                                                                \
  }                                                                                                               \
  EXPORT fmi3Status fmi3Set##T(fmi3Instance i, const fmi3ValueReference vr[], size_t n, const fmi3##T v[],        \
                               size_t nv) {                                                                       \
    Model* m = (Model*)i;                                                                                         \
    if (nv != n) return fmi3Error;                                                                                \
    for (size_t k = 0; k < n; ++k) {                                                                              \
      if (vr[k] >= NVR || (kind[vr[k]] != K && kind[vr[k]] != K2)) return bad(m, "fmi3Set" #T ": not a " #T);     \
      if (!settable[vr[k]]) return bad(m, "fmi3Set" #T ": not an input or parameter");                            \
      if (m->continuous_time) return bad(m, "fmi3Set" #T ": a discrete variable is set in Event Mode only");      \
      m->STORE[vr[k]] = v[k];                                                                                     \
    }                                                                                                             \
    return fmi3OK;                                                                                                \
  }
TYPED(Float32, K_F32, K_F32, f)
TYPED(Int8, K_I8, K_I8, i)
TYPED(UInt8, K_U8, K_U8, u)
TYPED(Int16, K_I16, K_I16, i)
TYPED(UInt16, K_U16, K_U16, u)
TYPED(Int32, K_I32, K_I32, i)
TYPED(UInt32, K_U32, K_U32, u)
TYPED(Int64, K_I64, K_ENUM, i)
TYPED(UInt64, K_U64, K_U64, u)
TYPED(Boolean, K_BOOL, K_BOOL, b)

EXPORT fmi3Status fmi3CompletedIntegratorStep(fmi3Instance i, fmi3Boolean no, fmi3Boolean* enter, fmi3Boolean* term) {
  (void)i, (void)no;
  *enter = *term = false;
  return fmi3OK;
}
EXPORT fmi3Status fmi3SetTime(fmi3Instance i, fmi3Float64 t) {
  ((Model*)i)->time = t;
  return fmi3OK;
}
EXPORT fmi3Status fmi3SetContinuousStates(fmi3Instance i, const fmi3Float64 x[], size_t n) {
  if (n != 1) return fmi3Error;
  ((Model*)i)->c.x = x[0];
  return fmi3OK;
}
EXPORT fmi3Status fmi3GetContinuousStates(fmi3Instance i, fmi3Float64 x[], size_t n) {
  if (n != 1) return fmi3Error;
  x[0] = ((Model*)i)->c.x;
  return fmi3OK;
}
EXPORT fmi3Status fmi3GetContinuousStateDerivatives(fmi3Instance i, fmi3Float64 dx[], size_t n) {
  if (n != 1) return fmi3Error;
  dx[0] = (double)((Model*)i)->c.counter;
  return fmi3OK;
}
EXPORT fmi3Status fmi3GetEventIndicators(fmi3Instance i, fmi3Float64 z[], size_t n) {
  (void)z;
  return n ? bad((Model*)i, "no event indicators") : fmi3OK;
}
EXPORT fmi3Status fmi3DoStep(fmi3Instance i, fmi3Float64 t, fmi3Float64 h, fmi3Boolean no, fmi3Boolean* event,
                             fmi3Boolean* term, fmi3Boolean* early, fmi3Float64* last) {
  Model* m = (Model*)i;
  (void)no;
  if (m->c.ended) return bad(m, "fmi3DoStep after the simulation ended");
  m->c.stop_at = m->i[VR_STOP_AT];
  m->time = counter_step(&m->c, t, h, m->i[VR_INC], m->b[VR_ENABLE]);
  *event = *early = false;
  *term = m->c.ended;
  *last = m->time;
  return fmi3OK;
}
