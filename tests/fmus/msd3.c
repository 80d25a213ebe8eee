/* The mass-spring-damper of msd2.c as an FMI 3.0 FMU (model exchange and
 * co-simulation): m x'' + c x' + k x = F. */
#include <stdlib.h>
#include <string.h>

#include "tasks/fmu/fmi_api.h"
#include "tests/fmus/fmi3_common.h"
#include "tests/fmus/msd_model.h"

#define EXPORT __attribute__((visibility("default")))

enum { VR_X = 1, VR_V, VR_DX, VR_DV, VR_M, VR_K, VR_C, VR_F, VR_X0, VR_V0, NVR };

typedef struct {
  double r[NVR];
  double time;
  fmi3InstanceEnvironment env;
  fmi3LogMessageCallback log;
} Model;

static void defaults(Model* m) {
  memset(m->r, 0, sizeof m->r);
  m->r[VR_M] = 1.0;
  m->r[VR_K] = 4.0;
  m->r[VR_C] = 0.4;
  m->r[VR_X0] = 1.0;
  m->time = 0.0;
}

static void derivs(const Model* m, double x, double v, double* dx, double* dv) {
  const MsdParams p = {m->r[VR_M], m->r[VR_K], m->r[VR_C], m->r[VR_F]};
  msd_derivs(&p, x, v, dx, dv);
}

FMI3_INSTANTIATION("{msd-3}")
EXPORT fmi3Status fmi3EnterInitializationMode(fmi3Instance i, fmi3Boolean td, fmi3Float64 tol, fmi3Float64 t0,
                                              fmi3Boolean sd, fmi3Float64 stop) {
  (void)td, (void)tol, (void)sd, (void)stop;
  ((Model*)i)->time = t0;
  return fmi3OK;
}
EXPORT fmi3Status fmi3ExitInitializationMode(fmi3Instance i) {
  Model* m = (Model*)i;
  m->r[VR_X] = m->r[VR_X0];
  m->r[VR_V] = m->r[VR_V0];
  return fmi3OK;
}
FMI3_NOTHING_TO_DO(fmi3Terminate)
EXPORT fmi3Status fmi3Reset(fmi3Instance i) {
  defaults((Model*)i);
  return fmi3OK;
}
FMI3_NOTHING_TO_DO(fmi3EnterEventMode)
FMI3_NOTHING_TO_DO(fmi3EnterContinuousTimeMode)
EXPORT fmi3Status fmi3UpdateDiscreteStates(fmi3Instance i, fmi3Boolean* need, fmi3Boolean* term, fmi3Boolean* nom,
                                           fmi3Boolean* values, fmi3Boolean* defined, fmi3Float64* next) {
  (void)i;
  *need = *term = *nom = *values = *defined = false;
  *next = 0.0;
  return fmi3OK;
}
EXPORT fmi3Status fmi3GetFloat64(fmi3Instance i, const fmi3ValueReference vr[], size_t n, fmi3Float64 v[], size_t nv) {
  Model* m = (Model*)i;
  if (nv != n) return fmi3Error;
  derivs(m, m->r[VR_X], m->r[VR_V], &m->r[VR_DX], &m->r[VR_DV]);
  for (size_t k = 0; k < n; ++k) {
    if (vr[k] == 0 || vr[k] >= NVR) {
      if (m->log) m->log(m->env, fmi3Error, "logStatusError", "unknown value reference");
      return fmi3Error;
    }
    v[k] = m->r[vr[k]];
  }
  return fmi3OK;
}
EXPORT fmi3Status fmi3SetFloat64(fmi3Instance i, const fmi3ValueReference vr[], size_t n, const fmi3Float64 v[],
                                 size_t nv) {
  Model* m = (Model*)i;
  if (nv != n) return fmi3Error;
  for (size_t k = 0; k < n; ++k) {
    if (vr[k] == 0 || vr[k] >= NVR) return fmi3Error;
    m->r[vr[k]] = v[k];
  }
  return fmi3OK;
}
EXPORT fmi3Status fmi3SetInt32(fmi3Instance i, const fmi3ValueReference vr[], size_t n, const fmi3Int32 v[],
                               size_t nv) {
  (void)i, (void)vr, (void)v, (void)nv;
  return n ? fmi3Error : fmi3OK;
}
EXPORT fmi3Status fmi3SetBoolean(fmi3Instance i, const fmi3ValueReference vr[], size_t n, const fmi3Boolean v[],
                                 size_t nv) {
  (void)i, (void)vr, (void)v, (void)nv;
  return n ? fmi3Error : fmi3OK;
}
EXPORT fmi3Status fmi3GetFMUState(fmi3Instance i, fmi3FMUState* s) {
  if (!*s) *s = malloc(sizeof(Model));
  if (!*s) return fmi3Error;
  memcpy(*s, i, sizeof(Model));
  return fmi3OK;
}
EXPORT fmi3Status fmi3SetFMUState(fmi3Instance i, fmi3FMUState s) {
  memcpy(i, s, sizeof(Model));
  return fmi3OK;
}
EXPORT fmi3Status fmi3FreeFMUState(fmi3Instance i, fmi3FMUState* s) {
  (void)i;
  free(*s);
  *s = NULL;
  return fmi3OK;
}
EXPORT fmi3Status fmi3SerializedFMUStateSize(fmi3Instance i, fmi3FMUState s, size_t* size) {
  (void)i, (void)s;
  *size = msd_serialized_size(NVR);
  return fmi3OK;
}
EXPORT fmi3Status fmi3SerializeFMUState(fmi3Instance i, fmi3FMUState s, fmi3Byte out[], size_t size) {
  (void)i;
  const Model* state = (const Model*)s;
  if (size < msd_serialized_size(NVR)) return fmi3Error;
  msd_serialize("MSD3", state->r, NVR, state->time, out);
  return fmi3OK;
}
EXPORT fmi3Status fmi3DeserializeFMUState(fmi3Instance i, const fmi3Byte in[], size_t size, fmi3FMUState* s) {
  Model* m = (Model*)i;
  Model* state = (Model*)(*s ? *s : malloc(sizeof(Model)));
  if (!state) return fmi3Error;
  memcpy(state, m, sizeof(Model));
  if (!msd_deserialize("MSD3", in, size, state->r, NVR, &state->time)) {
    if (!*s) free(state);
    if (m->log) m->log(m->env, fmi3Error, "logStatusError", "not a serialized msd3 state");
    return fmi3Error;
  }
  *s = state;
  return fmi3OK;
}
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
  Model* m = (Model*)i;
  if (n != 2) return fmi3Error;
  m->r[VR_X] = x[0];
  m->r[VR_V] = x[1];
  return fmi3OK;
}
EXPORT fmi3Status fmi3GetContinuousStates(fmi3Instance i, fmi3Float64 x[], size_t n) {
  Model* m = (Model*)i;
  if (n != 2) return fmi3Error;
  x[0] = m->r[VR_X];
  x[1] = m->r[VR_V];
  return fmi3OK;
}
EXPORT fmi3Status fmi3GetContinuousStateDerivatives(fmi3Instance i, fmi3Float64 dx[], size_t n) {
  Model* m = (Model*)i;
  if (n != 2) return fmi3Error;
  derivs(m, m->r[VR_X], m->r[VR_V], &dx[0], &dx[1]);
  return fmi3OK;
}
EXPORT fmi3Status fmi3GetEventIndicators(fmi3Instance i, fmi3Float64 z[], size_t n) {
  (void)i, (void)z;
  return n ? fmi3Error : fmi3OK;
}
EXPORT fmi3Status fmi3DoStep(fmi3Instance i, fmi3Float64 t, fmi3Float64 h, fmi3Boolean no, fmi3Boolean* event,
                             fmi3Boolean* term, fmi3Boolean* early, fmi3Float64* last) {
  Model* m = (Model*)i;
  (void)no;
  const MsdParams p = {m->r[VR_M], m->r[VR_K], m->r[VR_C], m->r[VR_F]};
  msd_advance(&p, &m->r[VR_X], &m->r[VR_V], h);
  m->time = t + h;
  *event = *term = *early = false;
  *last = t + h;
  return fmi3OK;
}
