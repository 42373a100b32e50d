/* SPDX-License-Identifier: MIT */
/*
 * test_handoff.c -- who handed the GVL to whom, as the JSON says it
 * (args from/handoff_to and the handoff arrows): right, or not said.
 *  - held_start: A holds the GVL and B, then C, queue before the trace
 *    starts; inside it A hands to B and B to C.  Both handoffs get their
 *    arrows and from/handoff_to, though B's and C's waits began before.
 *  - lost_giver: with max_threads 2, B records nothing; A hands to B and
 *    B to C.  C's hold must not say it came from A (the recorded thread
 *    that held before it), nor A's that it went to C: nothing is said.
 *  - v1: files of libgvl 0.1.0 (version 1) do not record the giver; a
 *    copy of a trace made as version 1 (the givers taken out) still gets
 *    every arrow and from/handoff_to when it lost nothing (A queues B and
 *    C inside the trace), and none when it did (lost_giver's copy).
 * The order of the handoffs is the queue's (one priority, no aging, no
 * interactivity): each waiter is known to be queued (its READY, seen by a
 * hook) before the next one queues or the holder lets go.
 */
#include "ttrace.h"

#include "gvl_trace_file.h"

static gvl_t *g;
static tgvl_log_t hook_log;
static atomic_uint step;

static void *take_once(void *name) {
  gvl_thread_t *t = gvl_thread_attach(g, 0);
  CHECK(t != NULL);
  CHECK_OK(gvl_trace_set_thread_name(name));
  if (!strcmp(name, "C") && gvl_trace_active(g)) {
    /* C records before B queues, so that it has a buffer and B none. */
    CHECK_OK(gvl_trace_instant(g, "t", "first", 0));
    atomic_store(&step, 1);
    tgvl_wait_ge(&step, 2);
  }
  CHECK_OK(gvl_acquire(t));
  CHECK_OK(gvl_release(t));
  CHECK_OK(gvl_thread_detach(t));
  return NULL;
}

static atomic_uint *readies(void) { return &hook_log.count[GVL_EV_READY]; }

static gvl_thread_t *make_gvl(void) {
  gvl_config_t c = tgvl_strict_config(TGVL_HOUR_NS, &hook_log);
  tgvl_log_reset(&hook_log);
  atomic_store(&step, 0);
  CHECK((g = gvl_create(&c)) != NULL);
  CHECK_OK(gvl_trace_set_thread_name("A"));
  gvl_thread_t *me = gvl_thread_attach(g, 0);
  CHECK(me != NULL);
  return me;
}

/* The end of each case: A lets go, B and C take their turns, the trace's
 * file is written, the GVL goes. */
static void end_gvl(gvl_thread_t *me, pthread_t b, pthread_t c) {
  CHECK_OK(gvl_release(me));
  tgvl_join(b);
  tgvl_join(c);
  CHECK_OK(gvl_trace_stop(g));
  CHECK_OK(gvl_thread_detach(me));
  CHECK_OK(gvl_destroy(g));
}

/* What the JSON must say of A -> B -> C when nothing was lost, and when
 * B recorded nothing (lost_giver). */
#define ABC_SAID "--holders", "A,B,C", "--flows", "2", "--from", "B:1:A", \
    "--from", "C:1:B", "--to", "A:1:B", "--to", "B:1:C", "--lost", "0"
#define AC_SAID "--holders", "A,C", "--flows", "0", "--from", "C:1:-", \
    "--to", "A:1:-"

static void held_start(const ttrace_env_t *e) {
  char path[512];
  pthread_t b, c;
  gvl_thread_t *me = make_gvl();
  ttrace_path(e, "held_start", path, sizeof path);
  CHECK_OK(gvl_acquire(me));
  tgvl_spawn(&b, take_once, "B");
  tgvl_wait_ge(readies(), 1);
  tgvl_spawn(&c, take_once, "C");
  tgvl_wait_ge(readies(), 2);
  CHECK_OK(gvl_trace_start(g, path, NULL));
  end_gvl(me, b, c);
  TTRACE_CHECK(e, path, ABC_SAID, "--handoff", "A:B", "--handoff", "B:C");
}

static void lost_giver(const ttrace_env_t *e) {
  char path[512];
  pthread_t b, c;
  gvl_trace_config_t two = {0, 2, 0};
  gvl_thread_t *me = make_gvl();
  ttrace_path(e, "lost_giver", path, sizeof path);
  CHECK_OK(gvl_trace_start(g, path, &two));
  CHECK_OK(gvl_acquire(me));             /* A records first */
  tgvl_spawn(&c, take_once, "C");
  tgvl_wait_ge(&step, 1);                /* then C */
  tgvl_spawn(&b, take_once, "B");
  tgvl_wait_ge(readies(), 1);            /* B queued, no buffer left */
  atomic_store(&step, 2);
  tgvl_wait_ge(readies(), 2);            /* C queued behind B */
  end_gvl(me, b, c);
  TTRACE_CHECK(e, path, AC_SAID);
}

/* Copy the trace at path to out as a version 1 file would have it: the
 * version, and RESUMED records that say nothing of a handoff. */
static void as_v1(const char *path, const char *out) {
  FILE *f = fopen(path, "rb");
  CHECK(f != NULL);
  static char buf[1 << 20];
  size_t n = fread(buf, 1, sizeof buf, f);
  CHECK(n > sizeof(gvl__tf_head_t) && n < sizeof buf);
  fclose(f);
  gvl__tf_head_t h;
  memcpy(&h, buf, sizeof h);
  CHECK_EQ(h.version, GVL__TF_VERSION);
  h.version = 1;
  memcpy(buf, &h, sizeof h);
  size_t at = sizeof h;
  for (uint32_t i = 0; i < h.nthreads; i++) {
    gvl__tf_thread_t th;
    CHECK(at + sizeof th <= n);
    memcpy(&th, buf + at, sizeof th);
    at += sizeof th;
    for (uint32_t k = 0; k < th.kept; k++, at += sizeof(gvl__tf_rec_t)) {
      gvl__tf_rec_t r;
      CHECK(at + sizeof r <= n);
      memcpy(&r, buf + at, sizeof r);
      if (r.kind == GVL_EV_RESUMED) {
        r.why = 0;
        r.arg = 0;
        memcpy(buf + at, &r, sizeof r);
      }
    }
  }
  f = fopen(out, "wb");
  CHECK(f != NULL);
  CHECK_EQ(fwrite(buf, 1, n, f), n);
  CHECK_OK(fclose(f));
}

static void v1(const ttrace_env_t *e) {
  char path[512], old[560];
  pthread_t b, c;
  gvl_thread_t *me = make_gvl();
  ttrace_path(e, "v1", path, sizeof path);
  CHECK_OK(gvl_trace_start(g, path, NULL));
  CHECK_OK(gvl_acquire(me));
  tgvl_spawn(&b, take_once, "B");
  tgvl_wait_ge(readies(), 1);
  tgvl_spawn(&c, take_once, "C");
  tgvl_wait_ge(&step, 1);                /* C recorded its instant */
  atomic_store(&step, 2);
  tgvl_wait_ge(readies(), 2);
  end_gvl(me, b, c);
  snprintf(old, sizeof old, "%s.v1.gvlt", path);
  as_v1(path, old);
  TTRACE_CHECK(e, old, ABC_SAID);
  snprintf(path, sizeof path, "%s/lost_giver.gvlt", e->dir);  /* kept */
  snprintf(old, sizeof old, "%s.v1.gvlt", path);
  as_v1(path, old);
  TTRACE_CHECK(e, old, AC_SAID);
}

int main(int argc, char **argv) {
  ttrace_env_t e = ttrace_args(argc, argv);
  tgvl_watchdog(120);
  held_start(&e);
  lost_giver(&e);
  v1(&e);
  return 0;
}
