/* A co-simulation FMU that reads an integer from resources/value.txt when
 * it is instantiated and outputs it as `value` (FMI 2.0 Integer, or with
 * RES_FMI3 an FMI 3.0 Int32): the resource location an importer hands over
 * (FMI 2.0: fmuResourceLocation, a file:// URI, percent-decoded here; FMI
 * 3.0: resourcePath, a directory path ending in a separator) must lead to
 * the unpacked resources/ folder. A file it cannot read fails the
 * instantiation with the path it tried. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef RES_FMI3
#include "tasks/fmu/fmi_api.h"
#define EXPORT __attribute__((visibility("default")))
#else
#define FMI2_OWN_TYPED
#include "tests/fmus/fmi2_common.h"
#endif

typedef struct {
  int value;
#ifdef RES_FMI3
  fmi3InstanceEnvironment env;
  fmi3LogMessageCallback log;
#else
  fmi2CallbackFunctions cb;
#endif
} Model;

#ifndef RES_FMI3
static int hex(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}
#endif

/* Reads the first integer of DIR/value.txt (DIR given with or without a
 * trailing '/'); 0 with `path` set to the file tried when it cannot. */
static int read_value(const char* dir, int* value, char* path, size_t size) {
  const size_t n = strlen(dir);
  snprintf(path, size, "%s%svalue.txt", dir, n > 0 && dir[n - 1] == '/' ? "" : "/");
  FILE* f = fopen(path, "r");
  if (!f) return 0;
  const int ok = fscanf(f, "%d", value) == 1;
  fclose(f);
  return ok;
}

#ifdef RES_FMI3

EXPORT const char* fmi3GetVersion(void) { return "3.0"; }
EXPORT fmi3Instance fmi3InstantiateCoSimulation(fmi3String name, fmi3String token, fmi3String res, fmi3Boolean vis,
                                                fmi3Boolean logging, fmi3Boolean eventMode, fmi3Boolean early,
                                                const fmi3ValueReference req[], size_t nreq,
                                                fmi3InstanceEnvironment env, fmi3LogMessageCallback log,
                                                fmi3IntermediateUpdateCallback upd) {
  (void)name, (void)vis, (void)logging, (void)eventMode, (void)early, (void)req, (void)nreq, (void)upd;
  char path[4096], message[4200];
  int value = 0;
  if (!token || strcmp(token, "{resource-3}") != 0) return NULL;
  if (!res || !read_value(res, &value, path, sizeof path)) {
    snprintf(message, sizeof message, "cannot read an integer from '%s'", res ? path : "(no resourcePath)");
    if (log) log(env, fmi3Error, "logStatusError", message);
    return NULL;
  }
  Model* m = (Model*)calloc(1, sizeof(Model));
  if (!m) return NULL;
  m->value = value;
  m->env = env;
  m->log = log;
  return m;
}
EXPORT void fmi3FreeInstance(fmi3Instance i) { free(i); }
EXPORT fmi3Status fmi3EnterInitializationMode(fmi3Instance i, fmi3Boolean td, fmi3Float64 tol, fmi3Float64 t0,
                                              fmi3Boolean sd, fmi3Float64 stop) {
  (void)i, (void)td, (void)tol, (void)t0, (void)sd, (void)stop;
  return fmi3OK;
}
EXPORT fmi3Status fmi3ExitInitializationMode(fmi3Instance i) {
  (void)i;
  return fmi3OK;
}
EXPORT fmi3Status fmi3Terminate(fmi3Instance i) {
  (void)i;
  return fmi3OK;
}
EXPORT fmi3Status fmi3Reset(fmi3Instance i) {
  (void)i;
  return fmi3OK;
}
EXPORT fmi3Status fmi3EnterEventMode(fmi3Instance i) {
  (void)i;
  return fmi3OK;
}
EXPORT fmi3Status fmi3UpdateDiscreteStates(fmi3Instance i, fmi3Boolean* need, fmi3Boolean* term, fmi3Boolean* nom,
                                           fmi3Boolean* values, fmi3Boolean* defined, fmi3Float64* next) {
  (void)i;
  *need = *term = *nom = *values = *defined = false;
  *next = 0.0;
  return fmi3OK;
}
EXPORT fmi3Status fmi3GetFloat64(fmi3Instance i, const fmi3ValueReference vr[], size_t n, fmi3Float64 v[], size_t nv) {
  (void)i, (void)vr, (void)v, (void)nv;
  return n ? fmi3Error : fmi3OK;
}
EXPORT fmi3Status fmi3SetFloat64(fmi3Instance i, const fmi3ValueReference vr[], size_t n, const fmi3Float64 v[],
                                 size_t nv) {
  (void)i, (void)vr, (void)v, (void)nv;
  return n ? fmi3Error : fmi3OK;
}
EXPORT fmi3Status fmi3GetInt32(fmi3Instance i, const fmi3ValueReference vr[], size_t n, fmi3Int32 v[], size_t nv) {
  if (nv != n) return fmi3Error;
  for (size_t k = 0; k < n; ++k) {
    if (vr[k] != 1) return fmi3Error;
    v[k] = ((Model*)i)->value;
  }
  return fmi3OK;
}
EXPORT fmi3Status fmi3SetInt32(fmi3Instance i, const fmi3ValueReference vr[], size_t n, const fmi3Int32 v[],
                               size_t nv) {
  (void)i, (void)vr, (void)v, (void)nv;
  return n ? fmi3Error : fmi3OK;
}
EXPORT fmi3Status fmi3DoStep(fmi3Instance i, fmi3Float64 t, fmi3Float64 h, fmi3Boolean no, fmi3Boolean* event,
                             fmi3Boolean* term, fmi3Boolean* early, fmi3Float64* last) {
  (void)i, (void)no;
  *event = *term = *early = false;
  *last = t + h;
  return fmi3OK;
}

#else

EXPORT fmi2Component fmi2Instantiate(fmi2String name, fmi2Type type, fmi2String guid, fmi2String res,
                                     const fmi2CallbackFunctions* cb, fmi2Boolean vis, fmi2Boolean log) {
  (void)vis, (void)log, (void)type;
  char dir[4096], path[4200];
  int value = 0;
  if (!cb || !guid || strcmp(guid, "{resource-2}") != 0) return NULL;
  /* file:///abs/path (no host), percent-encoded. */
  if (!res || strncmp(res, "file:///", 8) != 0) {
    cb->logger(cb->componentEnvironment, name, fmi2Error, "logStatusError", "not a file:/// URI: '%s'",
               res ? res : "(null)");
    return NULL;
  }
  size_t n = 0;
  for (const char* p = res + 7; *p && n + 1 < sizeof dir; ++p) {
    if (*p == '%' && hex(p[1]) >= 0 && hex(p[2]) >= 0) {
      dir[n++] = (char)(hex(p[1]) * 16 + hex(p[2]));
      p += 2;
    } else {
      dir[n++] = *p;
    }
  }
  dir[n] = '\0';
  if (!read_value(dir, &value, path, sizeof path)) {
    cb->logger(cb->componentEnvironment, name, fmi2Error, "logStatusError", "cannot read an integer from '%s'", path);
    return NULL;
  }
  Model* m = (Model*)cb->allocateMemory(1, sizeof(Model));
  if (!m) return NULL;
  m->cb = *cb;
  m->value = value;
  return m;
}
EXPORT void fmi2FreeInstance(fmi2Component c) { ((Model*)c)->cb.freeMemory(c); }
EXPORT fmi2Status fmi2SetupExperiment(fmi2Component c, fmi2Boolean a, fmi2Real b, fmi2Real t0, fmi2Boolean d,
                                      fmi2Real e) {
  (void)c, (void)a, (void)b, (void)t0, (void)d, (void)e;
  return fmi2OK;
}
EXPORT fmi2Status fmi2ExitInitializationMode(fmi2Component c) {
  (void)c;
  return fmi2OK;
}
EXPORT fmi2Status fmi2Reset(fmi2Component c) {
  (void)c;
  return fmi2OK;
}
EXPORT fmi2Status fmi2GetReal(fmi2Component c, const fmi2ValueReference vr[], size_t n, fmi2Real v[]) {
  (void)c, (void)vr, (void)v;
  return n ? fmi2Error : fmi2OK;
}
EXPORT fmi2Status fmi2SetReal(fmi2Component c, const fmi2ValueReference vr[], size_t n, const fmi2Real v[]) {
  (void)c, (void)vr, (void)v;
  return n ? fmi2Error : fmi2OK;
}
EXPORT fmi2Status fmi2GetInteger(fmi2Component c, const fmi2ValueReference vr[], size_t n, fmi2Integer v[]) {
  for (size_t i = 0; i < n; ++i) {
    if (vr[i] != 0) return fmi2Error;
    v[i] = ((Model*)c)->value;
  }
  return fmi2OK;
}
EXPORT fmi2Status fmi2SetInteger(fmi2Component c, const fmi2ValueReference vr[], size_t n, const fmi2Integer v[]) {
  (void)c, (void)vr, (void)v;
  return n ? fmi2Error : fmi2OK;
}
EXPORT fmi2Status fmi2GetBoolean(fmi2Component c, const fmi2ValueReference vr[], size_t n, fmi2Boolean v[]) {
  (void)c, (void)vr, (void)v;
  return n ? fmi2Error : fmi2OK;
}
EXPORT fmi2Status fmi2SetBoolean(fmi2Component c, const fmi2ValueReference vr[], size_t n, const fmi2Boolean v[]) {
  (void)c, (void)vr, (void)v;
  return n ? fmi2Error : fmi2OK;
}
EXPORT fmi2Status fmi2DoStep(fmi2Component c, fmi2Real t, fmi2Real h, fmi2Boolean no) {
  (void)c, (void)t, (void)h, (void)no;
  return fmi2OK;
}

#endif
