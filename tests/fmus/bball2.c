/* A bouncing ball as an FMI 2.0 model-exchange FMU with a state event:
 *   h' = v, v' = -g; when h crosses 0 downwards: v := -e v, h := -h.
 * The event indicator is h. Reflecting h (rather than clamping it to 0)
 * keeps the indicator positive after the bounce (an event located exactly
 * on h = 0 lifts it to DBL_MIN), so that the next
 * crossing is a real one. */
#include <stdio.h>
#include <float.h>
#include <string.h>

#define FMI2_OWN_EVENTS
#include "tests/fmus/fmi2_common.h"

enum { VR_H, VR_V, VR_DH, VR_DV, VR_G, VR_E, VR_H0, NVR };

typedef struct {
  double r[NVR];
  double time;
  fmi2CallbackFunctions cb;
  int bounced;
} Ball;

static void defaults(Ball* b) {
  memset(b->r, 0, sizeof b->r);
  b->r[VR_G] = 9.81;
  b->r[VR_E] = 0.8;
  b->r[VR_H0] = 1.0;
  b->time = 0.0;
}

EXPORT fmi2Component fmi2Instantiate(fmi2String name, fmi2Type type, fmi2String guid, fmi2String res,
                                     const fmi2CallbackFunctions* cb, fmi2Boolean vis, fmi2Boolean log) {
  (void)res, (void)vis, (void)log;
  if (!cb || type != fmi2ModelExchange) return NULL;
  if (!guid || strcmp(guid, "{bball-2}") != 0) {
    cb->logger(cb->componentEnvironment, name, fmi2Error, "logStatusError", "wrong GUID");
    return NULL;
  }
  Ball* b = (Ball*)cb->allocateMemory(1, sizeof(Ball));
  if (!b) return NULL;
  b->cb = *cb;
  defaults(b);
  return b;
}
EXPORT void fmi2FreeInstance(fmi2Component c) { ((Ball*)c)->cb.freeMemory(c); }
EXPORT fmi2Status fmi2SetupExperiment(fmi2Component c, fmi2Boolean a, fmi2Real b, fmi2Real t0, fmi2Boolean d, fmi2Real e) {
  (void)a, (void)b, (void)d, (void)e;
  ((Ball*)c)->time = t0;
  return fmi2OK;
}
EXPORT fmi2Status fmi2ExitInitializationMode(fmi2Component c) {
  Ball* b = (Ball*)c;
  b->r[VR_H] = b->r[VR_H0];
  b->r[VR_V] = 0.0;
  return fmi2OK;
}
EXPORT fmi2Status fmi2Reset(fmi2Component c) { defaults((Ball*)c); return fmi2OK; }
EXPORT fmi2Status fmi2GetReal(fmi2Component c, const fmi2ValueReference vr[], size_t n, fmi2Real v[]) {
  Ball* b = (Ball*)c;
  b->r[VR_DH] = b->r[VR_V];
  b->r[VR_DV] = -b->r[VR_G];
  for (size_t i = 0; i < n; ++i) {
    if (vr[i] >= NVR) return fmi2Error;
    v[i] = b->r[vr[i]];
  }
  return fmi2OK;
}
EXPORT fmi2Status fmi2SetReal(fmi2Component c, const fmi2ValueReference vr[], size_t n, const fmi2Real v[]) {
  Ball* b = (Ball*)c;
  for (size_t i = 0; i < n; ++i) {
    if (vr[i] >= NVR) return fmi2Error;
    b->r[vr[i]] = v[i];
  }
  return fmi2OK;
}
EXPORT fmi2Status fmi2NewDiscreteStates(fmi2Component c, fmi2EventInfo* e) {
  Ball* b = (Ball*)c;
  memset(e, 0, sizeof *e);
  if (b->r[VR_H] <= 0.0 && b->r[VR_V] < 0.0) {
    /* A crossing located exactly on h = 0 would reflect to -0, still on
       the indicator's z <= 0 side: an event back up at once. The Reference
       FMU BouncingBall lifts it to the smallest double for the same reason. */
    b->r[VR_H] = b->r[VR_H] < 0.0 ? -b->r[VR_H] : DBL_MIN;
    b->r[VR_V] = -b->r[VR_E] * b->r[VR_V];
    e->valuesOfContinuousStatesChanged = 1;
  }
  return fmi2OK;
}
EXPORT fmi2Status fmi2SetTime(fmi2Component c, fmi2Real t) { ((Ball*)c)->time = t; return fmi2OK; }
EXPORT fmi2Status fmi2SetContinuousStates(fmi2Component c, const fmi2Real x[], size_t n) {
  Ball* b = (Ball*)c;
  if (n != 2) return fmi2Error;
  b->r[VR_H] = x[0];
  b->r[VR_V] = x[1];
  return fmi2OK;
}
EXPORT fmi2Status fmi2GetContinuousStates(fmi2Component c, fmi2Real x[], size_t n) {
  Ball* b = (Ball*)c;
  if (n != 2) return fmi2Error;
  x[0] = b->r[VR_H];
  x[1] = b->r[VR_V];
  return fmi2OK;
}
EXPORT fmi2Status fmi2GetDerivatives(fmi2Component c, fmi2Real dx[], size_t n) {
  Ball* b = (Ball*)c;
  if (n != 2) return fmi2Error;
  dx[0] = b->r[VR_V];
  dx[1] = -b->r[VR_G];
  return fmi2OK;
}
EXPORT fmi2Status fmi2GetEventIndicators(fmi2Component c, fmi2Real z[], size_t n) {
  if (n != 1) return fmi2Error;
  z[0] = ((Ball*)c)->r[VR_H];
  return fmi2OK;
}
