/* SPDX-License-Identifier: MIT */
/*
 * fork() in a multi-threaded process.  Other threads hold, wait for, or sit
 * attached to the GVL while one thread forks.  In the child only the forking
 * thread exists: it must find a working GVL (held by itself if it held it
 * before), be able to release and acquire it, use every kind of call, make a
 * new GVL, and exit 0.  The parent carries on unaffected.
 *
 * Cases: the forking thread holds the GVL; it is attached but does not hold
 * (another thread holds and passes safe points); it is not attached at all;
 * it forks from a hook while it waits in the queue; it holds with a boosted
 * waiter's preempt request pending, which the child must not keep.
 */
#include "tgvl.h"


static gvl_t *g;
static tgvl_log_t hlog;
static atomic_int stop_spin;     /* tells the holding spinner to finish */
static atomic_uint spinner_in;
static atomic_uint idle_go;

static void *ident(void *arg) { return arg; }

static void *spinner(void *arg) {
  (void)arg;
  gvl_thread_t *t = gvl_thread_attach(g, 0);
  CHECK(t != NULL);
  CHECK_OK(gvl_acquire(t));
  atomic_store(&spinner_in, 1);
  while (!atomic_load(&stop_spin)) CHECK_OK(gvl_check_ints(t));
  CHECK_OK(gvl_release(t));
  CHECK_OK(gvl_thread_detach(t));
  return NULL;
}

static void *waiter(void *arg) {
  (void)arg;
  gvl_thread_t *t = gvl_thread_attach(g, 0);
  CHECK(t != NULL);
  CHECK_OK(gvl_acquire(t));
  CHECK_OK(gvl_yield(t));
  CHECK_OK(gvl_release(t));
  CHECK_OK(gvl_thread_detach(t));
  return NULL;
}

/* Attached, not holding, parked outside the GVL until told to go. */
static void *idle(void *arg) {
  (void)arg;
  gvl_thread_t *t = gvl_thread_attach(g, 0);
  CHECK(t != NULL);
  atomic_fetch_add(&idle_go, 1);
  tgvl_wait_ge(&idle_go, 2);
  CHECK_OK(gvl_acquire(t));
  CHECK_OK(gvl_release(t));
  CHECK_OK(gvl_thread_detach(t));
  return NULL;
}

static void *child_thread(void *arg) {
  gvl_thread_t *t = gvl_thread_attach(g, 0);
  CHECK(t != NULL);
  CHECK_OK(gvl_acquire(t));
  CHECK_OK(gvl_release(t));
  CHECK_OK(gvl_thread_detach(t));
  return arg;
}

/* Everything a process does with a GVL, in the child.  me is the forking
 * thread's handle (NULL if it was not attached). */
static void child_body(gvl_thread_t *me, int held) {
  tgvl_watchdog(30);
  if (me == NULL) {
    /* Unattached forking thread: foreign use and a fresh attach work. */
    CHECK(gvl_call_with(g, 0, ident, &hlog) == &hlog);
    me = gvl_thread_attach(g, 0);
    CHECK(me != NULL);
  } else if (held) {
    CHECK(gvl_thread_holds(me));
  }
  if (!gvl_thread_holds(me)) CHECK_OK(gvl_acquire(me));
  CHECK_OK(gvl_check_ints(me));
  CHECK_OK(gvl_yield(me)); /* the parent's waiters are not in the child */
  CHECK(gvl_call_without(me, ident, &hlog, NULL, NULL) == &hlog);
  CHECK_OK(gvl_release(me));
  CHECK_OK(gvl_acquire(me));
  CHECK_OK(gvl_release(me));
  CHECK(gvl_call_with(g, 0, ident, &hlog) == &hlog);
  CHECK(!gvl_thread_holds(me));

  /* New threads can use the old GVL.  (TSan cannot start threads after a
   * multi-threaded fork, so that part runs without it only.) */
  if (!TGVL_TSAN) {
    pthread_t th;
    CHECK_OK(gvl_acquire(me));
    tgvl_spawn(&th, child_thread, NULL);
    CHECK_OK(gvl_release(me));
    tgvl_join(th);
  }

  gvl_t *g2 = gvl_create(NULL);
  CHECK(g2 != NULL);
  gvl_thread_t *t2 = gvl_thread_attach(g2, 0);
  CHECK(t2 != NULL);
  CHECK_OK(gvl_acquire(t2));
  CHECK_OK(gvl_release(t2));
  CHECK_OK(gvl_thread_detach(t2));
  CHECK_OK(gvl_destroy(g2));

  CHECK_OK(gvl_thread_detach(me));
  /* The parent's other threads were forgotten: nothing is attached. */
  CHECK_OK(gvl_destroy(g));
  fflush(stdout);
  _exit(0);
}

static void setup(pthread_t *th, int spin) {
  gvl_config_t cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.slice_ns = 1000000;
  cfg.hook = tgvl_hook;
  cfg.hook_arg = &hlog;
  tgvl_log_reset(&hlog);
  g = gvl_create(&cfg);
  CHECK(g != NULL);
  atomic_store(&stop_spin, 0);
  atomic_store(&spinner_in, 0);
  atomic_store(&idle_go, 0);
  tgvl_spawn(&th[2], idle, NULL);
  tgvl_wait_ge(&idle_go, 1);
  if (spin) {
    tgvl_spawn(&th[0], spinner, NULL);
    tgvl_wait_ge(&spinner_in, 1);
  }
}

static void finish(pthread_t *th, int spin) {
  atomic_store(&stop_spin, 1);
  atomic_fetch_add(&idle_go, 1);
  tgvl_join(th[1]);
  tgvl_join(th[2]);
  if (spin) tgvl_join(th[0]);
  CHECK_OK(gvl_destroy(g));
}

/* The forking thread holds the GVL; a waiter queues behind it. */
static void fork_holding(void) {
  pthread_t th[3];
  setup(th, 0);
  gvl_thread_t *me = gvl_thread_attach(g, 0);
  CHECK(me != NULL);
  CHECK_OK(gvl_acquire(me));
  tgvl_spawn(&th[1], waiter, NULL);
  tgvl_wait_ge(&hlog.count[GVL_EV_READY], 1);
  pid_t pid = fork();
  if (pid == 0) child_body(me, 1);
  tgvl_wait_child(pid);
  CHECK(gvl_thread_holds(me));
  CHECK_OK(gvl_yield(me)); /* the waiter is still there in the parent */
  CHECK_OK(gvl_release(me));
  CHECK_OK(gvl_thread_detach(me));
  finish(th, 0);
}

/* Another thread holds and passes safe points; one more waits. */
static void fork_not_holding(int attached) {
  pthread_t th[3];
  setup(th, 1);
  gvl_thread_t *me = NULL;
  if (attached) {
    me = gvl_thread_attach(g, 0);
    CHECK(me != NULL);
  }
  tgvl_spawn(&th[1], waiter, NULL);
  tgvl_wait_ge(&hlog.count[GVL_EV_READY], 1);
  pid_t pid = fork();
  if (pid == 0) child_body(me, 0);
  tgvl_wait_child(pid);
  if (me) {
    CHECK_OK(gvl_acquire(me));
    CHECK_OK(gvl_release(me));
    CHECK_OK(gvl_thread_detach(me));
  }
  finish(th, 1);
}

/* ---- fork while a foreign thread is inside gvl_call_with ------------------- */

static atomic_uint f_in, f_leave;

static void *inside_fn(void *arg) {
  atomic_store(&f_in, 1);
  tgvl_wait_ge(&f_leave, 1);
  return arg;
}

static void *foreign_caller(void *arg) {
  CHECK(gvl_call_with(g, 0, inside_fn, arg) == arg);
  return NULL;
}

/* In the child the foreign thread does not exist: its call in progress
 * must not keep the GVL held or busy. */
static void fork_during_call_with(void) {
  g = gvl_create(NULL);
  CHECK(g != NULL);
  atomic_store(&f_in, 0);
  atomic_store(&f_leave, 0);
  gvl_thread_t *me = gvl_thread_attach(g, 0);
  CHECK(me != NULL);
  pthread_t th;
  tgvl_spawn(&th, foreign_caller, &th);
  tgvl_wait_ge(&f_in, 1);
  pid_t pid = fork();
  if (pid == 0) {
    tgvl_watchdog(30);
    CHECK(!gvl_thread_holds(me));
    CHECK_OK(gvl_acquire(me));
    CHECK_OK(gvl_release(me));
    CHECK_OK(gvl_thread_detach(me));
    CHECK_OK(gvl_destroy(g));
    _exit(0);
  }
  tgvl_wait_child(pid);
  atomic_store(&f_leave, 1);
  tgvl_join(th);
  CHECK_OK(gvl_acquire(me));
  CHECK_OK(gvl_release(me));
  CHECK_OK(gvl_thread_detach(me));
  CHECK_OK(gvl_destroy(g));
}

/* ---- many forks while other threads hammer the GVL ------------------------ */

#define NHAMMER 3
static atomic_int hammer_stop;
static atomic_uint hammer_in;

static void *hammer(void *arg) {
  int id = *(int *)arg;
  gvl_thread_t *t = gvl_thread_attach(g, 0);
  CHECK(t != NULL);
  atomic_fetch_add(&hammer_in, 1);
  for (unsigned i = 0; !atomic_load(&hammer_stop); i++) {
    CHECK_OK(gvl_acquire_prio(t, (int)((i + (unsigned)id) % 3) * 5 - 5));
    if (i % 3 == 0) CHECK_OK(gvl_yield(t));
    if (i % 5 == 0) CHECK(gvl_call_without(t, ident, arg, NULL, NULL) == arg);
    CHECK_OK(gvl_check_ints(t));
    CHECK_OK(gvl_release(t));
    if (i % 7 == 0) CHECK(gvl_call_with(g, 3, ident, arg) == arg);
  }
  CHECK_OK(gvl_thread_detach(t));
  return NULL;
}

/* Whatever internal lock the others happen to be inside when fork() runs,
 * the child's GVL must be consistent. */
static void fork_under_load(int rounds) {
  g = gvl_create(NULL);
  CHECK(g != NULL);
  atomic_store(&hammer_stop, 0);
  atomic_store(&hammer_in, 0);
  pthread_t th[NHAMMER];
  int ids[NHAMMER];
  for (int i = 0; i < NHAMMER; i++) {
    ids[i] = i;
    tgvl_spawn(&th[i], hammer, &ids[i]);
  }
  gvl_thread_t *me = gvl_thread_attach(g, 0);
  CHECK(me != NULL);
  /* A fork while a hammer is inside gvl_thread_attach leaves its handle,
   * not yet on g's list, to a thread the child does not have: valgrind
   * reports it lost there.  Fork only once all are attached. */
  tgvl_wait_ge(&hammer_in, NHAMMER);
  for (int r = 0; r < rounds; r++) {
    int held = r % 2;
    if (held) CHECK_OK(gvl_acquire(me));
    pid_t pid = fork();
    if (pid == 0) {
      tgvl_watchdog(30);
      if (held) CHECK(gvl_thread_holds(me));
      else if (!gvl_thread_holds(me)) CHECK_OK(gvl_acquire(me));
      CHECK_OK(gvl_yield(me));
      CHECK_OK(gvl_release(me));
      CHECK(gvl_call_with(g, 0, ident, me) == me);
      CHECK_OK(gvl_thread_detach(me));
      CHECK_OK(gvl_destroy(g));
      _exit(0);
    }
    tgvl_wait_child(pid);
    if (held) CHECK_OK(gvl_release(me));
  }
  atomic_store(&hammer_stop, 1);
  for (int i = 0; i < NHAMMER; i++) tgvl_join(th[i]);
  CHECK_OK(gvl_thread_detach(me));
  CHECK_OK(gvl_destroy(g));
}

/* ---- fork from a hook while the forking thread waits in the queue ----------
 * The READY hook runs on the thread that just queued; hooks may do
 * anything but call the GVL.  In the child nobody is left to hand that
 * thread the GVL, which is free there: its acquire must return holding
 * (it waited for ever).  The parent's acquire goes on as usual. */
static gvl_thread_t *_Atomic hf_me;
static atomic_int hf_forked;
static pid_t hf_pid;

static void hf_hook(void *arg, gvl_thread_t *t, gvl_event_t ev, uint64_t ns) {
  (void)arg;
  (void)ns;
  if (ev != GVL_EV_READY || t != atomic_load(&hf_me) ||
      atomic_exchange(&hf_forked, 1))
    return;
  hf_pid = fork();
  if (hf_pid == 0) alarm(20);   /* the watchdog's alarm: a hung child fails in 20 s */
}

/* refused: the acquire is a boost the cap refuses (it queues at normal
 * priority), and the child's hold must be that of a handoff: unboosted,
 * not counted as a boost. */
static void fork_in_hook(int refused) {
  gvl_config_t c;
  pthread_t th;
  memset(&c, 0, sizeof c);
  c.hook = hf_hook;
  atomic_store(&hf_me, NULL);
  if (refused) {
    c.boost_cap_pct = 1;
    c.cap_window_ns = 10000000000ull;  /* the charge outlives any stall */
  }
  CHECK(g = gvl_create(&c));
  gvl_thread_t *me = gvl_thread_attach(g, 0);
  CHECK(me != NULL);
  if (refused) {                       /* 150 ms boosted: past 1% of 10 s */
    CHECK_OK(gvl_acquire_prio(me, GVL_PRIO_BOOST));
    tgvl_sleep_us(150000);
    CHECK_OK(gvl_release(me));
  }
  atomic_store(&stop_spin, 0);
  atomic_store(&spinner_in, 0);
  atomic_store(&hf_forked, 0);
  tgvl_spawn(&th, spinner, NULL);
  tgvl_wait_ge(&spinner_in, 1);
  atomic_store(&hf_me, me);
  /* Queues behind the hog: READY. */
  CHECK_OK(refused ? gvl_acquire_prio(me, GVL_PRIO_BOOST) : gvl_acquire(me));
  if (hf_pid == 0) {
    /* The child: alone, holding, and the GVL works. */
    gvl_stats_t st;
    int ok = gvl_thread_stats(me, &st) == 0 &&
             st.boosts == (uint64_t)refused && st.boosts_refused == (uint64_t)refused &&
             gvl_thread_holds(me) && gvl_yield(me) == 0 &&
             gvl_release(me) == 0 && gvl_acquire(me) == 0 &&
             gvl_release(me) == 0 && gvl_thread_detach(me) == 0 &&
             gvl_destroy(g) == 0;
    _exit(ok ? 0 : 3);
  }
  CHECK(atomic_load(&hf_forked));
  CHECK(gvl_thread_holds(me));
  atomic_store(&stop_spin, 1);
  CHECK_OK(gvl_release(me));
  tgvl_join(th);
  tgvl_wait_child(hf_pid);
  CHECK_OK(gvl_thread_detach(me));
  CHECK_OK(gvl_destroy(g));
}

/* ---- a request made by a waiter the fork drops --------------------------- */

static uint32_t ints_of(gvl_thread_t *t) {
  return __atomic_load_n(&((struct gvl__thread_head *)t)->ints, __ATOMIC_RELAXED);
}

static void *booster(void *arg) {
  gvl_thread_t *t = gvl_thread_attach(g, 0);
  CHECK(t != NULL);
  CHECK_OK(gvl_acquire_prio(t, GVL_PRIO_BOOST));
  CHECK_OK(gvl_release(t));
  CHECK_OK(gvl_thread_detach(t));
  return arg;
}

/* The holder forks while a boosted waiter's request is pending.  In the
 * child nobody waits, so nobody asks: no preempt flag is left on the
 * holder (it is only ever set on the holder while others wait), and a safe
 * point with a normal waiter queued there, within a slice of 10 s, keeps
 * the GVL. */
static void fork_with_request(void) {
  gvl_config_t c = tgvl_strict_config(10ull * 1000000000ull, &hlog);
  tgvl_log_reset(&hlog);
  CHECK(g = gvl_create(&c));
  gvl_thread_t *me = gvl_thread_attach(g, 0);
  CHECK(me != NULL);
  CHECK_OK(gvl_acquire(me));
  pthread_t b;
  tgvl_spawn(&b, booster, NULL);
  tgvl_wait_ge(&hlog.count[GVL_EV_PREEMPT_REQ], 1);
  CHECK(ints_of(me) & GVL__INT_PREEMPT);
  pid_t pid = fork();
  if (pid == 0) {
    tgvl_watchdog(30);
    CHECK(gvl_thread_holds(me));
    CHECK_EQ(ints_of(me) & GVL__INT_PREEMPT, 0);
    if (!TGVL_TSAN) {     /* TSan refuses threads after a threaded fork */
      tgvl_log_reset(&hlog);
      pthread_t n;
      tgvl_spawn(&n, child_thread, NULL);
      tgvl_wait_ge(&hlog.count[GVL_EV_READY], 1);
      uint64_t before = tgvl_tstats(me).preemptions;
      CHECK_OK(gvl_check_ints(me));
      CHECK_EQ(tgvl_tstats(me).preemptions, before);
      CHECK_OK(gvl_release(me));
      tgvl_join(n);
    } else {
      CHECK_OK(gvl_release(me));
    }
    CHECK_OK(gvl_thread_detach(me));
    CHECK_OK(gvl_destroy(g));
    _exit(0);
  }
  tgvl_wait_child(pid);
  CHECK_OK(gvl_check_ints(me));      /* the parent serves its booster */
  CHECK_OK(gvl_release(me));
  tgvl_join(b);
  CHECK_OK(gvl_thread_detach(me));
  CHECK_OK(gvl_destroy(g));
}

int main(void) {
  tgvl_watchdog(60);
  fork_with_request();
  fork_holding();
  fork_not_holding(1);
  fork_not_holding(0);
  fork_during_call_with();
  fork_in_hook(0);
  fork_in_hook(1);
  fork_under_load(40 / tgvl_slow() + 2);
  puts("ok");
  return 0;
}
