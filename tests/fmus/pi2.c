/* A PI controller as an FMI 2.0 FMU, model exchange and co-simulation in
 * one binary, for rtcosim's tests (the controller of the SSP import test):
 *   u = kp (r - y) + ki z,   z' = r - y,   z(0) = 0.
 * Co-simulation integrates z exactly over the step with the input held
 * (z += (r - y) h); the output after the step uses the input at its start. */
#include <stdio.h>
#include <string.h>

#include "tests/fmus/fmi2_common.h"

enum { VR_Z, VR_DZ, VR_Y, VR_U, VR_KP, VR_KI, VR_R, NVR };

typedef struct {
  double r[NVR];
  fmi2CallbackFunctions cb;
  char name[64];
} Pi;

static void defaults(Pi* p) {
  memset(p->r, 0, sizeof p->r);
  p->r[VR_KP] = 1.0;
}

static void calc(Pi* p) {
  p->r[VR_DZ] = p->r[VR_R] - p->r[VR_Y];
  p->r[VR_U] = p->r[VR_KP] * p->r[VR_DZ] + p->r[VR_KI] * p->r[VR_Z];
}

static fmi2Status fail(Pi* p, const char* what) {
  p->cb.logger(p->cb.componentEnvironment, p->name, fmi2Error, "logStatusError", "%s", what);
  return fmi2Error;
}

EXPORT fmi2Component fmi2Instantiate(fmi2String name, fmi2Type type, fmi2String guid, fmi2String res,
                                     const fmi2CallbackFunctions* cb, fmi2Boolean vis, fmi2Boolean log) {
  (void)type, (void)res, (void)vis, (void)log;
  if (!cb || !cb->logger || !cb->allocateMemory) return NULL;
  if (!guid || strcmp(guid, "{pi-2}") != 0) {
    cb->logger(cb->componentEnvironment, name, fmi2Error, "logStatusError", "wrong GUID");
    return NULL;
  }
  Pi* p = (Pi*)cb->allocateMemory(1, sizeof(Pi));
  if (!p) return NULL;
  p->cb = *cb;
  snprintf(p->name, sizeof p->name, "%s", name);
  defaults(p);
  return p;
}
EXPORT void fmi2FreeInstance(fmi2Component c) {
  Pi* p = (Pi*)c;
  if (p) p->cb.freeMemory(p);
}
EXPORT fmi2Status fmi2SetupExperiment(fmi2Component c, fmi2Boolean a, fmi2Real b, fmi2Real t0, fmi2Boolean d, fmi2Real e) {
  (void)c, (void)a, (void)b, (void)t0, (void)d, (void)e;
  return fmi2OK;
}
EXPORT fmi2Status fmi2ExitInitializationMode(fmi2Component c) {
  calc((Pi*)c);
  return fmi2OK;
}
EXPORT fmi2Status fmi2Reset(fmi2Component c) {
  defaults((Pi*)c);
  return fmi2OK;
}
EXPORT fmi2Status fmi2GetReal(fmi2Component c, const fmi2ValueReference vr[], size_t n, fmi2Real v[]) {
  Pi* p = (Pi*)c;
  calc(p);
  for (size_t i = 0; i < n; ++i) {
    if (vr[i] >= NVR) return fail(p, "unknown value reference");
    v[i] = p->r[vr[i]];
  }
  return fmi2OK;
}
EXPORT fmi2Status fmi2SetReal(fmi2Component c, const fmi2ValueReference vr[], size_t n, const fmi2Real v[]) {
  Pi* p = (Pi*)c;
  for (size_t i = 0; i < n; ++i) {
    if (vr[i] >= NVR) return fail(p, "unknown value reference");
    p->r[vr[i]] = v[i];
  }
  return fmi2OK;
}
/* Model exchange */
EXPORT fmi2Status fmi2SetTime(fmi2Component c, fmi2Real t) {
  (void)c, (void)t;
  return fmi2OK;
}
EXPORT fmi2Status fmi2SetContinuousStates(fmi2Component c, const fmi2Real x[], size_t n) {
  Pi* p = (Pi*)c;
  if (n != 1) return fail(p, "expected 1 state");
  p->r[VR_Z] = x[0];
  return fmi2OK;
}
EXPORT fmi2Status fmi2GetContinuousStates(fmi2Component c, fmi2Real x[], size_t n) {
  Pi* p = (Pi*)c;
  if (n != 1) return fail(p, "expected 1 state");
  x[0] = p->r[VR_Z];
  return fmi2OK;
}
EXPORT fmi2Status fmi2GetDerivatives(fmi2Component c, fmi2Real dx[], size_t n) {
  Pi* p = (Pi*)c;
  if (n != 1) return fail(p, "expected 1 state");
  calc(p);
  dx[0] = p->r[VR_DZ];
  return fmi2OK;
}
EXPORT fmi2Status fmi2GetNominalsOfContinuousStates(fmi2Component c, fmi2Real x[], size_t n) {
  (void)c;
  for (size_t i = 0; i < n; ++i) x[i] = 1.0;
  return fmi2OK;
}

/* Co-simulation */
EXPORT fmi2Status fmi2DoStep(fmi2Component c, fmi2Real t, fmi2Real h, fmi2Boolean no) {
  Pi* p = (Pi*)c;
  (void)t, (void)no;
  calc(p);
  p->r[VR_Z] += p->r[VR_DZ] * h;
  calc(p);
  return fmi2OK;
}
EXPORT fmi2Status fmi2SetRealInputDerivatives(fmi2Component c, const fmi2ValueReference vr[], size_t n,
                                              const fmi2Integer order[], const fmi2Real v[]) {
  (void)c, (void)vr, (void)order, (void)v;
  return n == 0 ? fmi2OK : fmi2Error;
}
EXPORT fmi2Status fmi2CancelStep(fmi2Component c) { (void)c; return fmi2Error; }
