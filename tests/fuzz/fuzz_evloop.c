/* SPDX-License-Identifier: MIT */
/*
 * fuzz_evloop: libevloop driven by a byte stream of registrations and
 * cancellations from two threads (and from callbacks on the loop thread).
 *
 * Operations: posts (with and without the GVL), one-shot and repeating
 * timers, fd watches on a few pipes and writes/reads on them, pool work,
 * file reads (good, missing, a directory, over the limit), signal watches,
 * cancellations of any earlier registration, wake-ups, callbacks that post,
 * cancel, fail, step the loop re-entrantly or stop it, and evl_stop from a
 * submitting thread.
 *
 * Invariants, checked as they happen and at the end:
 *   - a callback is never called after its last call, and never at all for
 *     a registration whose call returned an error;
 *   - every accepted registration has exactly one last call once evl_stop
 *     has returned, and the loop's live count is 0;
 *   - a registration whose evl_cancel returned 0 ends with ECANCELED;
 *   - callbacks run on the loop thread, holding the GVL unless EVL_F_NOGVL;
 *   - statuses are 0, ECANCELED, or the error the operation can produce.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "evloop.h"

#define FZ_CHECK(c)                                                          \
  do {                                                                       \
    if (!(c)) {                                                              \
      fprintf(stderr, "fuzz_evloop: %s:%d: invariant broken: %s\n",          \
              __FILE__, __LINE__, #c);                                       \
      abort();                                                               \
    }                                                                        \
  } while (0)

#define NSUB 2
#define MAXOPS 256
#define NSLOTS 1024
#define NPIPES 3

enum { K_POST, K_TIMER, K_REPEAT, K_FD, K_WORK, K_READ, K_SIG };

typedef struct {
  int kind;
  unsigned flags;
  atomic_int accepted;    /* the registering call returned 0 */
  atomic_int rejected;    /* ... returned an error */
  _Atomic evl_id_t id;
  atomic_int calls, last, last_status, cancel_ok;
  int action;             /* what a post does when it runs */
  int action_arg;
} slot_t;

enum { A_NONE, A_POST, A_CANCEL, A_FAIL, A_STEP, A_STOP };

typedef struct {
  uint8_t op, arg;
} fz_op_t;

static gvl_t *g;
static evl_t *l;
static slot_t slots[NSLOTS];
static atomic_int nslots;
static int pipes[NPIPES][2];
static fz_op_t ops[NSUB][MAXOPS];
static int nops[NSUB];

static slot_t *slot_new(int kind, unsigned flags) {
  int i = atomic_fetch_add(&nslots, 1);
  slot_t *s;
  if (i >= NSLOTS) return NULL;
  s = &slots[i];
  s->kind = kind;
  s->flags = flags;
  return s;
}

static void slot_done(slot_t *s, int err, evl_id_t id) {
  if (err == 0) {
    FZ_CHECK(id != 0);
    atomic_store(&s->id, id);
    atomic_store(&s->accepted, 1);
  } else {
    FZ_CHECK(err == EVL_ESTOPPED || err == EEXIST);
    atomic_store(&s->rejected, 1);
  }
}

static int oneshot(const slot_t *s) {
  return s->kind == K_POST || s->kind == K_TIMER || s->kind == K_WORK ||
         s->kind == K_READ;
}

/* Common checks at the start of every callback. */
static void on_call(slot_t *s, evl_t *ll, int status) {
  FZ_CHECK(ll == l);
  FZ_CHECK(evl_in_loop_thread(ll));
  FZ_CHECK(gvl_thread_holds(evl_gvl_thread(ll)) == !(s->flags & EVL_F_NOGVL));
  FZ_CHECK(atomic_load(&s->last) == 0);      /* nothing after the last */
  FZ_CHECK(!atomic_load(&s->rejected));
  atomic_fetch_add(&s->calls, 1);
  if (status != 0 || oneshot(s)) {
    atomic_store(&s->last_status, status);
    atomic_store(&s->last, 1);
  }
}

static void cancel_slot(int idx);
static void submit(int op, int arg, int from_loop);

static void post_cb(evl_t *ll, void *arg, int status) {
  slot_t *s = arg;
  on_call(s, ll, status);
  FZ_CHECK(status == 0 || status == ECANCELED);
  if (status != 0) return;
  switch (s->action) {
  case A_POST:
    submit(s->action_arg % 4, s->action_arg / 4, 1);
    break;
  case A_CANCEL:
    cancel_slot(s->action_arg);
    break;
  case A_FAIL:
    FZ_CHECK(evl_fail(ll, EIO, "fuzz") == 0);
    break;
  case A_STEP: {
    /* Re-entrant step: the nested pass may run other callbacks. */
    int r = evl_step(ll, 0);
    FZ_CHECK(r == 0);
    FZ_CHECK(gvl_thread_holds(evl_gvl_thread(ll)) ==
             !(s->flags & EVL_F_NOGVL));
    break;
  }
  case A_STOP:
    FZ_CHECK(evl_stop(ll) == 0);
    break;
  default:
    break;
  }
}

static void timer_cb(evl_t *ll, void *arg, int status) {
  slot_t *s = arg;
  on_call(s, ll, status);
  FZ_CHECK(status == 0 || status == ECANCELED);
}

static void io_cb(evl_t *ll, void *arg, int status, unsigned ev) {
  slot_t *s = arg;
  on_call(s, ll, status);
  if (status == 0) FZ_CHECK(ev != 0 && (ev & ~(EVL_READABLE | EVL_WRITABLE)) == 0);
  else FZ_CHECK(ev == 0);
}

static void work_fn(void *arg) {
  slot_t *s = arg;
  FZ_CHECK(!evl_in_loop_thread(l));
  FZ_CHECK(atomic_load(&s->last) == 0);
}

static void read_cb(evl_t *ll, void *arg, int status, char *d, size_t n) {
  slot_t *s = arg;
  on_call(s, ll, status);
  if (status == 0) {
    FZ_CHECK(d != NULL && d[n] == '\0');
  } else {
    FZ_CHECK(d == NULL && n == 0);
    FZ_CHECK(status == ECANCELED || status == ENOENT || status == EISDIR ||
             status == EFBIG);
  }
  free(d);
}

static void on_error(evl_t *ll, int err, const char *what, void *arg) {
  (void)arg;
  (void)what;
  FZ_CHECK(ll == l);
  FZ_CHECK(err == EIO);
}

static void cancel_slot(int idx) {
  int n = atomic_load(&nslots);
  slot_t *s;
  evl_id_t id;
  int r;
  if (n <= 0) return;
  if (n > NSLOTS) n = NSLOTS;
  s = &slots[idx % n];
  id = atomic_load(&s->id);
  if (id == 0) return;
  r = evl_cancel(l, id);
  FZ_CHECK(r == 0 || r == EVL_ENOREG || r == EBUSY);
  if (r == EBUSY) FZ_CHECK(s->kind == K_WORK || s->kind == K_READ);
  if (r == 0) atomic_store(&s->cancel_ok, 1);
}

static const char *read_path(int arg, size_t *limit) {
  *limit = 0;
  switch (arg % 4) {
  case 0: return "/proc/self/stat";
  case 1: return "/nonexistent/fuzz_evloop";
  case 2: return "/";
  default: *limit = 4; return "/proc/self/status";
  }
}

static void submit(int op, int arg, int from_loop) {
  slot_t *s;
  evl_id_t id = 0;
  int r;
  unsigned nogvl = (arg & 0x80) ? EVL_F_NOGVL : 0;
  switch (op) {
  case 0: case 1: case 2: case 3:
    if (from_loop && op != 0) op = 0;
    if ((s = slot_new(K_POST, op == 1 ? EVL_F_NOGVL : 0)) == NULL) return;
    s->action = op == 0 ? A_NONE : (arg & 7) < 4 ? A_POST + (arg & 3) : A_NONE;
    if (op == 3 && (arg & 0x70) == 0x70) s->action = A_STOP;
    if (from_loop && s->action == A_POST) s->action = A_NONE;
    s->action_arg = arg >> 2;
    r = evl_post_flags(l, post_cb, s, s->flags, &id);
    slot_done(s, r, id);
    break;
  case 4:
    if ((s = slot_new(K_TIMER, nogvl)) == NULL) return;
    r = evl_timer(l, (uint64_t)(arg & 3), 0, nogvl, timer_cb, s, &id);
    slot_done(s, r, id);
    break;
  case 5:
    if ((s = slot_new(K_REPEAT, nogvl)) == NULL) return;
    r = evl_timer(l, (uint64_t)(arg & 3), 1, nogvl, timer_cb, s, &id);
    slot_done(s, r, id);
    break;
  case 6:
    if ((s = slot_new(K_FD, nogvl)) == NULL) return;
    r = evl_fd_watch(l, pipes[arg % NPIPES][arg & 0x40 ? 1 : 0],
                     arg & 0x40 ? EVL_WRITABLE : EVL_READABLE, nogvl, io_cb,
                     s, &id);
    slot_done(s, r, id);
    break;
  case 7: {
    char c = 'x';
    ssize_t w = write(pipes[arg % NPIPES][1], &c, 1);
    (void)w;
    break;
  }
  case 8: {
    char buf[16];
    ssize_t rd = read(pipes[arg % NPIPES][0], buf, sizeof buf);
    (void)rd;
    break;
  }
  case 9:
    if ((s = slot_new(K_WORK, nogvl)) == NULL) return;
    r = evl_work(l, work_fn, nogvl, timer_cb, s, &id);
    slot_done(s, r, id);
    break;
  case 10: {
    size_t limit;
    const char *p = read_path(arg, &limit);
    if ((s = slot_new(K_READ, nogvl)) == NULL) return;
    r = evl_read_file(l, p, nogvl, limit, read_cb, s, &id);
    slot_done(s, r, id);
    break;
  }
  case 11:
  case 12:
    cancel_slot(arg);
    break;
  case 13:
    /* SIGURG and SIGWINCH are ignored by default: safe to raise whether a
     * watch has installed libuv's handler or not. */
    if (arg & 1) {
      FZ_CHECK(kill(getpid(), arg & 2 ? SIGURG : SIGWINCH) == 0);
    } else {
      r = evl_wakeup(l);
      FZ_CHECK(r == 0 || r == EVL_ESTOPPED);
    }
    break;
  case 14:
    if ((s = slot_new(K_SIG, nogvl)) == NULL) return;
    r = evl_signal_watch(l, arg & 1 ? SIGURG : SIGWINCH, nogvl, timer_cb, s,
                         &id);
    slot_done(s, r, id);
    break;
  case 15:
    if (!from_loop && arg > 250) FZ_CHECK(evl_stop(l) == 0);
    break;
  default:
    break;
  }
}

static void *sub_main(void *arg) {
  int k = (int)(intptr_t)arg, i;
  for (i = 0; i < nops[k]; i++) submit(ops[k][i].op, ops[k][i].arg, 0);
  return NULL;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  evl_config_t cfg;
  pthread_t th[NSUB];
  evl_stats_t st;
  size_t i;
  int k, n;
  if (size < 1) return 0;
  if (g == NULL) {
    g = gvl_create(NULL);
    FZ_CHECK(g != NULL);
  }
  memset(slots, 0, sizeof slots);
  atomic_store(&nslots, 0);
  memset(nops, 0, sizeof nops);
  for (i = 1; i + 1 < size; i += 2) {
    k = data[i] % NSUB;
    if (nops[k] < MAXOPS) {
      ops[k][nops[k]].op = (uint8_t)((data[i] / NSUB) % 16);
      ops[k][nops[k]].arg = data[i + 1];
      nops[k]++;
    }
  }
  for (k = 0; k < NPIPES; k++) {
    FZ_CHECK(pipe2(pipes[k], O_NONBLOCK | O_CLOEXEC) == 0);
  }
  memset(&cfg, 0, sizeof cfg);
  cfg.budget_count = 1u + (data[0] & 7u);
  cfg.prio = (data[0] & 8) ? EVL_PRIO_NORMAL : 0;
  cfg.on_error = on_error;
  l = evl_start(g, &cfg);
  FZ_CHECK(l != NULL);
  for (k = 0; k < NSUB; k++)
    FZ_CHECK(pthread_create(&th[k], NULL, sub_main, (void *)(intptr_t)k) == 0);
  for (k = 0; k < NSUB; k++) pthread_join(th[k], NULL);
  FZ_CHECK(evl_stop(l) == 0);
  FZ_CHECK(evl_stats(l, &st) == 0);
  FZ_CHECK(st.live == 0);
  FZ_CHECK(evl_destroy(l) == 0);
  l = NULL;
  n = atomic_load(&nslots);
  if (n > NSLOTS) n = NSLOTS;
  for (k = 0; k < n; k++) {
    slot_t *s = &slots[k];
    if (atomic_load(&s->rejected)) {
      FZ_CHECK(atomic_load(&s->calls) == 0);
      continue;
    }
    if (!atomic_load(&s->accepted)) continue;   /* slot taken, call not made */
    FZ_CHECK(atomic_load(&s->last) == 1);
    if (atomic_load(&s->cancel_ok))
      FZ_CHECK(atomic_load(&s->last_status) == ECANCELED);
  }
  for (k = 0; k < NPIPES; k++) {
    close(pipes[k][0]);
    close(pipes[k][1]);
  }
  return 0;
}
