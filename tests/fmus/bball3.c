/* The bouncing ball of bball2.c as an FMI 3.0 model-exchange FMU with a
 * state event: h' = v, v' = -g; when h crosses 0 downwards: v := -e v,
 * h := -h. The event indicator is h. */
#include <stdlib.h>
#include <float.h>
#include <string.h>

#include "tasks/fmu/fmi_api.h"
#include "tests/fmus/fmi3_common.h"

#define EXPORT __attribute__((visibility("default")))

enum { VR_TIME, VR_H, VR_V, VR_DH, VR_DV, VR_G, VR_E, VR_H0, NVR };

typedef struct {
  double r[NVR];
  fmi3InstanceEnvironment env;
  fmi3LogMessageCallback log;
} Ball;

static void defaults(Ball* b) {
  memset(b->r, 0, sizeof b->r);
  b->r[VR_G] = 9.81;
  b->r[VR_E] = 0.8;
  b->r[VR_H0] = 1.0;
}

EXPORT const char* fmi3GetVersion(void) { return "3.0"; }
EXPORT fmi3Instance fmi3InstantiateModelExchange(fmi3String name, fmi3String token, fmi3String res, fmi3Boolean vis,
                                                 fmi3Boolean logging, fmi3InstanceEnvironment env,
                                                 fmi3LogMessageCallback log) {
  (void)name, (void)res, (void)vis, (void)logging;
  if (!token || strcmp(token, "{bball-3}") != 0) {
    if (log) log(env, fmi3Error, "logStatusError", "instantiationToken does not match this binary's {bball-3}");
    return NULL;
  }
  Ball* b = (Ball*)calloc(1, sizeof(Ball));
  if (!b) return NULL;
  b->env = env;
  b->log = log;
  defaults(b);
  return b;
}
EXPORT void fmi3FreeInstance(fmi3Instance i) { free(i); }
EXPORT fmi3Status fmi3EnterInitializationMode(fmi3Instance i, fmi3Boolean td, fmi3Float64 tol, fmi3Float64 t0,
                                              fmi3Boolean sd, fmi3Float64 stop) {
  (void)td, (void)tol, (void)sd, (void)stop;
  ((Ball*)i)->r[VR_TIME] = t0;
  return fmi3OK;
}
EXPORT fmi3Status fmi3ExitInitializationMode(fmi3Instance i) {
  Ball* b = (Ball*)i;
  b->r[VR_H] = b->r[VR_H0];
  b->r[VR_V] = 0.0;
  return fmi3OK;
}
FMI3_NOTHING_TO_DO(fmi3Terminate)
EXPORT fmi3Status fmi3Reset(fmi3Instance i) {
  defaults((Ball*)i);
  return fmi3OK;
}
FMI3_NOTHING_TO_DO(fmi3EnterEventMode)
FMI3_NOTHING_TO_DO(fmi3EnterContinuousTimeMode)
EXPORT fmi3Status fmi3UpdateDiscreteStates(fmi3Instance i, fmi3Boolean* need, fmi3Boolean* term, fmi3Boolean* nom,
                                           fmi3Boolean* values, fmi3Boolean* defined, fmi3Float64* next) {
  Ball* b = (Ball*)i;
  *need = *term = *nom = *values = *defined = false;
  *next = 0.0;
  if (b->r[VR_H] <= 0.0 && b->r[VR_V] < 0.0) {
    /* A crossing located exactly on h = 0 would reflect to -0, still on
       the indicator's z <= 0 side: an event back up at once. The Reference
       FMU BouncingBall lifts it to the smallest double for the same reason. */
    b->r[VR_H] = b->r[VR_H] < 0.0 ? -b->r[VR_H] : DBL_MIN;
    b->r[VR_V] = -b->r[VR_E] * b->r[VR_V];
    *values = true;
  }
  return fmi3OK;
}
EXPORT fmi3Status fmi3GetFloat64(fmi3Instance i, const fmi3ValueReference vr[], size_t n, fmi3Float64 v[], size_t nv) {
  Ball* b = (Ball*)i;
  if (nv != n) return fmi3Error;
  b->r[VR_DH] = b->r[VR_V];
  b->r[VR_DV] = -b->r[VR_G];
  for (size_t k = 0; k < n; ++k) {
    if (vr[k] >= NVR) return fmi3Error;
    v[k] = b->r[vr[k]];
  }
  return fmi3OK;
}
EXPORT fmi3Status fmi3SetFloat64(fmi3Instance i, const fmi3ValueReference vr[], size_t n, const fmi3Float64 v[],
                                 size_t nv) {
  Ball* b = (Ball*)i;
  if (nv != n) return fmi3Error;
  for (size_t k = 0; k < n; ++k) {
    if (vr[k] < VR_G || vr[k] >= NVR) return fmi3Error;
    b->r[vr[k]] = v[k];
  }
  return fmi3OK;
}
EXPORT fmi3Status fmi3CompletedIntegratorStep(fmi3Instance i, fmi3Boolean no, fmi3Boolean* enter, fmi3Boolean* term) {
  (void)i, (void)no;
  *enter = *term = false;
  return fmi3OK;
}
EXPORT fmi3Status fmi3SetTime(fmi3Instance i, fmi3Float64 t) {
  ((Ball*)i)->r[VR_TIME] = t;
  return fmi3OK;
}
EXPORT fmi3Status fmi3SetContinuousStates(fmi3Instance i, const fmi3Float64 x[], size_t n) {
  Ball* b = (Ball*)i;
  if (n != 2) return fmi3Error;
  b->r[VR_H] = x[0];
  b->r[VR_V] = x[1];
  return fmi3OK;
}
EXPORT fmi3Status fmi3GetContinuousStates(fmi3Instance i, fmi3Float64 x[], size_t n) {
  Ball* b = (Ball*)i;
  if (n != 2) return fmi3Error;
  x[0] = b->r[VR_H];
  x[1] = b->r[VR_V];
  return fmi3OK;
}
EXPORT fmi3Status fmi3GetContinuousStateDerivatives(fmi3Instance i, fmi3Float64 dx[], size_t n) {
  Ball* b = (Ball*)i;
  if (n != 2) return fmi3Error;
  dx[0] = b->r[VR_V];
  dx[1] = -b->r[VR_G];
  return fmi3OK;
}
EXPORT fmi3Status fmi3GetEventIndicators(fmi3Instance i, fmi3Float64 z[], size_t n) {
  if (n != 1) return fmi3Error;
  z[0] = ((Ball*)i)->r[VR_H];
  return fmi3OK;
}
