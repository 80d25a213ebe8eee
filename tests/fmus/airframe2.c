/* The flight-control example's airframe (docs/flight_control_example.md) as
 * an FMI 2.0 model-exchange FMU:
 *   q / delta = (12.5 s + 25) / (s^2 + 5 s + 25),   theta' = q
 * in controllable canonical form: x1' = x2, x2' = -25 x1 - 5 x2 + delta,
 * q = 25 x1 + 12.5 x2; states x1, x2, theta; outputs q and theta. */
#include <string.h>

#include "tests/fmus/fmi2_common.h"

enum { VR_X1, VR_X2, VR_THETA, VR_DX1, VR_DX2, VR_Q, VR_DELTA, NVR };

typedef struct {
  double r[NVR];
  fmi2CallbackFunctions cb;
} Airframe;

static void calc(Airframe* a) {
  a->r[VR_DX1] = a->r[VR_X2];
  a->r[VR_DX2] = -25.0 * a->r[VR_X1] - 5.0 * a->r[VR_X2] + a->r[VR_DELTA];
  a->r[VR_Q] = 25.0 * a->r[VR_X1] + 12.5 * a->r[VR_X2];
}

EXPORT fmi2Component fmi2Instantiate(fmi2String name, fmi2Type type, fmi2String guid, fmi2String res,
                                     const fmi2CallbackFunctions* cb, fmi2Boolean vis, fmi2Boolean log) {
  (void)res, (void)vis, (void)log;
  if (!cb || type != fmi2ModelExchange) return NULL;
  if (!guid || strcmp(guid, "{airframe-2}") != 0) {
    cb->logger(cb->componentEnvironment, name, fmi2Error, "logStatusError", "wrong GUID");
    return NULL;
  }
  Airframe* a = (Airframe*)cb->allocateMemory(1, sizeof(Airframe));
  if (a) a->cb = *cb;
  return a;
}
EXPORT void fmi2FreeInstance(fmi2Component c) { ((Airframe*)c)->cb.freeMemory(c); }
EXPORT fmi2Status fmi2SetupExperiment(fmi2Component c, fmi2Boolean a, fmi2Real b, fmi2Real t0, fmi2Boolean d, fmi2Real e) {
  (void)c, (void)a, (void)b, (void)t0, (void)d, (void)e;
  return fmi2OK;
}
EXPORT fmi2Status fmi2ExitInitializationMode(fmi2Component c) { (void)c; return fmi2OK; }
EXPORT fmi2Status fmi2Reset(fmi2Component c) {
  memset(((Airframe*)c)->r, 0, sizeof(double) * NVR);
  return fmi2OK;
}
EXPORT fmi2Status fmi2GetReal(fmi2Component c, const fmi2ValueReference vr[], size_t n, fmi2Real v[]) {
  Airframe* a = (Airframe*)c;
  calc(a);
  for (size_t i = 0; i < n; ++i) {
    if (vr[i] >= NVR) return fmi2Error;
    v[i] = a->r[vr[i]];
  }
  return fmi2OK;
}
EXPORT fmi2Status fmi2SetReal(fmi2Component c, const fmi2ValueReference vr[], size_t n, const fmi2Real v[]) {
  Airframe* a = (Airframe*)c;
  for (size_t i = 0; i < n; ++i) {
    if (vr[i] >= NVR) return fmi2Error;
    a->r[vr[i]] = v[i];
  }
  return fmi2OK;
}
EXPORT fmi2Status fmi2SetTime(fmi2Component c, fmi2Real t) { (void)c, (void)t; return fmi2OK; }
EXPORT fmi2Status fmi2SetContinuousStates(fmi2Component c, const fmi2Real x[], size_t n) {
  if (n != 3) return fmi2Error;
  memcpy(((Airframe*)c)->r, x, 3 * sizeof(double));
  return fmi2OK;
}
EXPORT fmi2Status fmi2GetContinuousStates(fmi2Component c, fmi2Real x[], size_t n) {
  if (n != 3) return fmi2Error;
  memcpy(x, ((Airframe*)c)->r, 3 * sizeof(double));
  return fmi2OK;
}
EXPORT fmi2Status fmi2GetDerivatives(fmi2Component c, fmi2Real dx[], size_t n) {
  Airframe* a = (Airframe*)c;
  if (n != 3) return fmi2Error;
  calc(a);
  dx[0] = a->r[VR_DX1];
  dx[1] = a->r[VR_DX2];
  dx[2] = a->r[VR_Q];
  return fmi2OK;
}
