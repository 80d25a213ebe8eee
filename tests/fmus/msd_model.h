/* The mass-spring-damper both test FMUs (msd2.c for FMI 2.0, msd3.c for
 * FMI 3.0) compute: m x'' + c x' + k x = F. */
#ifndef RTCOSIM_TEST_MSD_MODEL_H
#define RTCOSIM_TEST_MSD_MODEL_H

#include <stddef.h>
#include <string.h>

typedef struct {
  double m, k, c, F;
} MsdParams;

static void msd_derivs(const MsdParams* p, double x, double v, double* dx, double* dv) {
  *dx = v;
  *dv = (p->F - p->k * x - p->c * v) / p->m;
}

/* Co-simulation: RK4 at 1/20 of the communication step, far below what
 * the tests resolve. */
static void msd_advance(const MsdParams* p, double* xp, double* vp, double h) {
  const int n = 20;
  const double dt = h / n;
  double x = *xp, v = *vp;
  for (int i = 0; i < n; ++i) {
    double k1x, k1v, k2x, k2v, k3x, k3v, k4x, k4v;
    msd_derivs(p, x, v, &k1x, &k1v);
    msd_derivs(p, x + 0.5 * dt * k1x, v + 0.5 * dt * k1v, &k2x, &k2v);
    msd_derivs(p, x + 0.5 * dt * k2x, v + 0.5 * dt * k2v, &k3x, &k3v);
    msd_derivs(p, x + dt * k3x, v + dt * k3v, &k4x, &k4v);
    x += dt / 6 * (k1x + 2 * k2x + 2 * k3x + k4x);
    v += dt / 6 * (k1v + 2 * k2v + 2 * k3v + k4v);
  }
  *xp = x;
  *vp = v;
}

/* A serialized state of the test FMUs: a 4-byte magic ("MSD2", "MSD3"),
 * the n reals, the time; whatever else the instance holds (callbacks,
 * name) stays the receiving instance's. */
static size_t msd_serialized_size(size_t n) { return 4 + (n + 1) * sizeof(double); }

static void msd_serialize(const char* magic, const double* r, size_t n, double time, unsigned char* out) {
  memcpy(out, magic, 4);
  memcpy(out + 4, r, n * sizeof(double));
  memcpy(out + 4 + n * sizeof(double), &time, sizeof(double));
}

/* 0 when `in` is not a state of this FMU (size or magic). */
static int msd_deserialize(const char* magic, const unsigned char* in, size_t size, double* r, size_t n, double* time) {
  if (size != msd_serialized_size(n) || memcmp(in, magic, 4) != 0) return 0;
  memcpy(r, in + 4, n * sizeof(double));
  memcpy(time, in + 4 + n * sizeof(double), sizeof(double));
  return 1;
}

#endif
