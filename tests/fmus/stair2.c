/* A staircase as an FMI 2.0 model-exchange FMU whose event needs two rounds
 * of fmi2NewDiscreteStates, and whose parameters are an Integer and a
 * Boolean:
 *   x' = rate; when x reaches 1: round 1 resets x := x - 1 (continuous
 *   states changed, another round needed), round 2 steps the counter
 *   count := count + (up ? 1 : -1) (no state change, settled).
 * count starts at the Integer n0; the Boolean `up` is shown as the Real
 * output up_out (1 or 0). An importer that forgets round 1's state change
 * once round 2 reports none keeps x growing past 1 (and, the indicator
 * staying negative, never sees another event). */
#include <stdio.h>
#include <string.h>

#define FMI2_OWN_EVENTS
#define FMI2_OWN_TYPED
#include "tests/fmus/fmi2_common.h"

enum { VR_X, VR_DX, VR_COUNT, VR_UP_OUT, VR_RATE, NVR };
enum { VR_N0 = 0 };
enum { VR_UP = 0 };

typedef struct {
  double r[NVR];
  int n0;
  int count;
  int up;
  int pending;
  fmi2CallbackFunctions cb;
} Stair;

static void defaults(Stair* s) {
  memset(s->r, 0, sizeof s->r);
  s->r[VR_RATE] = 1.0;
  s->n0 = 0;
  s->count = 0;
  s->up = 1;
  s->pending = 0;
}

static void show(Stair* s) {
  s->r[VR_DX] = s->r[VR_RATE];
  s->r[VR_COUNT] = s->count;
  s->r[VR_UP_OUT] = s->up ? 1.0 : 0.0;
}

EXPORT fmi2Component fmi2Instantiate(fmi2String name, fmi2Type type, fmi2String guid, fmi2String res,
                                     const fmi2CallbackFunctions* cb, fmi2Boolean vis, fmi2Boolean log) {
  (void)res, (void)vis, (void)log;
  if (!cb || type != fmi2ModelExchange) return NULL;
  if (!guid || strcmp(guid, "{stair-2}") != 0) {
    cb->logger(cb->componentEnvironment, name, fmi2Error, "logStatusError", "wrong GUID");
    return NULL;
  }
  Stair* s = (Stair*)cb->allocateMemory(1, sizeof(Stair));
  if (!s) return NULL;
  s->cb = *cb;
  defaults(s);
  return s;
}
EXPORT void fmi2FreeInstance(fmi2Component c) { ((Stair*)c)->cb.freeMemory(c); }
EXPORT fmi2Status fmi2SetupExperiment(fmi2Component c, fmi2Boolean a, fmi2Real b, fmi2Real t0, fmi2Boolean d, fmi2Real e) {
  (void)c, (void)a, (void)b, (void)t0, (void)d, (void)e;
  return fmi2OK;
}
EXPORT fmi2Status fmi2ExitInitializationMode(fmi2Component c) {
  Stair* s = (Stair*)c;
  s->r[VR_X] = 0.0;
  s->count = s->n0;
  show(s);
  return fmi2OK;
}
EXPORT fmi2Status fmi2Reset(fmi2Component c) { defaults((Stair*)c); return fmi2OK; }
EXPORT fmi2Status fmi2GetReal(fmi2Component c, const fmi2ValueReference vr[], size_t n, fmi2Real v[]) {
  Stair* s = (Stair*)c;
  show(s);
  for (size_t i = 0; i < n; ++i) {
    if (vr[i] >= NVR) return fmi2Error;
    v[i] = s->r[vr[i]];
  }
  return fmi2OK;
}
EXPORT fmi2Status fmi2SetReal(fmi2Component c, const fmi2ValueReference vr[], size_t n, const fmi2Real v[]) {
  Stair* s = (Stair*)c;
  for (size_t i = 0; i < n; ++i) {
    if (vr[i] != VR_RATE && vr[i] != VR_X) return fmi2Error;
    s->r[vr[i]] = v[i];
  }
  return fmi2OK;
}
EXPORT fmi2Status fmi2GetInteger(fmi2Component c, const fmi2ValueReference vr[], size_t n, fmi2Integer v[]) {
  for (size_t i = 0; i < n; ++i) {
    if (vr[i] != VR_N0) return fmi2Error;
    v[i] = ((Stair*)c)->n0;
  }
  return fmi2OK;
}
EXPORT fmi2Status fmi2SetInteger(fmi2Component c, const fmi2ValueReference vr[], size_t n, const fmi2Integer v[]) {
  for (size_t i = 0; i < n; ++i) {
    if (vr[i] != VR_N0) return fmi2Error;
    ((Stair*)c)->n0 = v[i];
  }
  return fmi2OK;
}
EXPORT fmi2Status fmi2GetBoolean(fmi2Component c, const fmi2ValueReference vr[], size_t n, fmi2Boolean v[]) {
  for (size_t i = 0; i < n; ++i) {
    if (vr[i] != VR_UP) return fmi2Error;
    v[i] = ((Stair*)c)->up;
  }
  return fmi2OK;
}
EXPORT fmi2Status fmi2SetBoolean(fmi2Component c, const fmi2ValueReference vr[], size_t n, const fmi2Boolean v[]) {
  for (size_t i = 0; i < n; ++i) {
    if (vr[i] != VR_UP) return fmi2Error;
    /* FMI 2.0: fmi2True is 1, fmi2False 0; anything else is the caller's bug. */
    if (v[i] != 1 && v[i] != 0) return fmi2Error;
    ((Stair*)c)->up = v[i];
  }
  return fmi2OK;
}
EXPORT fmi2Status fmi2NewDiscreteStates(fmi2Component c, fmi2EventInfo* e) {
  Stair* s = (Stair*)c;
  memset(e, 0, sizeof *e);
  if (s->pending) {
    s->count += s->up ? 1 : -1;
    s->pending = 0;
  } else if (s->r[VR_X] >= 1.0) {
    s->r[VR_X] -= 1.0;
    s->pending = 1;
    e->valuesOfContinuousStatesChanged = 1;
    e->newDiscreteStatesNeeded = 1;
  }
  show(s);
  return fmi2OK;
}
EXPORT fmi2Status fmi2SetTime(fmi2Component c, fmi2Real t) { (void)c, (void)t; return fmi2OK; }
EXPORT fmi2Status fmi2SetContinuousStates(fmi2Component c, const fmi2Real x[], size_t n) {
  if (n != 1) return fmi2Error;
  ((Stair*)c)->r[VR_X] = x[0];
  return fmi2OK;
}
EXPORT fmi2Status fmi2GetContinuousStates(fmi2Component c, fmi2Real x[], size_t n) {
  if (n != 1) return fmi2Error;
  x[0] = ((Stair*)c)->r[VR_X];
  return fmi2OK;
}
EXPORT fmi2Status fmi2GetDerivatives(fmi2Component c, fmi2Real dx[], size_t n) {
  if (n != 1) return fmi2Error;
  dx[0] = ((Stair*)c)->r[VR_RATE];
  return fmi2OK;
}
EXPORT fmi2Status fmi2GetEventIndicators(fmi2Component c, fmi2Real z[], size_t n) {
  if (n != 1) return fmi2Error;
  z[0] = 1.0 - ((Stair*)c)->r[VR_X];
  return fmi2OK;
}
