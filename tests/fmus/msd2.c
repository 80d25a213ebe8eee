/* A linear mass-spring-damper as an FMI 2.0 FMU, model exchange and
 * co-simulation in one binary, for rtcosim's tests:
 *   m x'' + c x' + k x = F,   x(0) = x0, v(0) = v0.
 * Co-simulation integrates internally with RK4 at 1/20 of the
 * communication step (error far below what the tests resolve).
 * Build-time variants (compile definitions):
 *   MSD_GUID        the GUID this binary accepts
 *   MSD_FAIL_AT     doStep / GetDerivatives return fmi2Error from this time on
 *   MSD_ALLOCATE    doStep allocates (and frees) through the callbacks
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/fmus/fmi2_common.h"
#include "tests/fmus/msd_model.h"

enum { VR_X, VR_V, VR_DX, VR_DV, VR_M, VR_K, VR_C, VR_F, VR_X0, VR_V0, VR_A, NVR };

typedef struct {
  double r[NVR];
  double time;
  fmi2Type type;
  fmi2CallbackFunctions cb;
  char name[64];
} Model;

static void derivs(const Model* m, double x, double v, double* dx, double* dv) {
  const MsdParams p = {m->r[VR_M], m->r[VR_K], m->r[VR_C], m->r[VR_F]};
  msd_derivs(&p, x, v, dx, dv);
}

static void defaults(Model* m) {
  memset(m->r, 0, sizeof m->r);
  m->r[VR_M] = 1.0;
  m->r[VR_K] = 4.0;
  m->r[VR_C] = 0.4;
  m->r[VR_X0] = 1.0;
  m->time = 0.0;
}

static void calc(Model* m) {
  derivs(m, m->r[VR_X], m->r[VR_V], &m->r[VR_DX], &m->r[VR_DV]);
  m->r[VR_A] = m->r[VR_DV];
}

static fmi2Status fail(Model* m, const char* what) {
  m->cb.logger(m->cb.componentEnvironment, m->name, fmi2Error, "logStatusError", "%s at t = %g s", what, m->time);
  return fmi2Error;
}


EXPORT fmi2Component fmi2Instantiate(fmi2String name, fmi2Type type, fmi2String guid, fmi2String resources,
                                     const fmi2CallbackFunctions* cb, fmi2Boolean visible, fmi2Boolean logging) {
  (void)resources, (void)visible, (void)logging;
  if (!cb || !cb->logger || !cb->allocateMemory) return NULL;
  if (!guid || strcmp(guid, MSD_GUID) != 0) {
    cb->logger(cb->componentEnvironment, name, fmi2Error, "logStatusError", "GUID '%s' does not match this binary's '%s'",
               guid ? guid : "(null)", MSD_GUID);
    return NULL;
  }
  Model* m = (Model*)cb->allocateMemory(1, sizeof(Model));
  if (!m) return NULL;
  m->cb = *cb;
  m->type = type;
  snprintf(m->name, sizeof m->name, "%s", name);
  defaults(m);
  return m;
}

EXPORT void fmi2FreeInstance(fmi2Component c) {
  Model* m = (Model*)c;
  if (m) m->cb.freeMemory(m);
}

EXPORT fmi2Status fmi2SetupExperiment(fmi2Component c, fmi2Boolean td, fmi2Real tol, fmi2Real t0, fmi2Boolean sd, fmi2Real stop) {
  (void)td, (void)tol, (void)sd, (void)stop;
  ((Model*)c)->time = t0;
  return fmi2OK;
}
EXPORT fmi2Status fmi2ExitInitializationMode(fmi2Component c) {
  Model* m = (Model*)c;
  m->r[VR_X] = m->r[VR_X0];
  m->r[VR_V] = m->r[VR_V0];
  calc(m);
  return fmi2OK;
}
EXPORT fmi2Status fmi2Reset(fmi2Component c) {
  defaults((Model*)c);
  return fmi2OK;
}

EXPORT fmi2Status fmi2GetReal(fmi2Component c, const fmi2ValueReference vr[], size_t n, fmi2Real v[]) {
  Model* m = (Model*)c;
  calc(m);
  for (size_t i = 0; i < n; ++i) {
    if (vr[i] >= NVR) return fail(m, "unknown value reference");
    v[i] = m->r[vr[i]];
  }
  return fmi2OK;
}
EXPORT fmi2Status fmi2SetReal(fmi2Component c, const fmi2ValueReference vr[], size_t n, const fmi2Real v[]) {
  Model* m = (Model*)c;
  for (size_t i = 0; i < n; ++i) {
    if (vr[i] >= NVR) return fail(m, "unknown value reference");
    m->r[vr[i]] = v[i];
  }
  return fmi2OK;
}
EXPORT fmi2Status fmi2GetFMUstate(fmi2Component c, fmi2FMUstate* s) {
  Model* m = (Model*)c;
  if (!*s) *s = m->cb.allocateMemory(1, sizeof(Model));
  memcpy(*s, m, sizeof(Model));
  return fmi2OK;
}
EXPORT fmi2Status fmi2SetFMUstate(fmi2Component c, fmi2FMUstate s) {
  memcpy(c, s, sizeof(Model));
  return fmi2OK;
}
EXPORT fmi2Status fmi2FreeFMUstate(fmi2Component c, fmi2FMUstate* s) {
  ((Model*)c)->cb.freeMemory(*s);
  *s = NULL;
  return fmi2OK;
}
EXPORT fmi2Status fmi2SerializedFMUstateSize(fmi2Component c, fmi2FMUstate s, size_t* size) {
  (void)c, (void)s;
  *size = msd_serialized_size(NVR);
  return fmi2OK;
}
EXPORT fmi2Status fmi2SerializeFMUstate(fmi2Component c, fmi2FMUstate s, fmi2Byte out[], size_t size) {
  const Model* state = (const Model*)s;
  if (size < msd_serialized_size(NVR)) return fail((Model*)c, "serialization buffer too small");
  msd_serialize("MSD2", state->r, NVR, state->time, (unsigned char*)out);
  return fmi2OK;
}
EXPORT fmi2Status fmi2DeSerializeFMUstate(fmi2Component c, const fmi2Byte in[], size_t size, fmi2FMUstate* s) {
  Model* m = (Model*)c;
  Model* state = (Model*)(*s ? *s : m->cb.allocateMemory(1, sizeof(Model)));
  if (!state) return fail(m, "out of memory");
  memcpy(state, m, sizeof(Model));
  if (!msd_deserialize("MSD2", (const unsigned char*)in, size, state->r, NVR, &state->time)) {
    if (!*s) m->cb.freeMemory(state);
    m->cb.logger(m->cb.componentEnvironment, m->name, fmi2Error, "logStatusError",
                 "not a serialized msd2 state (%zu bytes; expected %zu starting with MSD2)", size,
                 msd_serialized_size(NVR));
    return fmi2Error;
  }
  *s = state;
  return fmi2OK;
}

/* Model exchange */
EXPORT fmi2Status fmi2SetTime(fmi2Component c, fmi2Real t) {
  ((Model*)c)->time = t;
  return fmi2OK;
}
EXPORT fmi2Status fmi2SetContinuousStates(fmi2Component c, const fmi2Real x[], size_t n) {
  Model* m = (Model*)c;
  if (n != 2) return fail(m, "expected 2 states");
  m->r[VR_X] = x[0];
  m->r[VR_V] = x[1];
  return fmi2OK;
}
EXPORT fmi2Status fmi2GetContinuousStates(fmi2Component c, fmi2Real x[], size_t n) {
  Model* m = (Model*)c;
  if (n != 2) return fail(m, "expected 2 states");
  x[0] = m->r[VR_X];
  x[1] = m->r[VR_V];
  return fmi2OK;
}
EXPORT fmi2Status fmi2GetDerivatives(fmi2Component c, fmi2Real dx[], size_t n) {
  Model* m = (Model*)c;
  if (n != 2) return fail(m, "expected 2 states");
#ifdef MSD_FAIL_AT
  if (m->time >= MSD_FAIL_AT) return fail(m, "the spring broke");
#endif
  derivs(m, m->r[VR_X], m->r[VR_V], &dx[0], &dx[1]);
  return fmi2OK;
}
/* The partial derivatives of the linear model, d unknown / d known, for
 * the states x, v and the input F as knowns and the derivatives, the
 * states and the acceleration as unknowns: what a Rosenbrock integrator
 * takes as its Jacobian (providesDirectionalDerivative). */
static int partial(const Model* m, fmi2ValueReference u, fmi2ValueReference k, double* d) {
  const double mass = m->r[VR_M];
  if (k != VR_X && k != VR_V && k != VR_F) return 0;
  switch (u) {
    case VR_X: *d = k == VR_X ? 1.0 : 0.0; return 1;
    case VR_V:
    case VR_DX: *d = k == VR_V ? 1.0 : 0.0; return 1;
    case VR_DV:
    case VR_A: *d = k == VR_X ? -m->r[VR_K] / mass : k == VR_V ? -m->r[VR_C] / mass : 1.0 / mass; return 1;
    default: return 0;
  }
}
EXPORT fmi2Status fmi2GetDirectionalDerivative(fmi2Component c, const fmi2ValueReference vUnknown_ref[],
                                               size_t nUnknown, const fmi2ValueReference vKnown_ref[], size_t nKnown,
                                               const fmi2Real dvKnown[], fmi2Real dvUnknown[]) {
  Model* m = (Model*)c;
  for (size_t i = 0; i < nUnknown; ++i) {
    double sum = 0.0;
    for (size_t j = 0; j < nKnown; ++j) {
      double d = 0.0;
      if (!partial(m, vUnknown_ref[i], vKnown_ref[j], &d)) return fail(m, "no such directional derivative");
      sum += d * dvKnown[j];
    }
    dvUnknown[i] = sum;
  }
  return fmi2OK;
}
EXPORT fmi2Status fmi2GetNominalsOfContinuousStates(fmi2Component c, fmi2Real x[], size_t n) {
  (void)c;
  for (size_t i = 0; i < n; ++i) x[i] = 1.0;
  return fmi2OK;
}

/* Co-simulation */
EXPORT fmi2Status fmi2DoStep(fmi2Component c, fmi2Real t, fmi2Real h, fmi2Boolean no) {
  Model* m = (Model*)c;
  (void)no;
  m->time = t;
#ifdef MSD_FAIL_AT
  if (t + h > MSD_FAIL_AT) return fail(m, "the spring broke");
#endif
#ifdef MSD_ALLOCATE
  void* block = m->cb.allocateMemory(16, sizeof(double));
  m->cb.freeMemory(block);
#endif
  const MsdParams p = {m->r[VR_M], m->r[VR_K], m->r[VR_C], m->r[VR_F]};
  msd_advance(&p, &m->r[VR_X], &m->r[VR_V], h);
  m->time = t + h;
  calc(m);
  return fmi2OK;
}
EXPORT fmi2Status fmi2GetRealOutputDerivatives(fmi2Component c, const fmi2ValueReference vr[], size_t n,
                                               const fmi2Integer order[], fmi2Real v[]) {
  Model* m = (Model*)c;
  calc(m);
  for (size_t i = 0; i < n; ++i) {
    if (order[i] != 1) return fail(m, "only first derivatives");
    switch (vr[i]) {
      case VR_X: v[i] = m->r[VR_V]; break;
      case VR_V: v[i] = m->r[VR_DV]; break;
      /* d/dt (F - k x - c v) / m with the input held over the step */
      case VR_A: v[i] = (-m->r[VR_K] * m->r[VR_V] - m->r[VR_C] * m->r[VR_DV]) / m->r[VR_M]; break;
      default: return fail(m, "no derivative for this output");
    }
  }
  return fmi2OK;
}
EXPORT fmi2Status fmi2SetRealInputDerivatives(fmi2Component c, const fmi2ValueReference vr[], size_t n,
                                              const fmi2Integer order[], const fmi2Real v[]) {
  (void)c, (void)vr, (void)order, (void)v;
  return n == 0 ? fmi2OK : fmi2Error;
}
EXPORT fmi2Status fmi2CancelStep(fmi2Component c) { (void)c; return fmi2Error; }
