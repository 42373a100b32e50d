/* SPDX-License-Identifier: MIT */
/*
 * sensor.h -- a stand-in for a native library with its own callback thread
 * (a sensor driver, an audio API).  It knows nothing about the GVL: it
 * calls the registered function from a thread it created, at a fixed rate.
 */
#ifndef SENSOR_H
#define SENSOR_H

#include <stdint.h>

typedef struct sensor sensor_t;

/* Called on the sensor's thread: the reading, the time the reading was due
 * (CLOCK_MONOTONIC ns) and the user's pointer. */
typedef void (*sensor_cb)(double value, uint64_t due_ns, void *user);

/* Start a sensor thread calling cb rate_hz times a second.  With realtime,
 * as drivers and audio libraries do, the thread asks for SCHED_FIFO
 * priority 1, so that the OS runs it at its tick even while other threads
 * keep every CPU busy; where that is not permitted (EPERM: no
 * CAP_SYS_NICE, RLIMIT_RTPRIO or real-time budget) it is an ordinary
 * thread.  Returns NULL and sets errno (EINVAL for a rate outside
 * 1..100000, or NULL cb). */
sensor_t *sensor_start(unsigned rate_hz, int realtime, sensor_cb cb, void *user);

/* 1 if the sensor's thread runs SCHED_FIFO, else 0. */
int sensor_realtime(const sensor_t *s);

/* Stop the thread and free the sensor.  The callback is not running and
 * will not run after this returns.  Returns the ticks skipped because the
 * thread woke or its callback returned after the next tick was due (0 for
 * a NULL s). */
unsigned long sensor_stop(sensor_t *s);

#endif /* SENSOR_H */
