/* The FMI 2.0 functions the test FMUs implement alike: no Integer or
 * Boolean variables unless the FMU defines FMI2_OWN_TYPED and writes their
 * four getters and setters itself, no-op mode changes, no events unless the
 * FMU defines FMI2_OWN_EVENTS and writes fmi2NewDiscreteStates and
 * fmi2GetEventIndicators itself. Include once, in the FMU's only source. */
#ifndef RTCOSIM_TEST_FMI2_COMMON_H
#define RTCOSIM_TEST_FMI2_COMMON_H

#include <string.h>

#include "tasks/fmu/fmi_api.h"

#define EXPORT __attribute__((visibility("default")))

EXPORT const char* fmi2GetTypesPlatform(void) { return "default"; }
EXPORT const char* fmi2GetVersion(void) { return "2.0"; }
EXPORT fmi2Status fmi2EnterInitializationMode(fmi2Component c) { (void)c; return fmi2OK; }
EXPORT fmi2Status fmi2Terminate(fmi2Component c) { (void)c; return fmi2OK; }
#ifndef FMI2_OWN_TYPED
EXPORT fmi2Status fmi2GetInteger(fmi2Component c, const fmi2ValueReference vr[], size_t n, fmi2Integer v[]) {
  (void)c, (void)vr, (void)v;
  return n == 0 ? fmi2OK : fmi2Error;
}
EXPORT fmi2Status fmi2SetInteger(fmi2Component c, const fmi2ValueReference vr[], size_t n, const fmi2Integer v[]) {
  (void)c, (void)vr, (void)v;
  return n == 0 ? fmi2OK : fmi2Error;
}
EXPORT fmi2Status fmi2GetBoolean(fmi2Component c, const fmi2ValueReference vr[], size_t n, fmi2Boolean v[]) {
  (void)c, (void)vr, (void)v;
  return n == 0 ? fmi2OK : fmi2Error;
}
EXPORT fmi2Status fmi2SetBoolean(fmi2Component c, const fmi2ValueReference vr[], size_t n, const fmi2Boolean v[]) {
  (void)c, (void)vr, (void)v;
  return n == 0 ? fmi2OK : fmi2Error;
}
#endif
EXPORT fmi2Status fmi2EnterEventMode(fmi2Component c) { (void)c; return fmi2OK; }
EXPORT fmi2Status fmi2EnterContinuousTimeMode(fmi2Component c) { (void)c; return fmi2OK; }
EXPORT fmi2Status fmi2CompletedIntegratorStep(fmi2Component c, fmi2Boolean no, fmi2Boolean* enter, fmi2Boolean* term) {
  (void)c, (void)no;
  *enter = 0;
  *term = 0;
  return fmi2OK;
}
#ifndef FMI2_OWN_EVENTS
EXPORT fmi2Status fmi2NewDiscreteStates(fmi2Component c, fmi2EventInfo* e) {
  (void)c;
  memset(e, 0, sizeof *e);
  return fmi2OK;
}
EXPORT fmi2Status fmi2GetEventIndicators(fmi2Component c, fmi2Real z[], size_t n) {
  (void)c, (void)z;
  return n == 0 ? fmi2OK : fmi2Error;
}
#endif

#endif
