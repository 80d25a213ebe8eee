/* A half-wave rectifier with an ideal diode as an FMI 2.0 model-exchange
 * FMU with a state event, stiff while the diode conducts:
 *   vs = V sin(2 pi f t)                 the source
 *   i_d = (vs - v1) / (on ? R_on : R_off) the diode, a piecewise-linear resistor
 *   v1' = (i_d - (v1 - v2) / R2) / C1    C1 after the diode
 *   v2' = ((v1 - v2) / R2 - v2 / R_L) / C2   C2 with the load R_L across it
 * The mode `on` (shown as the discrete Real output `on`, 1 or 0) changes
 * only in fmi2NewDiscreteStates: on = (vs - v1 > 0); the event indicator is
 * z = vs - v1. At t = 0, vs = v1 = 0: the event iteration after
 * initialisation leaves on = 0, and z rising above 0 right after is the
 * first crossing. While conducting, the fast eigenvalue is about
 * -1 / (R_on C1) = -1e6 1/s. */
#include <math.h>
#include <string.h>

#define FMI2_OWN_EVENTS
#include "tests/fmus/fmi2_common.h"

enum { VR_V1, VR_V2, VR_DV1, VR_DV2, VR_ON, VR_V, VR_F, VR_RON, VR_ROFF, VR_C1, VR_C2, VR_R2, VR_RL, NVR };

typedef struct {
  double r[NVR];
  double time;
  int on;
  fmi2CallbackFunctions cb;
} Rectifier;

static void defaults(Rectifier* m) {
  memset(m->r, 0, sizeof m->r);
  m->r[VR_V] = 10.0;
  m->r[VR_F] = 50.0;
  m->r[VR_RON] = 1e-3;
  m->r[VR_ROFF] = 1e6;
  m->r[VR_C1] = 1e-3;
  m->r[VR_C2] = 1e-4;
  m->r[VR_R2] = 10.0;
  m->r[VR_RL] = 100.0;
  m->time = 0.0;
  m->on = 0;
}

static double source(const Rectifier* m) {
  return m->r[VR_V] * sin(2.0 * 3.14159265358979323846 * m->r[VR_F] * m->time);
}

/* The derivatives and the mode's output from time, states and mode. */
static void compute(Rectifier* m) {
  const double* r = m->r;
  const double i_d = (source(m) - r[VR_V1]) / (m->on ? r[VR_RON] : r[VR_ROFF]);
  const double i_2 = (r[VR_V1] - r[VR_V2]) / r[VR_R2];
  m->r[VR_DV1] = (i_d - i_2) / r[VR_C1];
  m->r[VR_DV2] = (i_2 - r[VR_V2] / r[VR_RL]) / r[VR_C2];
  m->r[VR_ON] = m->on ? 1.0 : 0.0;
}

EXPORT fmi2Component fmi2Instantiate(fmi2String name, fmi2Type type, fmi2String guid, fmi2String res,
                                     const fmi2CallbackFunctions* cb, fmi2Boolean vis, fmi2Boolean log) {
  (void)res, (void)vis, (void)log;
  if (!cb || type != fmi2ModelExchange) return NULL;
  if (!guid || strcmp(guid, "{rectifier-2}") != 0) {
    cb->logger(cb->componentEnvironment, name, fmi2Error, "logStatusError", "wrong GUID");
    return NULL;
  }
  Rectifier* m = (Rectifier*)cb->allocateMemory(1, sizeof(Rectifier));
  if (!m) return NULL;
  m->cb = *cb;
  defaults(m);
  return m;
}
EXPORT void fmi2FreeInstance(fmi2Component c) { ((Rectifier*)c)->cb.freeMemory(c); }
EXPORT fmi2Status fmi2SetupExperiment(fmi2Component c, fmi2Boolean a, fmi2Real b, fmi2Real t0, fmi2Boolean d, fmi2Real e) {
  (void)a, (void)b, (void)d, (void)e;
  ((Rectifier*)c)->time = t0;
  return fmi2OK;
}
EXPORT fmi2Status fmi2ExitInitializationMode(fmi2Component c) {
  Rectifier* m = (Rectifier*)c;
  m->r[VR_V1] = 0.0;
  m->r[VR_V2] = 0.0;
  m->on = 0;
  compute(m);
  return fmi2OK;
}
EXPORT fmi2Status fmi2Reset(fmi2Component c) { defaults((Rectifier*)c); return fmi2OK; }
EXPORT fmi2Status fmi2GetReal(fmi2Component c, const fmi2ValueReference vr[], size_t n, fmi2Real v[]) {
  Rectifier* m = (Rectifier*)c;
  compute(m);
  for (size_t i = 0; i < n; ++i) {
    if (vr[i] >= NVR) return fmi2Error;
    v[i] = m->r[vr[i]];
  }
  return fmi2OK;
}
EXPORT fmi2Status fmi2SetReal(fmi2Component c, const fmi2ValueReference vr[], size_t n, const fmi2Real v[]) {
  Rectifier* m = (Rectifier*)c;
  for (size_t i = 0; i < n; ++i) {
    /* The parameters, and the states (as bball2 allows); not the computed ones. */
    if (vr[i] >= NVR || vr[i] == VR_DV1 || vr[i] == VR_DV2 || vr[i] == VR_ON) return fmi2Error;
    m->r[vr[i]] = v[i];
  }
  return fmi2OK;
}
EXPORT fmi2Status fmi2NewDiscreteStates(fmi2Component c, fmi2EventInfo* e) {
  Rectifier* m = (Rectifier*)c;
  memset(e, 0, sizeof *e);
  /* The mode follows the indicator's side: consistent at once, so one round
     settles it; the states themselves do not jump. */
  m->on = source(m) - m->r[VR_V1] > 0.0;
  e->newDiscreteStatesNeeded = 0;
  e->valuesOfContinuousStatesChanged = 0;
  e->nextEventTimeDefined = 0;
  compute(m);
  return fmi2OK;
}
EXPORT fmi2Status fmi2SetTime(fmi2Component c, fmi2Real t) { ((Rectifier*)c)->time = t; return fmi2OK; }
EXPORT fmi2Status fmi2SetContinuousStates(fmi2Component c, const fmi2Real x[], size_t n) {
  Rectifier* m = (Rectifier*)c;
  if (n != 2) return fmi2Error;
  m->r[VR_V1] = x[0];
  m->r[VR_V2] = x[1];
  return fmi2OK;
}
EXPORT fmi2Status fmi2GetContinuousStates(fmi2Component c, fmi2Real x[], size_t n) {
  Rectifier* m = (Rectifier*)c;
  if (n != 2) return fmi2Error;
  x[0] = m->r[VR_V1];
  x[1] = m->r[VR_V2];
  return fmi2OK;
}
EXPORT fmi2Status fmi2GetDerivatives(fmi2Component c, fmi2Real dx[], size_t n) {
  Rectifier* m = (Rectifier*)c;
  if (n != 2) return fmi2Error;
  compute(m);
  dx[0] = m->r[VR_DV1];
  dx[1] = m->r[VR_DV2];
  return fmi2OK;
}
EXPORT fmi2Status fmi2GetEventIndicators(fmi2Component c, fmi2Real z[], size_t n) {
  Rectifier* m = (Rectifier*)c;
  if (n != 1) return fmi2Error;
  z[0] = source(m) - m->r[VR_V1];
  return fmi2OK;
}
