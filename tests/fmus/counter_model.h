/* The staircase counter of count2.c and count3.c: time events at t = 1, 2,
 * 3, ... s; at each the counter steps by `inc` when `enable` is true, and
 * the state x integrates the counter, x' = counter. With inc = 1 and
 * enable true, counter = floor(t) and x = floor(t) (floor(t) - 1) / 2 +
 * floor(t) (t - floor(t)). With stop_at > 0 the model ends the simulation
 * itself at the event where the counter reaches stop_at (ended, ended_at):
 * a co-simulation step stops there. Include once, in the FMU's only source. */
#ifndef RTCOSIM_TEST_COUNTER_MODEL_H
#define RTCOSIM_TEST_COUNTER_MODEL_H

#include <math.h>
#include <stdint.h>

/* An event at `next` is due at t when t is within this of it. */
#define COUNTER_EPS 1e-9

typedef struct {
  double x;        /* the state: the counter's integral */
  int64_t counter; /* steps at each event */
  double next;     /* the next time event */
  int64_t stop_at; /* > 0: end the simulation when the counter reaches it */
  int ended;
  double ended_at;
} Counter;

static void counter_init(Counter* c) {
  c->x = 0.0;
  c->counter = 0;
  c->next = 1.0;
  c->ended = 0;
  c->ended_at = 0.0;
}

/* The event at t, if due: returns 1 when it was handled. */
static int counter_event(Counter* c, double t, int64_t inc, int enable) {
  if (t < c->next - COUNTER_EPS) return 0;
  if (enable) c->counter += inc;
  c->next = floor(t + 0.5) + 1.0;
  if (c->stop_at > 0 && c->counter >= c->stop_at && !c->ended) {
    c->ended = 1;
    c->ended_at = t;
  }
  return 1;
}

/* Co-simulation: from t over h, exactly, handling the events inside the
 * step where they fall and one at its end at the end; a step stops at the
 * event that ended the simulation. Returns the time reached. */
static double counter_step(Counter* c, double t, double h, int64_t inc, int enable) {
  const double end = t + h;
  while (t < end && !c->ended) {
    double to = c->next < end ? c->next : end;
    c->x += (double)c->counter * (to - t);
    t = to;
    if (!counter_event(c, t, inc, enable)) break;
  }
  if (c->ended) return c->ended_at;
  (void)counter_event(c, end, inc, enable);
  return c->ended ? c->ended_at : end;
}

#endif
