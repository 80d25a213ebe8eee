/*
 * What the FMI 3.0 test FMUs share (msd3.c, count3.c, vec3.c, bball3.c). FMI3_INSTANTIATION(TOKEN)
 * defines fmi3GetVersion, fmi3InstantiateModelExchange,
 * fmi3InstantiateCoSimulation and fmi3FreeInstance for an FMU whose instance
 * is a `Model` with `env` and `log` members and a `defaults(Model*)` that
 * sets its start state: a wrong instantiation token is refused through the
 * logger. FMI3_NOTHING_TO_DO(fn) defines an entry point that only says OK.
 */
#ifndef RTCOSIM_TEST_FMI3_COMMON_H
#define RTCOSIM_TEST_FMI3_COMMON_H

#include <stdlib.h>
#include <string.h>

#include "tasks/fmu/fmi_api.h"

#ifndef EXPORT
#define EXPORT __attribute__((visibility("default")))
#endif
/* 1 where co-simulation's event mode is refused (the FMU handles its events inside fmi3DoStep). */
#ifndef FMI3_REFUSES_EVENT_MODE
#define FMI3_REFUSES_EVENT_MODE 0
#endif

#define FMI3_NOTHING_TO_DO(fn)           \
  EXPORT fmi3Status fn(fmi3Instance i) { \
    (void)i;                             \
    return fmi3OK;                       \
  }

#define FMI3_INSTANTIATION(TOKEN)                                                                                      \
  static fmi3Instance instantiate(fmi3String token, fmi3InstanceEnvironment env, fmi3LogMessageCallback log) {         \
    if (!token || strcmp(token, TOKEN) != 0) {                                                                         \
      if (log) log(env, fmi3Error, "logStatusError", "instantiationToken does not match this binary's " TOKEN);        \
      return NULL;                                                                                                     \
    }                                                                                                                  \
    Model* m = (Model*)calloc(1, sizeof(Model));                                                                       \
    if (!m) return NULL;                                                                                               \
    m->env = env;                                                                                                      \
    m->log = log;                                                                                                      \
    defaults(m);                                                                                                       \
    return m;                                                                                                          \
  }                                                                                                                    \
  EXPORT const char* fmi3GetVersion(void) { return "3.0"; }                                                            \
  EXPORT fmi3Instance fmi3InstantiateModelExchange(fmi3String name, fmi3String token, fmi3String res, fmi3Boolean vis, \
                                                   fmi3Boolean logging, fmi3InstanceEnvironment env,                   \
                                                   fmi3LogMessageCallback log) {                                       \
    (void)name, (void)res, (void)vis, (void)logging;                                                                   \
    return instantiate(token, env, log);                                                                               \
  }                                                                                                                    \
  EXPORT fmi3Instance fmi3InstantiateCoSimulation(                                                                     \
      fmi3String name, fmi3String token, fmi3String res, fmi3Boolean vis, fmi3Boolean logging, fmi3Boolean eventMode,  \
      fmi3Boolean early, const fmi3ValueReference req[], size_t nreq, fmi3InstanceEnvironment env,                     \
      fmi3LogMessageCallback log, fmi3IntermediateUpdateCallback upd) {                                                \
    (void)name, (void)res, (void)vis, (void)logging, (void)early, (void)req, (void)nreq, (void)upd;                    \
    if (FMI3_REFUSES_EVENT_MODE && eventMode) return NULL;                                                             \
    return instantiate(token, env, log);                                                                               \
  }                                                                                                                    \
  EXPORT void fmi3FreeInstance(fmi3Instance i) { free(i); }

#endif
