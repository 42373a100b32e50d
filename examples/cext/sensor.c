/* SPDX-License-Identifier: MIT */
/* sensor.c -- see sensor.h.  Ticks on absolute deadlines so that a slow
 * callback does not shift the schedule (late ticks are skipped). */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L  /* clock_gettime, nanosleep, strdup in -std=c11 */
#endif
#include "sensor.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

struct sensor {
  unsigned rate_hz;
  sensor_cb cb;
  void *user;
  atomic_int stop;
  pthread_t tid;
  int realtime;           /* the thread runs SCHED_FIFO */
  unsigned long skipped;  /* the sensor thread's; read after the join */
};

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void sleep_until(uint64_t abs_ns) {
  struct timespec ts = {(time_t)(abs_ns / 1000000000u), (long)(abs_ns % 1000000000u)};
  while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR) {
  }
}

static void *sensor_main(void *arg) {
  sensor_t *s = arg;
  uint64_t period = 1000000000u / s->rate_hz, due = now_ns() + period;
  for (unsigned long n = 0; !atomic_load(&s->stop); n++) {
    sleep_until(due);
    double value = sin((double)n * 0.01) * 20.0 + 21.5; /* degrees, say */
    s->cb(value, due, s->user);
    due += period;
    uint64_t now = now_ns();
    if (due < now) {  /* skip the ticks missed, keeping the schedule */
      uint64_t missed = (now - due) / period + 1;
      s->skipped += missed;
      due += missed * period;
    }
  }
  return NULL;
}

sensor_t *sensor_start(unsigned rate_hz, int realtime, sensor_cb cb, void *user) {
  if (cb == NULL || rate_hz < 1 || rate_hz > 100000) {
    errno = EINVAL;
    return NULL;
  }
  sensor_t *s = calloc(1, sizeof *s);
  if (s == NULL) return NULL;
  s->rate_hz = rate_hz;
  s->cb = cb;
  s->user = user;
  int err = EPERM;
  if (realtime) {
    pthread_attr_t attr;
    struct sched_param sp = {.sched_priority = 1};
    if (pthread_attr_init(&attr) == 0) {
      if (pthread_attr_setinheritsched(&attr, PTHREAD_EXPLICIT_SCHED) == 0 &&
          pthread_attr_setschedpolicy(&attr, SCHED_FIFO) == 0 &&
          pthread_attr_setschedparam(&attr, &sp) == 0)
        err = pthread_create(&s->tid, &attr, sensor_main, s);
      pthread_attr_destroy(&attr);
    }
    s->realtime = err == 0;
  }
  if (err == EPERM) err = pthread_create(&s->tid, NULL, sensor_main, s);
  if (err) {
    free(s);
    errno = err;
    return NULL;
  }
  return s;
}

int sensor_realtime(const sensor_t *s) { return s != NULL && s->realtime; }

unsigned long sensor_stop(sensor_t *s) {
  if (s == NULL) return 0;
  atomic_store(&s->stop, 1);
  pthread_join(s->tid, NULL);
  unsigned long skipped = s->skipped;
  free(s);
  return skipped;
}
