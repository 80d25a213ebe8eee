/* FMI 3.0 arrays and co-simulation output derivatives (model exchange and
 * co-simulation). A UInt64 structural parameter n (start 3, 1 ... 8,
 * settable in Configuration Mode only) sizes the Float64 arrays
 *   k (parameter, start k[i] = i + 1), u (input), y = k u (output),
 *   x (output and state, x' = u, x(0) = 0);
 * s = sin(w t) is a scalar output (w a parameter, start 2) and i, j are
 * Int32 arrays of two elements: j = 2 i.
 * Co-simulation: doStep integrates x exactly for the constant input of the
 * step; fmi3GetOutputDerivatives gives order 1 only: dy = 0 (u held),
 * dx = u, ds = w cos(w t).
 * Every getter and setter checks its value references' types and that
 * nValues is the elements of its variables in all: an importer that passes
 * nValues = nValueReferences for an array gets fmi3Error and a message. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tasks/fmu/fmi_api.h"
#include "tests/fmus/fmi3_common.h"

#define EXPORT __attribute__((visibility("default")))
#define MAXN 8

enum { VR_TIME, VR_N, VR_K, VR_U, VR_Y, VR_X, VR_DX, VR_S, VR_W, VR_I, VR_J, NVR };

typedef struct {
  uint64_t n;
  double k[MAXN], u[MAXN], x[MAXN];
  double w, time;
  int32_t i[2];
  bool configuring, initialized;
  fmi3InstanceEnvironment env;
  fmi3LogMessageCallback log;
} Model;

static void error(const Model* m, const char* text) {
  if (m->log) m->log(m->env, fmi3Error, "logStatusError", text);
}

static void defaults(Model* m) {
  m->n = 3;
  for (int a = 0; a < MAXN; ++a) {
    m->k[a] = a + 1.0;
    m->u[a] = 0.0;
    m->x[a] = 0.0;
  }
  m->w = 2.0;
  m->time = 0.0;
  m->i[0] = m->i[1] = 0;
  m->configuring = m->initialized = false;
}

static int is_float64(fmi3ValueReference vr) {
  return vr == VR_TIME || vr == VR_K || vr == VR_U || vr == VR_Y || vr == VR_X || vr == VR_DX || vr == VR_S ||
         vr == VR_W;
}

/* Elements of a variable; 0: not of this model. */
static size_t size_of(const Model* m, fmi3ValueReference vr) {
  switch (vr) {
    case VR_K:
    case VR_U:
    case VR_Y:
    case VR_X:
    case VR_DX:
      return (size_t)m->n;
    case VR_I:
    case VR_J:
      return 2;
    case VR_TIME:
    case VR_N:
    case VR_S:
    case VR_W:
      return 1;
    default:
      return 0;
  }
}

/* nValues must be the elements of vr[0 .. nvr) in all. */
static int check_values(const Model* m, const fmi3ValueReference vr[], size_t nvr, size_t nv, const char* fn) {
  size_t total = 0;
  for (size_t a = 0; a < nvr; ++a) total += size_of(m, vr[a]);
  if (total != nv) {
    char text[160];
    snprintf(text, sizeof text, "%s: nValues = %zu, but the variables hold %zu values", fn, nv, total);
    error(m, text);
    return 0;
  }
  return 1;
}

FMI3_INSTANTIATION("{vec-3}")
EXPORT fmi3Status fmi3EnterConfigurationMode(fmi3Instance i) {
  Model* m = (Model*)i;
  if (m->initialized) {
    error(m, "fmi3EnterConfigurationMode after initialisation");
    return fmi3Error;
  }
  m->configuring = true;
  return fmi3OK;
}
EXPORT fmi3Status fmi3ExitConfigurationMode(fmi3Instance i) {
  ((Model*)i)->configuring = false;
  return fmi3OK;
}
EXPORT fmi3Status fmi3EnterInitializationMode(fmi3Instance i, fmi3Boolean td, fmi3Float64 tol, fmi3Float64 t0,
                                              fmi3Boolean sd, fmi3Float64 stop) {
  (void)td, (void)tol, (void)sd, (void)stop;
  ((Model*)i)->time = t0;
  return fmi3OK;
}
EXPORT fmi3Status fmi3ExitInitializationMode(fmi3Instance i) {
  ((Model*)i)->initialized = true;
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

EXPORT fmi3Status fmi3GetFloat64(fmi3Instance i, const fmi3ValueReference vr[], size_t nvr, fmi3Float64 v[],
                                 size_t nv) {
  Model* m = (Model*)i;
  if (!check_values(m, vr, nvr, nv, "fmi3GetFloat64")) return fmi3Error;
  size_t at = 0;
  for (size_t a = 0; a < nvr; ++a) {
    if (!is_float64(vr[a])) {
      error(m, "fmi3GetFloat64: not a Float64 variable");
      return fmi3Error;
    }
    for (size_t e = 0; e < size_of(m, vr[a]); ++e) {
      switch (vr[a]) {
        case VR_TIME:
          v[at++] = m->time;
          break;
        case VR_K:
          v[at++] = m->k[e];
          break;
        case VR_U:
        case VR_DX:
          v[at++] = m->u[e];
          break;
        case VR_Y:
          v[at++] = m->k[e] * m->u[e];
          break;
        case VR_X:
          v[at++] = m->x[e];
          break;
        case VR_S:
          v[at++] = sin(m->w * m->time);
          break;
        case VR_W:
          v[at++] = m->w;
          break;
      }
    }
  }
  return fmi3OK;
}
EXPORT fmi3Status fmi3SetFloat64(fmi3Instance i, const fmi3ValueReference vr[], size_t nvr, const fmi3Float64 v[],
                                 size_t nv) {
  Model* m = (Model*)i;
  if (!check_values(m, vr, nvr, nv, "fmi3SetFloat64")) return fmi3Error;
  size_t at = 0;
  for (size_t a = 0; a < nvr; ++a) {
    double* to = vr[a] == VR_K ? m->k : vr[a] == VR_U ? m->u : vr[a] == VR_W ? &m->w : NULL;
    if (!to || ((vr[a] == VR_K || vr[a] == VR_W) && m->initialized)) {
      error(m, "fmi3SetFloat64: not a settable Float64 variable");
      return fmi3Error;
    }
    for (size_t e = 0; e < size_of(m, vr[a]); ++e) to[e] = v[at++];
  }
  return fmi3OK;
}
EXPORT fmi3Status fmi3GetInt32(fmi3Instance i, const fmi3ValueReference vr[], size_t nvr, fmi3Int32 v[], size_t nv) {
  Model* m = (Model*)i;
  if (!check_values(m, vr, nvr, nv, "fmi3GetInt32")) return fmi3Error;
  size_t at = 0;
  for (size_t a = 0; a < nvr; ++a) {
    if (vr[a] != VR_I && vr[a] != VR_J) {
      error(m, "fmi3GetInt32: not an Int32 variable");
      return fmi3Error;
    }
    for (size_t e = 0; e < 2; ++e) v[at++] = vr[a] == VR_I ? m->i[e] : 2 * m->i[e];
  }
  return fmi3OK;
}
EXPORT fmi3Status fmi3SetInt32(fmi3Instance i, const fmi3ValueReference vr[], size_t nvr, const fmi3Int32 v[],
                               size_t nv) {
  Model* m = (Model*)i;
  if (!check_values(m, vr, nvr, nv, "fmi3SetInt32")) return fmi3Error;
  size_t at = 0;
  for (size_t a = 0; a < nvr; ++a) {
    if (vr[a] != VR_I) {
      error(m, "fmi3SetInt32: not a settable Int32 variable");
      return fmi3Error;
    }
    for (size_t e = 0; e < 2; ++e) m->i[e] = v[at++];
  }
  return fmi3OK;
}
EXPORT fmi3Status fmi3GetUInt64(fmi3Instance i, const fmi3ValueReference vr[], size_t nvr, fmi3UInt64 v[], size_t nv) {
  Model* m = (Model*)i;
  if (!check_values(m, vr, nvr, nv, "fmi3GetUInt64")) return fmi3Error;
  for (size_t a = 0; a < nvr; ++a) {
    if (vr[a] != VR_N) {
      error(m, "fmi3GetUInt64: not a UInt64 variable");
      return fmi3Error;
    }
    v[a] = m->n;
  }
  return fmi3OK;
}
EXPORT fmi3Status fmi3SetUInt64(fmi3Instance i, const fmi3ValueReference vr[], size_t nvr, const fmi3UInt64 v[],
                                size_t nv) {
  Model* m = (Model*)i;
  if (!check_values(m, vr, nvr, nv, "fmi3SetUInt64")) return fmi3Error;
  for (size_t a = 0; a < nvr; ++a) {
    if (vr[a] != VR_N || !m->configuring) {
      error(m, "fmi3SetUInt64: n is a structural parameter, set in Configuration Mode only");
      return fmi3Error;
    }
    if (v[a] < 1 || v[a] > MAXN) {
      error(m, "fmi3SetUInt64: n must be 1 ... 8");
      return fmi3Error;
    }
    m->n = v[a];
  }
  return fmi3OK;
}

/* Model exchange */
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
  if (n != m->n) {
    error(m, "fmi3SetContinuousStates: expected n states");
    return fmi3Error;
  }
  memcpy(m->x, x, n * sizeof(double));
  return fmi3OK;
}
EXPORT fmi3Status fmi3GetContinuousStates(fmi3Instance i, fmi3Float64 x[], size_t n) {
  Model* m = (Model*)i;
  if (n != m->n) {
    error(m, "fmi3GetContinuousStates: expected n states");
    return fmi3Error;
  }
  memcpy(x, m->x, n * sizeof(double));
  return fmi3OK;
}
EXPORT fmi3Status fmi3GetContinuousStateDerivatives(fmi3Instance i, fmi3Float64 dx[], size_t n) {
  Model* m = (Model*)i;
  if (n != m->n) {
    error(m, "fmi3GetContinuousStateDerivatives: expected n derivatives");
    return fmi3Error;
  }
  memcpy(dx, m->u, n * sizeof(double));
  return fmi3OK;
}
EXPORT fmi3Status fmi3GetEventIndicators(fmi3Instance i, fmi3Float64 z[], size_t n) {
  (void)i, (void)z;
  return n ? fmi3Error : fmi3OK;
}

/* Co-simulation */
EXPORT fmi3Status fmi3DoStep(fmi3Instance i, fmi3Float64 t, fmi3Float64 h, fmi3Boolean no, fmi3Boolean* event,
                             fmi3Boolean* term, fmi3Boolean* early, fmi3Float64* last) {
  Model* m = (Model*)i;
  (void)no;
  for (uint64_t a = 0; a < m->n; ++a) m->x[a] += m->u[a] * h;
  m->time = t + h;
  *event = *term = *early = false;
  *last = t + h;
  return fmi3OK;
}
EXPORT fmi3Status fmi3GetOutputDerivatives(fmi3Instance i, const fmi3ValueReference vr[], size_t nvr,
                                           const fmi3Int32 orders[], fmi3Float64 v[], size_t nv) {
  Model* m = (Model*)i;
  if (!check_values(m, vr, nvr, nv, "fmi3GetOutputDerivatives")) return fmi3Error;
  size_t at = 0;
  for (size_t a = 0; a < nvr; ++a) {
    if (orders[a] != 1 || (vr[a] != VR_Y && vr[a] != VR_X && vr[a] != VR_S)) {
      error(m, "fmi3GetOutputDerivatives: order 1 of y, x and s only");
      return fmi3Error;
    }
    for (size_t e = 0; e < size_of(m, vr[a]); ++e) {
      v[at++] = vr[a] == VR_Y ? 0.0 : vr[a] == VR_X ? m->u[e] : m->w * cos(m->w * m->time);
    }
  }
  return fmi3OK;
}
