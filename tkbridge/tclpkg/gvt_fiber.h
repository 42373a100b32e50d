/*
 * gvt_fiber.h -- make the calling thread the loop thread of a no_thread
 * evloop without blocking in evl_run().
 *
 * evloop lets only the thread inside evl_run() call evl_step(), and
 * evl_run() returns only after a stop.  A host whose own event loop waits
 * (here Tcl's) needs the loop-thread role while it goes on with its own
 * work.  gvt_fiber runs evl_run() on a small private stack of the SAME
 * thread: its driver switches straight back to the caller's stack (parked),
 * and gvt_fiber_leave() switches back in after evl_stop() so that the driver
 * returns and evl_run() does the shutdown.  Only public evloop calls are
 * used; see /work/notes/evloop-bugs.md ("tclpkg needs") for the evl_attach
 * call that would replace this file.
 *
 * Usage (all on one thread):
 *   gvt_fiber_t *f = gvt_fiber_new();
 *   evl_config_t ec = {.no_thread = 1, .driver = gvt_fiber_driver,
 *                      .driver_arg = f};
 *   evl_t *l = evl_start(g, &ec);
 *   gvt_fiber_enter(f, l);      // now evl_step(l, 0) works on this thread
 *   ...
 *   evl_stop(l); gvt_fiber_leave(f); evl_destroy(l); gvt_fiber_free(f);
 */
#ifndef GVT_FIBER_H
#define GVT_FIBER_H

#include "evloop.h"

typedef struct gvt_fiber gvt_fiber_t;

/* NULL on allocation failure (errno set). */
gvt_fiber_t *gvt_fiber_new(void);
/* The evloop driver to configure (driver_arg = the fiber). */
void gvt_fiber_driver(evl_t *l, void *arg);
/* Run evl_run(l) until its driver parks.  0, or evl_run's error. */
int gvt_fiber_enter(gvt_fiber_t *f, evl_t *l);
/* After evl_stop(l) on this thread: let evl_run finish.  0 or EINVAL. */
int gvt_fiber_leave(gvt_fiber_t *f);
/* Free a fiber that is not entered (or has left). */
void gvt_fiber_free(gvt_fiber_t *f);

#endif /* GVT_FIBER_H */
