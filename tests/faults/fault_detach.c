/* SPDX-License-Identifier: MIT */
/*
 * A callback that runs without the GVL (EVL_F_NOGVL) detaches the loop
 * thread's own GVL handle.  gvl_thread_detach accepts it (the handle is not
 * holding, and it is the calling thread's), so the loop is left with a
 * freed handle.  Misuse must get an error or be survived, never a crash:
 * the loop must refuse the detach or notice it (the thread's handle is no
 * longer gvl_thread_self) and carry on, report it through on_error, run
 * the next callbacks and shut down cleanly.
 */
#include "flt.h"

static atomic_long detached, after_ran, reports;
static atomic_int detach_rc = -1;

static void on_error(evl_t *l, int err, const char *what, void *arg) {
  (void)l;
  (void)err;
  (void)what;
  (void)arg;
  atomic_fetch_add(&reports, 1);
}

static void detach_cb(evl_t *l, void *arg, int status) {
  (void)arg;
  CHECK_EQ(status, 0);
  atomic_store(&detach_rc, gvl_thread_detach(evl_gvl_thread(l)));
  atomic_store(&detached, 1);
}

static void after_cb(evl_t *l, void *arg, int status) {
  (void)arg;
  CHECK_EQ(status, 0);
  CHECK(flt_holds(l));
  atomic_store(&after_ran, 1);
}

int main(void) {
  gvl_t *g;
  evl_t *l;
  evl_config_t cfg;
  flt_watchdog(60);
  memset(&cfg, 0, sizeof cfg);
  cfg.on_error = on_error;
  g = flt_gvl();
  l = evl_start(g, &cfg);
  CHECK(l != NULL);
  CHECK_OK(evl_post_flags(l, detach_cb, NULL, EVL_F_NOGVL, NULL));
  flt_wait_ge(&detached, 1);
  CHECK_OK(evl_post(l, after_cb, NULL, NULL));
  flt_wait_ge(&after_ran, 1);
  /* Either the detach was refused, or it was reported. */
  if (atomic_load(&detach_rc) == 0) CHECK_GE(atomic_load(&reports), 1);
  CHECK_OK(evl_destroy(l));
  CHECK_OK(gvl_destroy(g));
  printf("fault_detach: ok (detach returned %d)\n", atomic_load(&detach_rc));
  return 0;
}
