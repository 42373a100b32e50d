/* SPDX-License-Identifier: MIT */
/*
 * A watched descriptor closed, and its number reused, while its event waits
 * for dispatch.
 *
 * The event is made to wait: this thread holds the GVL, so the dispatcher
 * sits in gvl_acquire_prio with the tick queued.  A GVL hook tells when the
 * loop thread has started waiting (READY on its handle), so no sleep decides
 * the interleaving.
 *   A. cancel, close, reuse the number for a new pipe, watch it again: the
 *      old watch ends with ECANCELED and never sees a tick for the new file;
 *      the new watch works.
 *   B. close and reuse WITHOUT cancelling (a host bug): a second watch of the
 *      number is refused (EEXIST), the old watch still ends with exactly one
 *      last call, nothing crashes, the number can be watched again after.
 *   C. the fd is closed after evl_fd_watch accepted it but before the loop
 *      thread started the watch: the last call carries the error (EBADF).
 *   D. 300 rounds of watch / cancel / close / reuse with a writer running.
 */
#include <fcntl.h>

#include "flt.h"

static gvl_thread_t *_Atomic loop_t;
static atomic_long loop_ready;

static void hook(void *arg, gvl_thread_t *t, gvl_event_t ev, uint64_t ns) {
  (void)arg;
  (void)ns;
  if (ev == GVL_EV_READY && t != NULL && t == atomic_load(&loop_t))
    atomic_fetch_add(&loop_ready, 1);
}

static atomic_long got_loop;
static void grab_loop_cb(evl_t *l, void *arg, int status) {
  (void)arg;
  CHECK_EQ(status, 0);
  atomic_store(&loop_t, evl_gvl_thread(l));
  atomic_store(&got_loop, 1);
}

typedef struct {
  atomic_long ticks, last, cancelled, errs, calls_after_last;
  atomic_int last_status;
  int drain_fd;      /* read one byte per tick when >= 0 */
} watch_t;

static void watch_cb(evl_t *l, void *arg, int status, unsigned ev) {
  watch_t *w = arg;
  CHECK(evl_in_loop_thread(l));
  if (atomic_load(&w->last) > 0) atomic_fetch_add(&w->calls_after_last, 1);
  if (status == 0) {
    CHECK(ev & EVL_READABLE);
    atomic_fetch_add(&w->ticks, 1);
    if (w->drain_fd >= 0) {
      char c;
      ssize_t r = read(w->drain_fd, &c, 1);
      (void)r;
    }
    return;
  }
  CHECK_EQ(ev, 0);
  atomic_store(&w->last_status, status);
  if (status == ECANCELED) atomic_fetch_add(&w->cancelled, 1);
  else atomic_fetch_add(&w->errs, 1);
  atomic_fetch_add(&w->last, 1);
}

static void watch_init(watch_t *w, int drain_fd) {
  memset(w, 0, sizeof *w);
  w->drain_fd = drain_fd;
}

/* Hold the GVL and wait until the dispatcher queues for it: by then the
 * loop has polled the fd and the tick waits in the dispatch queue. */
static void hold_until_loop_waits(gvl_thread_t *me) {
  CHECK_OK(gvl_acquire(me));
}

/* Make a pipe whose read end has number want (want must be free now). */
static void pipe_at(int want, int wfd_out[1]) {
  int p[2];
  CHECK_OK(pipe(p));
  if (p[0] != want) {
    CHECK_EQ(dup2(p[0], want), want);
    close(p[0]);
  }
  wfd_out[0] = p[1];
}

static void scenario_a(evl_t *l, gvl_thread_t *me) {
  int a[2], bw, num;
  long ready0;
  watch_t oldw, neww;
  evl_id_t old_id, new_id;
  CHECK_OK(pipe(a));
  num = a[0];
  watch_init(&oldw, -1);
  watch_init(&neww, -1);
  CHECK_EQ(write(a[1], "a", 1), 1);
  hold_until_loop_waits(me);
  ready0 = atomic_load(&loop_ready);
  CHECK_OK(evl_fd_watch(l, num, EVL_READABLE, 0, watch_cb, &oldw, &old_id));
  flt_wait_ge(&loop_ready, ready0 + 1);   /* tick queued, loop waiting */
  CHECK_OK(evl_cancel(l, old_id));
  CHECK_EQ(evl_cancel(l, old_id), EVL_ENOREG);
  close(a[0]);
  close(a[1]);
  pipe_at(num, &bw);
  CHECK_EQ(write(bw, "b", 1), 1);
  neww.drain_fd = num;
  CHECK_OK(evl_fd_watch(l, num, EVL_READABLE, 0, watch_cb, &neww, &new_id));
  CHECK_OK(gvl_release(me));
  flt_wait_ge(&oldw.last, 1);
  flt_wait_ge(&neww.ticks, 1);
  CHECK_OK(evl_cancel(l, new_id));
  flt_wait_ge(&neww.last, 1);
  /* The old watch never saw a tick after its cancel returned. */
  CHECK_EQ(atomic_load(&oldw.ticks), 0);
  CHECK_EQ(atomic_load(&oldw.cancelled), 1);
  CHECK_EQ(atomic_load(&oldw.errs), 0);
  CHECK_EQ(atomic_load(&neww.cancelled), 1);
  close(num);
  close(bw);
}

static void scenario_b(evl_t *l, gvl_thread_t *me) {
  int a[2], bw, num;
  long ready0;
  watch_t oldw, again;
  evl_id_t old_id, again_id;
  CHECK_OK(pipe(a));
  num = a[0];
  watch_init(&oldw, -1);
  watch_init(&again, -1);
  CHECK_EQ(write(a[1], "a", 1), 1);
  hold_until_loop_waits(me);
  ready0 = atomic_load(&loop_ready);
  CHECK_OK(evl_fd_watch(l, num, EVL_READABLE, 0, watch_cb, &oldw, &old_id));
  flt_wait_ge(&loop_ready, ready0 + 1);
  /* Host bug: close and reuse without cancelling. */
  close(a[0]);
  close(a[1]);
  pipe_at(num, &bw);
  CHECK_EQ(write(bw, "b", 1), 1);
  CHECK_EQ(evl_fd_watch(l, num, EVL_READABLE, 0, watch_cb, &again, NULL),
           EEXIST);
  CHECK_OK(gvl_release(me));
  flt_wait_ge(&oldw.ticks, 1);            /* the queued tick is delivered */
  CHECK_OK(evl_cancel(l, old_id));
  flt_wait_ge(&oldw.last, 1);
  CHECK_EQ(atomic_load(&oldw.cancelled) + atomic_load(&oldw.errs), 1);
  /* Watching the number again works and sees the new pipe's data. */
  again.drain_fd = num;
  CHECK_OK(evl_fd_watch(l, num, EVL_READABLE, 0, watch_cb, &again,
                        &again_id));
  flt_wait_ge(&again.ticks, 1);
  CHECK_OK(evl_cancel(l, again_id));
  flt_wait_ge(&again.last, 1);
  CHECK_EQ(atomic_load(&again.cancelled), 1);
  CHECK_EQ(atomic_load(&oldw.calls_after_last), 0);
  CHECK_EQ(atomic_load(&again.calls_after_last), 0);
  close(num);
  close(bw);
}

/* A NOGVL callback that parks the loop thread until released. */
static atomic_long gate_in, gate_go;
static void gate_cb(evl_t *l, void *arg, int status) {
  (void)l;
  (void)arg;
  CHECK_EQ(status, 0);
  atomic_store(&gate_in, 1);
  flt_wait_ge(&gate_go, 1);
}

static void scenario_c(evl_t *l) {
  int a[2], f;
  watch_t w;
  watch_init(&w, -1);
  CHECK_OK(pipe(a));
  atomic_store(&gate_in, 0);
  atomic_store(&gate_go, 0);
  CHECK_OK(evl_post_flags(l, gate_cb, NULL, EVL_F_NOGVL, NULL));
  flt_wait_ge(&gate_in, 1);
  CHECK_OK(evl_fd_watch(l, a[0], EVL_READABLE, 0, watch_cb, &w, NULL));
  close(a[0]);
  atomic_store(&gate_go, 1);
  flt_wait_ge(&w.last, 1);
  CHECK_EQ(atomic_load(&w.errs), 1);
  CHECK_EQ(atomic_load(&w.last_status), EBADF);
  CHECK_EQ(atomic_load(&w.ticks), 0);
  close(a[1]);
  /* Synchronous refusals. */
  CHECK_EQ(evl_fd_watch(l, a[0], EVL_READABLE, 0, watch_cb, &w, NULL), EBADF);
  f = open("/proc/self/status", O_RDONLY);
  CHECK(f >= 0);
  CHECK_EQ(evl_fd_watch(l, f, EVL_READABLE, 0, watch_cb, &w, NULL), EVL_ENOTPOLL);
  close(f);
}

/* The writer uses the write end only under mu, so that this thread never
 * closes it in the middle of a write (a test race, not the library's). */
typedef struct {
  pthread_mutex_t mu;
  int wfd;                 /* mu */
  atomic_long stop, writes;
} writer_t;

static void *writer_main(void *p) {
  writer_t *w = p;
  while (!atomic_load(&w->stop)) {
    pthread_mutex_lock(&w->mu);
    if (w->wfd >= 0 && write(w->wfd, "w", 1) == 1)
      atomic_fetch_add(&w->writes, 1);
    pthread_mutex_unlock(&w->mu);
    flt_sleep_us(50);
  }
  return NULL;
}

static void writer_set(writer_t *w, int fd) {
  pthread_mutex_lock(&w->mu);
  w->wfd = fd;
  pthread_mutex_unlock(&w->mu);
}

static void scenario_d(evl_t *l) {
  enum { ROUNDS = 300 };
  static watch_t w[ROUNDS];
  writer_t wr;
  pthread_t th;
  int i, num = -1, wfd = -1;
  memset(&wr, 0, sizeof wr);
  CHECK_OK(pthread_mutex_init(&wr.mu, NULL));
  wr.wfd = -1;
  flt_spawn(&th, writer_main, &wr);
  for (i = 0; i < ROUNDS; i++) {
    int p[2];
    evl_id_t id;
    int r;
    CHECK_OK(pipe(p));
    if (num >= 0 && p[0] != num) {
      CHECK_EQ(dup2(p[0], num), num);
      close(p[0]);
      p[0] = num;
    }
    num = p[0];
    wfd = p[1];
    writer_set(&wr, wfd);
    watch_init(&w[i], num);
    /* The previous watch of this number may not have had its last call
     * yet only if we did not wait for it: we cancelled and waited. */
    r = evl_fd_watch(l, num, EVL_READABLE, 0, watch_cb, &w[i], &id);
    CHECK_OK(r);
    if (i % 3 == 0) flt_sleep_us(200);
    CHECK_OK(evl_cancel(l, id));
    flt_wait_ge(&w[i].last, 1);
    writer_set(&wr, -1);
    close(wfd);
  }
  atomic_store(&wr.stop, 1);
  flt_join(th);
  pthread_mutex_destroy(&wr.mu);
  close(num);
  for (i = 0; i < ROUNDS; i++) {
    CHECK_EQ(atomic_load(&w[i].last), 1);
    CHECK_EQ(atomic_load(&w[i].cancelled), 1);
    CHECK_EQ(atomic_load(&w[i].calls_after_last), 0);
  }
}

int main(void) {
  gvl_config_t gc;
  gvl_t *g;
  evl_t *l;
  gvl_thread_t *me;
  evl_stats_t st;
  flt_watchdog(120);
  signal(SIGPIPE, SIG_IGN);
  memset(&gc, 0, sizeof gc);
  gc.hook = hook;
  g = gvl_create(&gc);
  CHECK(g != NULL);
  l = evl_start(g, NULL);
  CHECK(l != NULL);
  CHECK_OK(evl_post(l, grab_loop_cb, NULL, NULL));
  flt_wait_ge(&got_loop, 1);
  me = gvl_thread_attach(g, 0);
  CHECK(me != NULL);
  scenario_a(l, me);
  scenario_b(l, me);
  scenario_c(l);
  scenario_d(l);
  CHECK_OK(evl_stop(l));   /* past the last callback's return (see stats) */
  CHECK_OK(evl_stats(l, &st));
  CHECK_EQ(st.live, 0);
  CHECK_OK(evl_destroy(l));
  CHECK_OK(gvl_thread_detach(me));
  CHECK_OK(gvl_destroy(g));
  printf("fault_fdreuse: ok\n");
  return 0;
}
