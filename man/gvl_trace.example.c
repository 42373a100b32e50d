/* SPDX-License-Identifier: MIT */
/* Trace two threads taking turns on the GVL, with spans, a counter and an
 * instant of the host's own; then turn the raw file into JSON.
 * cc ex.c $(pkg-config --cflags --libs gvl) && ./a.out && gvl-trace ex.gvlt */
#include <gvl_trace.h>
#include <pthread.h>
#include <stdio.h>

static gvl_t *gvl;

static void *worker(void *name) {
  gvl_thread_t *self = gvl_thread_attach(gvl, GVL_PRIO_NORMAL);
  if (self == NULL) return NULL;
  gvl_trace_set_thread_name(name);              /* the thread's track */
  gvl_acquire(self);
  for (int i = 1; i <= 100; i++) {
    gvl_trace_begin(gvl, "host", "step");       /* a span of the host's */
    gvl_yield(self);                            /* Thread.pass */
    gvl_trace_end(gvl, "host", "step");
    gvl_trace_counter(gvl, "steps", i);
  }
  gvl_release(self);
  gvl_thread_detach(self);
  return NULL;
}

int main(void) {
  gvl_trace_stats_t st;
  pthread_t a, b;
  gvl = gvl_create(NULL);
  if (gvl == NULL || gvl_trace_start(gvl, "ex.gvlt", NULL) != 0) return 1;
  pthread_create(&a, NULL, worker, "first");
  pthread_create(&b, NULL, worker, "second");
  pthread_join(a, NULL);
  pthread_join(b, NULL);
  gvl_trace_instant(gvl, "host", "joined", 2);
  if (gvl_trace_stop(gvl) != 0 || gvl_trace_stats(gvl, &st) != 0) return 1;
  printf("ex.gvlt: %llu events from %u threads, %llu lost\n",
         (unsigned long long)st.recorded, st.threads, (unsigned long long)st.lost);
  gvl_destroy(gvl);
  return st.recorded > 0 && st.lost == 0 ? 0 : 1;
}
