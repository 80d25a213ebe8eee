/* A staircase counter as an FMI 2.0 FMU (model exchange and co-simulation)
 * with time events every second (counter_model.h) and typed ports:
 *   Integer output counter, Real output x (the state, x' = counter),
 *   Integer input inc (the step, start 1) echoed as inc_out,
 *   Boolean input enable (start true) echoed as enable_out,
 *   Boolean output odd (counter is odd), Enumeration output mode
 *   (counter mod 3: zero, one, two).
 * Each type has its own value references, as FMI 2.0 allows: an importer
 * that sets an Integer with fmi2SetReal sets nothing (Error). Model
 * exchange: no event indicators, nextEventTime from every event iteration;
 * co-simulation: fmi2DoStep steps across the events itself. The Integer
 * parameter stop_at (0: never) ends the simulation at the event where the
 * counter reaches it: terminateSimulation from fmi2NewDiscreteStates, or
 * fmi2DoStep returns Discard with fmi2Terminated and fmi2LastSuccessfulTime
 * that event's time. The Real locals tolerance and stop_time show what
 * fmi2SetupExperiment was given (-1: undefined). */
#include <stdio.h>
#include <string.h>

#define FMI2_OWN_EVENTS
#define FMI2_OWN_TYPED
#include "tests/fmus/counter_model.h"
#include "tests/fmus/fmi2_common.h"

enum { R_X, R_DX, R_TOLERANCE, R_STOP_TIME, NR };
enum { I_COUNTER, I_INC, I_INC_OUT, I_MODE, I_STOP_AT, NI };
enum { B_ENABLE, B_ENABLE_OUT, B_ODD, NB };

typedef struct {
  Counter c;
  double time;
  double tolerance, stop_time; /* as fmi2SetupExperiment gave them; -1: undefined */
  int inc;
  int enable;
  fmi2CallbackFunctions cb;
  fmi2String name;
} Model;

static void defaults(Model* m) {
  counter_init(&m->c);
  m->c.stop_at = 0;
  m->time = 0.0;
  m->inc = 1;
  m->enable = 1;
}

static fmi2Status bad(Model* m, const char* what) {
  m->cb.logger(m->cb.componentEnvironment, m->name, fmi2Error, "logStatusError", "%s", what);
  return fmi2Error;
}

EXPORT fmi2Component fmi2Instantiate(fmi2String name, fmi2Type type, fmi2String guid, fmi2String res,
                                     const fmi2CallbackFunctions* cb, fmi2Boolean vis, fmi2Boolean log) {
  (void)res, (void)vis, (void)log, (void)type;
  if (!cb) return NULL;
  if (!guid || strcmp(guid, "{count-2}") != 0) {
    cb->logger(cb->componentEnvironment, name, fmi2Error, "logStatusError", "wrong GUID");
    return NULL;
  }
  Model* m = (Model*)cb->allocateMemory(1, sizeof(Model));
  if (!m) return NULL;
  m->cb = *cb;
  m->name = "count2";
  defaults(m);
  return m;
}
EXPORT void fmi2FreeInstance(fmi2Component c) { ((Model*)c)->cb.freeMemory(c); }
EXPORT fmi2Status fmi2SetupExperiment(fmi2Component c, fmi2Boolean a, fmi2Real b, fmi2Real t0, fmi2Boolean d,
                                      fmi2Real e) {
  Model* m = (Model*)c;
  m->time = t0;
  m->tolerance = a ? b : -1.0;
  m->stop_time = d ? e : -1.0;
  return fmi2OK;
}
EXPORT fmi2Status fmi2ExitInitializationMode(fmi2Component c) {
  counter_init(&((Model*)c)->c);
  return fmi2OK;
}
EXPORT fmi2Status fmi2GetBooleanStatus(fmi2Component c, const fmi2StatusKind s, fmi2Boolean* value) {
  Model* m = (Model*)c;
  if (s != fmi2Terminated) return fmi2Discard;
  *value = m->c.ended;
  return fmi2OK;
}
EXPORT fmi2Status fmi2GetRealStatus(fmi2Component c, const fmi2StatusKind s, fmi2Real* value) {
  Model* m = (Model*)c;
  if (s != fmi2LastSuccessfulTime) return fmi2Discard;
  *value = m->time;
  return fmi2OK;
}
EXPORT fmi2Status fmi2Reset(fmi2Component c) {
  defaults((Model*)c);
  return fmi2OK;
}
EXPORT fmi2Status fmi2GetReal(fmi2Component c, const fmi2ValueReference vr[], size_t n, fmi2Real v[]) {
  Model* m = (Model*)c;
  for (size_t i = 0; i < n; ++i) {
    if (vr[i] == R_X) {
      v[i] = m->c.x;
    } else if (vr[i] == R_DX) {
      v[i] = (double)m->c.counter;
    } else if (vr[i] == R_TOLERANCE) {
      v[i] = m->tolerance;
    } else if (vr[i] == R_STOP_TIME) {
      v[i] = m->stop_time;
    } else {
      return bad(m, "fmi2GetReal: not a Real");
    }
  }
  return fmi2OK;
}
EXPORT fmi2Status fmi2SetReal(fmi2Component c, const fmi2ValueReference vr[], size_t n, const fmi2Real v[]) {
  (void)vr, (void)v;
  return n == 0 ? fmi2OK : bad((Model*)c, "fmi2SetReal: no Real can be set");
}
EXPORT fmi2Status fmi2GetInteger(fmi2Component c, const fmi2ValueReference vr[], size_t n, fmi2Integer v[]) {
  Model* m = (Model*)c;
  for (size_t i = 0; i < n; ++i) {
    switch (vr[i]) {
      case I_COUNTER:
        v[i] = (int)m->c.counter;
        break;
      case I_INC:
      case I_INC_OUT:
        v[i] = m->inc;
        break;
      case I_MODE:
        v[i] = 1 + (int)(((m->c.counter % 3) + 3) % 3);
        break;
      case I_STOP_AT:
        v[i] = (int)m->c.stop_at;
        break;
      default:
        return bad(m, "fmi2GetInteger: not an Integer");
    }
  }
  return fmi2OK;
}
EXPORT fmi2Status fmi2SetInteger(fmi2Component c, const fmi2ValueReference vr[], size_t n, const fmi2Integer v[]) {
  Model* m = (Model*)c;
  for (size_t i = 0; i < n; ++i) {
    if (vr[i] == I_STOP_AT) {
      m->c.stop_at = v[i];
      continue;
    }
    if (vr[i] != I_INC) return bad(m, "fmi2SetInteger: only inc and stop_at can be set");
    m->inc = v[i];
  }
  return fmi2OK;
}
EXPORT fmi2Status fmi2GetBoolean(fmi2Component c, const fmi2ValueReference vr[], size_t n, fmi2Boolean v[]) {
  Model* m = (Model*)c;
  for (size_t i = 0; i < n; ++i) {
    switch (vr[i]) {
      case B_ENABLE:
      case B_ENABLE_OUT:
        v[i] = m->enable;
        break;
      case B_ODD:
        v[i] = (m->c.counter % 2) != 0;
        break;
      default:
        return bad(m, "fmi2GetBoolean: not a Boolean");
    }
  }
  return fmi2OK;
}
EXPORT fmi2Status fmi2SetBoolean(fmi2Component c, const fmi2ValueReference vr[], size_t n, const fmi2Boolean v[]) {
  Model* m = (Model*)c;
  for (size_t i = 0; i < n; ++i) {
    if (vr[i] != B_ENABLE) return bad(m, "fmi2SetBoolean: only enable can be set");
    /* FMI 2.0: fmi2True is 1, fmi2False 0. */
    if (v[i] != 0 && v[i] != 1) return bad(m, "fmi2SetBoolean: neither fmi2True nor fmi2False");
    m->enable = v[i];
  }
  return fmi2OK;
}
EXPORT fmi2Status fmi2NewDiscreteStates(fmi2Component c, fmi2EventInfo* e) {
  Model* m = (Model*)c;
  memset(e, 0, sizeof *e);
  (void)counter_event(&m->c, m->time, m->inc, m->enable);
  e->nextEventTimeDefined = 1;
  e->nextEventTime = m->c.next;
  e->terminateSimulation = m->c.ended;
  return fmi2OK;
}
EXPORT fmi2Status fmi2GetEventIndicators(fmi2Component c, fmi2Real z[], size_t n) {
  (void)z;
  return n == 0 ? fmi2OK : bad((Model*)c, "no event indicators");
}
EXPORT fmi2Status fmi2SetTime(fmi2Component c, fmi2Real t) {
  ((Model*)c)->time = t;
  return fmi2OK;
}
EXPORT fmi2Status fmi2SetContinuousStates(fmi2Component c, const fmi2Real x[], size_t n) {
  if (n != 1) return fmi2Error;
  ((Model*)c)->c.x = x[0];
  return fmi2OK;
}
EXPORT fmi2Status fmi2GetContinuousStates(fmi2Component c, fmi2Real x[], size_t n) {
  if (n != 1) return fmi2Error;
  x[0] = ((Model*)c)->c.x;
  return fmi2OK;
}
EXPORT fmi2Status fmi2GetDerivatives(fmi2Component c, fmi2Real dx[], size_t n) {
  if (n != 1) return fmi2Error;
  dx[0] = (double)((Model*)c)->c.counter;
  return fmi2OK;
}
EXPORT fmi2Status fmi2DoStep(fmi2Component c, fmi2Real t, fmi2Real h, fmi2Boolean no) {
  Model* m = (Model*)c;
  (void)no;
  if (m->c.ended) return bad(m, "fmi2DoStep after the simulation ended");
  m->time = counter_step(&m->c, t, h, m->inc, m->enable);
  return m->c.ended ? fmi2Discard : fmi2OK;
}
