/* SPDX-License-Identifier: MIT */
/*
 * test_restart.c -- stop and restart the trace many times while threads
 * hand the GVL to each other.  An event whose clock was read before a stop
 * and that is recorded after the next start must not land in the new run:
 * it would be older than the run's origin (it used to be drawn at the
 * origin, with its length measured from its true start, so that a wait
 * overlapped the wake-up after it).  The checker rejects any GVL state that
 * starts at the origin without having been held before the trace.
 *
 * That window is a few instructions wide.  To hit it on every run, this
 * program defines clock_gettime itself (libgvl's clock reads bind to it,
 * as tests/faults' allocators do for malloc): a worker pauses just after
 * some of its clock reads, long enough for a stop and a start to pass.
 */
#include "ttrace.h"

#include <sys/syscall.h>

#define THREADS 6
#define RUNS 300

static gvl_t *g;
static atomic_uint stop_all, ready;

static _Thread_local unsigned tl_reads;  /* a worker's clock reads, +1 */

__attribute__((visibility("default")))   /* or it would not interpose */
int clock_gettime(clockid_t id, struct timespec *ts) {
  long rc = syscall(SYS_clock_gettime, id, ts);
  if (tl_reads && ++tl_reads % 4 == 0) {
    struct timespec pause = {0, 300 * 1000};
    nanosleep(&pause, NULL);
  }
  return (int)rc;
}

static void *nap(void *arg) { return arg; }

static void *worker(void *arg) {
  tl_reads = 1;
  gvl_thread_t *t = gvl_thread_attach(g, 0);
  CHECK(t != NULL);
  (void)arg;
  atomic_fetch_add(&ready, 1);
  for (unsigned i = 0; !atomic_load(&stop_all); i++) {
    CHECK_OK(gvl_acquire(t));
    CHECK_OK(gvl_yield(t));
    if (i % 4 == 0) CHECK(gvl_call_without(t, nap, t, NULL, NULL) == t);
    CHECK_OK(gvl_release(t));
  }
  CHECK_OK(gvl_thread_detach(t));
  return NULL;
}

int main(int argc, char **argv) {
  ttrace_env_t e = ttrace_args(argc, argv);
  int runs = RUNS / tgvl_slow() + 10;
  pthread_t th[THREADS];
  char **files = calloc((size_t)runs + 1, sizeof *files);
  CHECK(files != NULL);
  tgvl_watchdog(300);
  CHECK((g = gvl_create(NULL)) != NULL);
  for (uintptr_t i = 0; i < THREADS; i++) tgvl_spawn(&th[i], worker, (void *)i);
  tgvl_wait_ge(&ready, THREADS);
  for (int r = 0; r < runs; r++) {
    char name[32];
    gvl_trace_config_t c = {512, 0, 0};
    CHECK((files[r] = malloc(512)) != NULL);
    snprintf(name, sizeof name, "restart%03d", r);
    ttrace_path(&e, name, files[r], 512);
    CHECK_OK(gvl_trace_start(g, files[r], &c));
    tgvl_sleep_us(1000);   /* longer than a pause: most pauses span a restart */
    CHECK_OK(gvl_trace_stop(g));
  }
  atomic_store(&stop_all, 1);
  for (int i = 0; i < THREADS; i++) tgvl_join(th[i]);
  CHECK_OK(gvl_destroy(g));
  CHECK_EQ(ttrace_check_v(&e, files[0], (const char *const *)files + 1), 0);
  for (int r = 0; r < runs; r++) free(files[r]);
  free(files);
  return 0;
}
