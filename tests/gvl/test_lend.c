/* SPDX-License-Identifier: MIT */
/*
 * GVL_F_LEND: a thread that queues above the holder lends the holder its
 * kernel scheduling while it waits, and the holder gets its own back as it
 * gives the GVL up.  One case per promise of gvl.h:
 *
 *   fifo        a SCHED_FIFO booster's lend reaches a SCHED_OTHER holder,
 *               which gets its own back at the safe point that serves the
 *               booster; one lend counted, on the booster
 *   off         without GVL_F_LEND nothing is lent
 *   rank        a nice -5 booster lends its nice; an equal or lower one
 *               (nice 0, nice 3, SCHED_IDLE; FIFO 1 under a FIFO 2 holder)
 *               lends nothing
 *   paths       the holder's own scheduling is back when it gives the GVL
 *               up by gvl_release, gvl_yield, gvl_call_without (checked
 *               inside the region) and gvl_cond_timedwait
 *   fork        a lent holder forks: the child's thread has the holder's
 *               own scheduling, and its GVL works
 *   multi       a thread attached to two GVLs is not lent to
 *   child_thread a thread started by a lent holder has normal scheduling
 *   hammer      threads of random scheduling (nice -5..5, FIFO 1..3) take
 *               the GVL at random priorities, compute, sleep holding it,
 *               yield, block and release; whenever one does not hold the GVL it has its own
 *               scheduling, and lends were made
 *   relend      a holder preempted in its own restore, and given the GVL
 *               again meanwhile, is lent again by the next boost
 *   take_back   a lend made to a waiter with a revocable grant, which
 *               cannot run (a real-time thread above the lend keeps its
 *               CPU), ends when gvl_call_without takes the grant back
 *   hammer_slow (test_gvl_lend_wrap only) the hammer with each lend and
 *               restore made slow by a wrapper (0-200 us asleep): the
 *               same promise, with lends and restores of one thread
 *               overlapping
 *   lend_time   (test_gvl_lend_wrap only: the lend's system call made slow
 *               by a wrapper) the time a spinning booster spends lending
 *               is not counted against its spin: a grant that comes after
 *               spin_ns of wall time, but within spin_ns of spinning, finds
 *               it spinning, not asleep
 *
 * Asserted: states of the kernel's scheduling and counts.  Changing another
 * thread's scheduling needs CAP_SYS_NICE: without it the program exits 77
 * (ctest: skipped).
 */
#include "tgvl.h"

#include <stdbool.h>
#include <sys/resource.h>
#include <sys/syscall.h>

typedef struct {
  int policy, prio, nice;
} ks_t;

static int ktid(void) { return (int)syscall(SYS_gettid); }

static ks_t ks_get(int tid) {
  ks_t k;
  struct sched_param sp;
  k.policy = sched_getscheduler(tid);
  CHECK_GE(k.policy, 0);
  k.policy &= ~SCHED_RESET_ON_FORK;   /* set on a lent thread */
  CHECK_OK(sched_getparam(tid, &sp));
  k.prio = sp.sched_priority;
  errno = 0;
  k.nice = getpriority(PRIO_PROCESS, (id_t)tid);
  CHECK_OK(errno);
  return k;
}

static bool ks_rt(ks_t k) { return k.policy == SCHED_FIFO || k.policy == SCHED_RR; }

/* Equal as the kernel runs them: a real-time thread's nice is not used. */
static bool ks_eq(ks_t a, ks_t b) {
  if (a.policy != b.policy || a.prio != b.prio) return false;
  return ks_rt(a) || a.nice == b.nice;
}

static int ks_set_self(ks_t k) {
  struct sched_param sp = {.sched_priority = k.prio};
  if (sched_setscheduler(0, k.policy, &sp) != 0) return errno;
  if (!ks_rt(k) && setpriority(PRIO_PROCESS, (id_t)ktid(), k.nice) != 0)
    return errno;
  return 0;
}

static const ks_t OTHER0 = {SCHED_OTHER, 0, 0};
static const ks_t FIFO1 = {SCHED_FIFO, 1, 0};

static gvl_t *g;

static gvl_t *make_gvl(unsigned flags) {
  gvl_config_t c = {0};
  c.flags = flags;
  gvl_t *r = gvl_create(&c);
  CHECK(r);
  return r;
}

/* ---- one booster against the calling thread as holder ------------------- */

typedef struct {
  ks_t ks;
  uint64_t lends;               /* out: the booster's own count */
} booster_t;

static void *booster(void *arg) {
  booster_t *b = arg;
  CHECK_OK(ks_set_self(b->ks));
  gvl_thread_t *t = gvl_thread_attach(g, GVL_PRIO_NORMAL);
  CHECK(t);
  CHECK_OK(gvl_acquire_prio(t, GVL_PRIO_BOOST));
  b->lends = tgvl_tstats(t).lends;
  CHECK_OK(gvl_release(t));
  CHECK_OK(gvl_thread_detach(t));
  return NULL;
}

/* What the holder runs as while lent b. */
static ks_t lent_as(ks_t own, ks_t b) {
  ks_t k = b;
  if (ks_rt(b)) k.nice = own.nice;
  return k;
}

/* Wait, holding, for the booster's lend to show (expect) or for its
 * preemption request (!expect).  Sleeping, not yielding: a SCHED_FIFO
 * holder that yields keeps a SCHED_OTHER booster off a single CPU. */
static void wait_for_booster(gvl_thread_t *h, ks_t own, ks_t b, bool expect) {
  if (expect) {
    ks_t want = lent_as(own, b);
    while (!ks_eq(ks_get(ktid()), want)) tgvl_sleep_us(100);
  } else {
    while (tgvl_tstats(h).preempt_reqs == 0) tgvl_sleep_us(100);
  }
}

/* A scene: the calling thread, at `own`, holds a new GVL (g) and a booster
 * at `bks` has asked it to yield (and lent to it, if `expect`). */
typedef struct {
  pthread_t th;
  booster_t b;
  gvl_thread_t *h;
} scene_t;

static void scene_begin(scene_t *sc, unsigned flags, ks_t own, ks_t bks,
                        bool expect) {
  sc->b = (booster_t){.ks = bks, .lends = 99};
  g = make_gvl(flags);
  CHECK_OK(ks_set_self(own));
  CHECK(sc->h = gvl_thread_attach(g, GVL_PRIO_NORMAL));
  CHECK_OK(gvl_acquire(sc->h));
  tgvl_spawn(&sc->th, booster, &sc->b);
  wait_for_booster(sc->h, own, bks, expect);
}

/* ... the booster is done, having counted `lends`, as the GVL has. */
static void scene_end(scene_t *sc, uint64_t lends) {
  tgvl_join(sc->th);
  CHECK_EQ(sc->b.lends, lends);
  CHECK_EQ(tgvl_stats(g).lends, lends);
  CHECK_OK(gvl_release(sc->h));
  CHECK_OK(gvl_thread_detach(sc->h));
  CHECK_OK(gvl_destroy(g));
}

/* The calling thread holds at `own`, a booster at `bks` asks; the holder
 * gives the GVL up at a safe point and must have `own` back. */
static void one(unsigned flags, ks_t own, ks_t bks, bool expect) {
  scene_t sc;
  /* No spin: a booster lends, or decides not to, as it queues, under the
   * lock the holder's safe point takes: the counts below are exact. */
  scene_begin(&sc, flags | GVL_F_NOSPIN, own, bks, expect);
  CHECK_OK(gvl_check_ints(sc.h));     /* hands over, and back */
  CHECK(ks_eq(ks_get(ktid()), own));
  CHECK_EQ(tgvl_tstats(sc.h).preemptions, 1);
  scene_end(&sc, expect ? 1 : 0);
  CHECK_OK(ks_set_self(OTHER0));
}

static void fifo(void) { one(GVL_F_LEND, OTHER0, FIFO1, true); }
static void off(void) { one(0, OTHER0, FIFO1, false); }

static void rank(void) {
  const ks_t nice_m5 = {SCHED_OTHER, 0, -5}, nice3 = {SCHED_OTHER, 0, 3};
  const ks_t idle = {SCHED_IDLE, 0, 0}, fifo2 = {SCHED_FIFO, 2, 0};
  one(GVL_F_LEND, OTHER0, nice_m5, true);
  one(GVL_F_LEND, nice3, OTHER0, true);
  one(GVL_F_LEND, OTHER0, OTHER0, false);
  one(GVL_F_LEND, OTHER0, nice3, false);
  one(GVL_F_LEND, OTHER0, idle, false);
  one(GVL_F_LEND, fifo2, FIFO1, false);
  one(GVL_F_LEND, FIFO1, fifo2, true);
}

/* ---- the ways a holder gives the GVL up ----------------------------------- */

static ks_t path_own;

static void *region_fn(void *arg) {
  CHECK(ks_eq(ks_get(ktid()), path_own));
  return arg;
}

static void paths(void) {
  static gvl_mutex_t m;
  static gvl_cond_t c;
  path_own = (ks_t){SCHED_OTHER, 0, 2};
  for (int way = 0; way < 4; way++) {
    scene_t sc;
    scene_begin(&sc, GVL_F_LEND, path_own, FIFO1, true);
    gvl_thread_t *h = sc.h;
    switch (way) {
    case 0:
      CHECK_OK(gvl_release(h));
      CHECK(ks_eq(ks_get(ktid()), path_own));
      CHECK_OK(gvl_acquire(h));
      break;
    case 1:
      CHECK_OK(gvl_yield(h));
      break;
    case 2:
      CHECK(gvl_call_without(h, region_fn, &m, NULL, NULL) == &m);
      break;
    case 3:
      CHECK_OK(gvl_mutex_init(&m));
      CHECK_OK(gvl_cond_init(&c));
      CHECK_OK(gvl_mutex_lock(h, &m));
      CHECK_EQ(gvl_cond_timedwait(h, &c, &m, 1000000), ETIMEDOUT);
      CHECK_OK(gvl_mutex_unlock(h, &m));
      CHECK_OK(gvl_cond_destroy(&c));
      CHECK_OK(gvl_mutex_destroy(&m));
      break;
    }
    CHECK(ks_eq(ks_get(ktid()), path_own));
    scene_end(&sc, 1);
  }
  CHECK_OK(ks_set_self(OTHER0));
}

/* ---- fork while lent ------------------------------------------------------ */

static void fork_lent(void) {
  scene_t sc;
  scene_begin(&sc, GVL_F_LEND, OTHER0, FIFO1, true);
  gvl_thread_t *h = sc.h;
  pid_t pid = fork();
  CHECK_GE(pid, 0);
  if (pid == 0) {
    tgvl_watchdog(30);
    CHECK(ks_eq(ks_get(ktid()), OTHER0));
    CHECK_OK(gvl_check_ints(h));      /* the booster is not here */
    CHECK_OK(gvl_yield(h));
    CHECK_OK(gvl_release(h));
    CHECK_OK(gvl_acquire(h));
    CHECK_OK(gvl_release(h));
    CHECK_OK(gvl_thread_detach(h));
    CHECK_OK(gvl_destroy(g));
    _exit(0);
  }
  tgvl_wait_child(pid);
  CHECK_OK(gvl_check_ints(h));
  CHECK(ks_eq(ks_get(ktid()), OTHER0));
  scene_end(&sc, 1);
}

/* ---- one OS thread on two GVLs; a thread started while lent ---------------- */

static void multi(void) {
  pthread_t th;
  booster_t b = {.ks = FIFO1, .lends = 99};
  g = make_gvl(GVL_F_LEND | GVL_F_NOSPIN);
  gvl_t *g2 = make_gvl(GVL_F_LEND);
  CHECK_OK(ks_set_self(OTHER0));
  gvl_thread_t *h = gvl_thread_attach(g, GVL_PRIO_NORMAL);
  gvl_thread_t *h2 = gvl_thread_attach(g2, GVL_PRIO_NORMAL);
  CHECK(h && h2);
  CHECK_OK(gvl_acquire(h));
  CHECK_OK(gvl_acquire(h2));
  tgvl_spawn(&th, booster, &b);
  wait_for_booster(h, OTHER0, FIFO1, false);
  CHECK_OK(gvl_check_ints(h));
  tgvl_join(th);
  CHECK_EQ(b.lends, 0);
  CHECK(ks_eq(ks_get(ktid()), OTHER0));
  CHECK_OK(gvl_release(h2));
  CHECK_OK(gvl_release(h));
  CHECK_OK(gvl_thread_detach(h2));
  CHECK_OK(gvl_thread_detach(h));
  CHECK_OK(gvl_destroy(g2));
  CHECK_OK(gvl_destroy(g));
}

static void *report_policy(void *arg) {
  *(int *)arg = sched_getscheduler(0);   /* with the flag, if inherited */
  return NULL;
}

static void child_thread(void) {
  scene_t sc;
  pthread_t c;
  int policy = -1;
  scene_begin(&sc, GVL_F_LEND, OTHER0, FIFO1, true);
  tgvl_spawn(&c, report_policy, &policy);   /* started while lent */
  tgvl_join(c);
  CHECK_EQ(policy, SCHED_OTHER);
  CHECK_OK(gvl_check_ints(sc.h));
  CHECK(ks_eq(ks_get(ktid()), OTHER0));
  scene_end(&sc, 1);
}

/* ---- many threads, random scheduling and random ways in and out ----------- */

#define HAMMER_THREADS 6

static atomic_int hammer_go;
static atomic_int hammer_tids[HAMMER_THREADS];  /* kernel tids, for the wrap */

static unsigned rnd(unsigned *s) {
  *s = *s * 1103515245u + 12345u;
  return *s >> 16;
}

static void *hammer_region(void *arg) {
  const ks_t *own = arg;
  CHECK(ks_eq(ks_get(ktid()), *own));
  sched_yield();
  return NULL;
}

static void *hammer_thread(void *arg) {
  unsigned seed = (unsigned)(uintptr_t)arg * 2654435761u + 1;
  ks_t own = {SCHED_OTHER, 0, (int)(rnd(&seed) % 11) - 5};
  if (rnd(&seed) % 3 == 0) own = (ks_t){SCHED_FIFO, 1 + (int)(rnd(&seed) % 3), 0};
  CHECK_OK(ks_set_self(own));
  atomic_store(&hammer_tids[(uintptr_t)arg - 1], ktid());
  gvl_thread_t *t = gvl_thread_attach(g, GVL_PRIO_NORMAL);
  CHECK(t);
  while (!atomic_load(&hammer_go)) tgvl_sleep_us(100);
  int rounds = 3000 / tgvl_slow();
  for (int i = 0; i < rounds; i++) {
    int prio = (int)(rnd(&seed) % 3);
    CHECK_OK(gvl_acquire_prio(t, prio == 2 ? GVL_PRIO_BOOST : prio));
    for (unsigned k = rnd(&seed) % 20; k > 0; k--) {
      tgvl_work(2);
      CHECK_OK(gvl_check_ints(t));
    }
    switch (rnd(&seed) % 4) {
    case 0: CHECK_OK(gvl_yield(t)); break;
    case 1: (void)gvl_call_without(t, hammer_region, &own, NULL, NULL); break;
    case 2:   /* sleep holding: the others queue behind, also on one CPU */
      tgvl_sleep_us(20);
      CHECK_OK(gvl_check_ints(t));
      break;
    default: break;
    }
    CHECK_OK(gvl_release(t));
    CHECK(ks_eq(ks_get(ktid()), own));
  }
  CHECK_OK(gvl_thread_detach(t));
  CHECK_OK(ks_set_self(OTHER0));
  return NULL;
}

static void hammer(void) {
  pthread_t th[HAMMER_THREADS];
  g = make_gvl(GVL_F_LEND);
  atomic_store(&hammer_go, 0);
  for (int i = 0; i < HAMMER_THREADS; i++)
    tgvl_spawn(&th[i], hammer_thread, (void *)(uintptr_t)(i + 1));
  atomic_store(&hammer_go, 1);
  for (int i = 0; i < HAMMER_THREADS; i++) tgvl_join(th[i]);
  gvl_stats_t s = tgvl_stats(g);
  fprintf(stderr, "  lends %llu of %llu preempt_reqs\n",
          (unsigned long long)s.lends, (unsigned long long)s.preempt_reqs);
  CHECK_GT(s.lends, 0);
  CHECK_OK(gvl_destroy(g));
  for (int i = 0; i < HAMMER_THREADS; i++) atomic_store(&hammer_tids[i], 0);
}

/* ---- a lend to a waiter whose grant is taken back ---------------------- */

static const ks_t FIFO2 = {SCHED_FIFO, 2, 0}, FIFO3 = {SCHED_FIFO, 3, 0};
static int tb_cpu[2], tb_wtid;
static atomic_int tb_stage;   /* 2: the spinner (rt_spin, SCHED_FIFO 3,
                                 above the booster's 2) holds W's CPU, so
                                 W cannot run there, lent or not; 3: it
                                 may stop */
static tgvl_log_t tb_log;      /* the hook's: READY says the waiter queued */

/* The waiter, on the second CPU, asleep in the queue behind the holder. */
static void *tb_waiter(void *arg) {
  tgvl_pin(tb_cpu[1]);
  tb_wtid = ktid();
  gvl_thread_t *t = gvl_thread_attach(g, GVL_PRIO_NORMAL);
  CHECK(t);
  CHECK_OK(gvl_acquire(t));
  CHECK_OK(gvl_release(t));
  CHECK_OK(gvl_thread_detach(t));
  return arg;
}

/* A real-time thread that keeps a CPU: it sets *stage to 2 once it runs
 * there, and spins until *stage reaches 3 (or for 10 s, and then makes
 * a 2 a 4). */
typedef struct {
  int cpu;
  ks_t ks;
  atomic_int *stage;
} rt_spin_t;

static void *rt_spin(void *arg) {
  rt_spin_t *sp = arg;
  tgvl_pin(sp->cpu);
  CHECK_OK(ks_set_self(sp->ks));
  atomic_store(sp->stage, 2);
  uint64_t end = gvl_now_ns() + 10000000000ull;
  while (atomic_load(sp->stage) < 3 && gvl_now_ns() < end) {
  }
  int two = 2;
  atomic_compare_exchange_strong(sp->stage, &two, 4);
  return NULL;
}

static void *tb_booster(void *arg) {
  tgvl_pin(tb_cpu[0]);
  booster_t b = {.ks = FIFO2};
  (void)booster(&b);
  return arg;
}

static void *tb_region(void *arg) {
  pthread_t *th = arg;
  /* The GVL is granted to the waiter, revocably: the booster queues above
   * it, so it lends the waiter its SCHED_FIFO 2. */
  tgvl_spawn(th, tb_booster, NULL);
  while (tgvl_stats(g).lends < 1) tgvl_sleep_us(100);
  CHECK(ks_eq(ks_get(tb_wtid), lent_as(OTHER0, FIFO2)));
  return arg;
}

static void take_back(void) {
  tgvl_two_cpus(tb_cpu);
  gvl_config_t c = {0};
  c.flags = GVL_F_LEND | GVL_F_NOSPIN | GVL_F_NOINTERACTIVE;
  c.slice_ns = 3600ull * 1000000000ull;
  c.hook = tgvl_hook;
  c.hook_arg = &tb_log;
  tgvl_log_reset(&tb_log);
  CHECK(g = gvl_create(&c));
  tgvl_pin(tb_cpu[0]);
  gvl_thread_t *h = gvl_thread_attach(g, GVL_PRIO_NORMAL);
  CHECK(h);
  CHECK_OK(gvl_acquire(h));
  pthread_t w, sp, b;
  tgvl_spawn(&w, tb_waiter, NULL);
  while (tgvl_count(&tb_log, GVL_EV_READY) < 1) tgvl_sleep_us(100);
  rt_spin_t spin = {tb_cpu[1], FIFO3, &tb_stage};
  tgvl_spawn(&sp, rt_spin, &spin);
  while (atomic_load(&tb_stage) < 2) tgvl_sleep_us(100);
  CHECK(gvl_call_without(h, tb_region, &b, NULL, NULL) == &b);
  /* Taken back: the waiter is queued again, with its own scheduling. */
  CHECK_EQ(tgvl_tstats(h).retakes, 1);
  CHECK(ks_eq(ks_get(tb_wtid), OTHER0));
  atomic_store(&tb_stage, 3);
  CHECK_OK(gvl_release(h));           /* to the booster, then the waiter */
  tgvl_join(b);
  tgvl_join(sp);
  tgvl_join(w);
  CHECK_EQ(tgvl_stats(g).lends, 1);
  CHECK_OK(gvl_thread_detach(h));
  CHECK_OK(gvl_destroy(g));
}

/* ---- a lend to a holder preempted in its own restore ------------------- */

static const ks_t FIFO5 = {SCHED_FIFO, 5, 0}, FIFO10 = {SCHED_FIFO, 10, 0};
static int rl_cpu[2];                 /* the holder's and the booster's */
static atomic_int rl_stage;   /* 1: holding; 2: the hog runs; 3: stop;
                                 4: the hog stopped by itself, 10 s on */

/* SCHED_OTHER on the hog's CPU: it runs only while lent. */
static void *rl_holder(void *arg) {
  tgvl_pin(rl_cpu[0]);
  gvl_thread_t *t = gvl_thread_attach(g, GVL_PRIO_NORMAL);
  CHECK(t);
  CHECK_OK(gvl_acquire(t));
  atomic_store(&rl_stage, 1);
  while (atomic_load(&rl_stage) < 3) {
    tgvl_work(1);
    CHECK_OK(gvl_check_ints(t));
  }
  CHECK_OK(gvl_release(t));
  CHECK_OK(gvl_thread_detach(t));
  return arg;
}

/* The holder answers a SCHED_FIFO 10 booster's lend and restores its own
 * scheduling, which lets the hog preempt it at once, in the middle of its
 * restore; the booster's release gives it the GVL back all the same (it
 * was queued).  The booster's second boost must lend again, or the holder
 * waits for the hog: two boosts, two lends.  On one CPU the three share
 * it, with the same order. */
static void relend(void) {
  cpu_set_t set;
  CHECK_OK(sched_getaffinity(0, sizeof set, &set));
  for (int i = 0, n = 0; n < 2 && i < CPU_SETSIZE; i++)
    if (CPU_ISSET(i, &set)) rl_cpu[n++] = i;
  if (CPU_COUNT(&set) < 2) rl_cpu[1] = rl_cpu[0];
  gvl_config_t c = {0};
  c.flags = GVL_F_LEND | GVL_F_NORETAKE | GVL_F_NOINTERACTIVE;
  c.slice_ns = 3600ull * 1000000000ull;
  CHECK(g = gvl_create(&c));
  atomic_store(&rl_stage, 0);
  tgvl_pin(rl_cpu[1]);
  pthread_t h, x;
  tgvl_spawn(&h, rl_holder, NULL);
  while (atomic_load(&rl_stage) < 1) tgvl_sleep_us(100);
  CHECK_OK(ks_set_self(FIFO10));   /* before the hog: it may share our CPU */
  rt_spin_t hog = {rl_cpu[0], FIFO5, &rl_stage};   /* beside the holder */
  tgvl_spawn(&x, rt_spin, &hog);
  while (atomic_load(&rl_stage) < 2) tgvl_sleep_us(100);
  gvl_thread_t *b = gvl_thread_attach(g, GVL_PRIO_NORMAL);
  CHECK(b);
  for (int i = 0; i < 2; i++) {
    CHECK_OK(gvl_acquire_prio(b, GVL_PRIO_BOOST));
    CHECK_OK(gvl_release(b));
  }
  CHECK_EQ(atomic_load(&rl_stage), 2);    /* the hog ran throughout */
  CHECK_EQ(tgvl_tstats(b).lends, 2);
  atomic_store(&rl_stage, 3);
  CHECK_OK(gvl_thread_detach(b));
  CHECK_OK(ks_set_self(OTHER0));
  tgvl_join(h);
  tgvl_join(x);
  CHECK_OK(gvl_destroy(g));
}

/* ---- the lend's own time is not spin ----------------------------------- */

#ifdef TGVL_LEND_WRAP
#include "gvl_int.h"

/* Every lend and restore goes through here (static link, --wrap): while
 * lt_slow is set, a lend takes LT_LEND_NS of busy time before it is made,
 * as a slow sched_setattr would. */
int __real_gvl__ksched_set(int tid, const gvl__ksched_t *s);
int __wrap_gvl__ksched_set(int tid, const gvl__ksched_t *s);
#define LT_SPIN_NS  (20ull * 1000000u)   /* the booster's spin_ns           */
#define LT_LEND_NS  (60ull * 1000000u)   /* one lend's time, > LT_SPIN_NS    */
#define LT_AFTER_NS (5ull * 1000000u)    /* holder's answer after the lend   */
static atomic_int lt_slow, lt_lent;

/* hammer_slow: each change of a hammer thread's scheduling takes a random
 * 0-200 us, asleep, so that lends, restores and take-backs overlap as they
 * would on a busy machine (two at once on one thread are counted). */
static atomic_int hs_on, hs_busy[HAMMER_THREADS], hs_overlaps;
static _Thread_local unsigned hs_seed = 1;

static int hs_slot(int tid) {
  for (int i = 0; i < HAMMER_THREADS; i++)
    if (atomic_load(&hammer_tids[i]) == tid) return i;
  return -1;
}

int __wrap_gvl__ksched_set(int tid, const gvl__ksched_t *s) {
  int i = atomic_load(&hs_on) ? hs_slot(tid) : -1;
  if (i >= 0) {
    if (atomic_fetch_add(&hs_busy[i], 1) != 0) atomic_fetch_add(&hs_overlaps, 1);
    tgvl_sleep_us(rnd(&hs_seed) % 200);
    int rc = __real_gvl__ksched_set(tid, s);
    atomic_fetch_sub(&hs_busy[i], 1);
    return rc;
  }
  if (atomic_exchange(&lt_slow, 0)) {
    uint64_t end = gvl_now_ns() + LT_LEND_NS;
    while (gvl_now_ns() < end) {
    }
    int rc = __real_gvl__ksched_set(tid, s);
    atomic_store(&lt_lent, 1);
    return rc;
  }
  return __real_gvl__ksched_set(tid, s);
}

/* The hammer with slow lends and restores: as in hammer, a thread that
 * does not hold the GVL has its own scheduling (and, under TSan, no two
 * of them race on the lend's state). */
static void hammer_slow(void) {
  atomic_store(&hs_on, 1);
  hammer();
  atomic_store(&hs_on, 0);
  fprintf(stderr, "  %d changes overlapped another of the same thread\n",
          atomic_load(&hs_overlaps));
}

static void *lt_booster(void *arg) {
  CHECK_OK(ks_set_self(FIFO1));
  gvl_thread_t *t = gvl_thread_attach(g, GVL_PRIO_NORMAL);
  CHECK(t);
  atomic_store(&lt_slow, 1);
  tgvl_parks_on = 1;
  CHECK_OK(gvl_acquire_prio(t, GVL_PRIO_BOOST));
  tgvl_parks_on = 0;
  CHECK_OK(gvl_release(t));
  CHECK_OK(gvl_thread_detach(t));
  return arg;
}

/* The holder, in native code without safe points, answers the booster only
 * LT_AFTER_NS after the lend is made: past spin_ns of the booster's wall
 * time (10 us of spin, the lend, then the answer), but well within spin_ns
 * of its spinning (10 us + LT_AFTER_NS).  The booster must take the grant
 * spinning.  (Before the lend's time was left out it slept in its GVL
 * wait.)  A booster spins only with two CPUs. */
static void lend_time(void) {
  int cpus[2];
  tgvl_two_cpus(cpus);
  gvl_config_t c = {0};
  c.flags = GVL_F_LEND | GVL_F_NOINTERACTIVE;
  c.spin_ns = LT_SPIN_NS;
  c.slice_ns = 3600ull * 1000000000ull;
  CHECK(g = gvl_create(&c));
  gvl_thread_t *h = gvl_thread_attach(g, GVL_PRIO_NORMAL);
  CHECK(h);
  CHECK_OK(gvl_acquire(h));
  pthread_t b;
  tgvl_spawn(&b, lt_booster, NULL);
  while (!atomic_load(&lt_lent)) {
  }
  uint64_t end = gvl_now_ns() + LT_AFTER_NS;
  while (gvl_now_ns() < end) {
  }
  CHECK_OK(gvl_check_ints(h));       /* hands over, and back */
  tgvl_join(b);
  CHECK_EQ(tgvl_stats(g).lends, 1);
  long parks = atomic_load(&tgvl_parks);
  CHECK_EQ(parks, 0);
  CHECK(ks_eq(ks_get(ktid()), OTHER0));
  CHECK_OK(gvl_release(h));
  CHECK_OK(gvl_thread_detach(h));
  CHECK_OK(gvl_destroy(g));
}
#endif

static const tgvl_case_t cases[] = {
#ifdef TGVL_LEND_WRAP
  {"lend_time", lend_time}, {"hammer_slow", hammer_slow},
#endif
  {"fifo", fifo}, {"off", off},   {"rank", rank},
  {"paths", paths}, {"fork", fork_lent}, {"multi", multi},
  {"child_thread", child_thread}, {"hammer", hammer},
  {"relend", relend},
  {"take_back", take_back},   /* last: it exits 77 on one CPU */
};

int main(int argc, char **argv) {
  tgvl_watchdog(120);
  /* Can this process change another thread's scheduling at all? */
  const ks_t fifo3 = {SCHED_FIFO, 3, 0}, nice_m5 = {SCHED_OTHER, 0, -5};
  int err = ks_set_self(fifo3);
  if (err == 0) err = ks_set_self(nice_m5);
  if (err != 0) {
    printf("skipped: SCHED_FIFO 3 and nice -5 refused (%s): they need CAP_SYS_NICE, "
           "and FIFO a real-time budget in this cgroup (cgroup v1: cpu.rt_runtime_us > 0)\n",
           strerror(err));
    return 77;
  }
  CHECK_OK(ks_set_self(OTHER0));
  return tgvl_run_cases(cases, sizeof cases / sizeof cases[0], argc, argv);
}
