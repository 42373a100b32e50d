/* SPDX-License-Identifier: MIT */
/*
 * tgvl.h -- small helpers shared by the libgvl unit tests.
 *
 * CHECK macros print file:line and the failed expression, then end the
 * process with _exit(1).  _exit and not exit: other threads may still be
 * inside the GVL, and running atexit handlers under them only adds noise to
 * a failure that is already reported.
 *
 * tgvl_watchdog() arms alarm() so that a deadlock fails the test with a
 * message instead of hanging until ctest's TIMEOUT.  TGVL_SLOW (set by the
 * CMake file for valgrind and sanitizer runs) multiplies every watchdog and
 * divides the iteration counts of the long tests.
 *
 * Everything here is static inline so that each test uses only what it needs
 * without unused-function warnings.
 */
#ifndef TGVL_H
#define TGVL_H

#include "gvl.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>

#if defined(__SANITIZE_THREAD__)
#define TGVL_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define TGVL_TSAN 1
#endif
#endif
#ifndef TGVL_TSAN
#define TGVL_TSAN 0
#endif

/* ---- failing ------------------------------------------------------------ */

static inline void tgvl_fail(const char *file, int line, const char *what) {
  fprintf(stderr, "%s:%d: CHECK failed: %s\n", file, line, what);
  fflush(stderr);
  _exit(1);
}

static inline void tgvl_fail_eq(const char *file, int line, const char *a,
                                const char *b, long long va, long long vb) {
  fprintf(stderr, "%s:%d: CHECK failed: %s == %s (%lld vs %lld)\n", file,
          line, a, b, va, vb);
  fflush(stderr);
  _exit(1);
}

#define CHECK(c)                                                           \
  do {                                                                     \
    if (!(c)) tgvl_fail(__FILE__, __LINE__, #c);                           \
  } while (0)

#define TGVL_CMP_(a, op, b)                                                \
  do {                                                                     \
    long long tgvl_va_ = (long long)(a), tgvl_vb_ = (long long)(b);        \
    if (!(tgvl_va_ op tgvl_vb_))                                           \
      tgvl_fail_eq(__FILE__, __LINE__, #a, #b " (" #op ")", tgvl_va_,      \
                   tgvl_vb_);                                              \
  } while (0)

#define CHECK_EQ(a, b) TGVL_CMP_(a, ==, b)
#define CHECK_NE(a, b) TGVL_CMP_(a, !=, b)
#define CHECK_GE(a, b) TGVL_CMP_(a, >=, b)
#define CHECK_LE(a, b) TGVL_CMP_(a, <=, b)
#define CHECK_GT(a, b) TGVL_CMP_(a, >, b)
#define CHECK_LT(a, b) TGVL_CMP_(a, <, b)
#define CHECK_OK(e) CHECK_EQ((e), 0)

/* A call that returns NULL and sets errno (gvl_thread_attach,
 * gvl_call_without, gvl_call_with, gvl_create). */
#define CHECK_NULL_ERRNO(expr, code)                                       \
  do {                                                                     \
    errno = 0;                                                             \
    CHECK((expr) == NULL);                                                 \
    CHECK_EQ(errno, (code));                                               \
  } while (0)

/* ---- timing helpers (never asserted on) ---------------------------------- */

static inline int tgvl_slow(void) {
  const char *s = getenv("TGVL_SLOW");
  int v = s ? atoi(s) : 1;
  return v > 0 ? v : 1;
}

static inline void tgvl_sleep_us(long us) {
  struct timespec ts = {us / 1000000, (us % 1000000) * 1000};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

static inline void tgvl_alarm_handler_(int sig) {
  static const char msg[] = "watchdog: test did not finish in time\n";
  (void)sig;
  ssize_t r = write(2, msg, sizeof msg - 1);
  (void)r;
  _exit(3);
}

/* Fail the whole process if it is still running after `seconds`
 * (times TGVL_SLOW).  Call again in a forked child: alarms do not survive
 * fork. */
static inline void tgvl_watchdog(unsigned seconds) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = tgvl_alarm_handler_;
  sigemptyset(&sa.sa_mask);
  CHECK_OK(sigaction(SIGALRM, &sa, NULL));
  alarm(seconds * (unsigned)tgvl_slow());
}

/* Wait (polling, bounded only by the watchdog) until *v >= target. */
static inline void tgvl_wait_ge(atomic_uint *v, unsigned target) {
  while (atomic_load(v) < target) tgvl_sleep_us(100);
}

#ifdef __linux__
/* Pin the calling thread to one CPU (threads it starts inherit that). */
static inline void tgvl_pin(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  CHECK_OK(pthread_setaffinity_np(pthread_self(), sizeof set, &set));
}

/* The first two CPUs the calling thread may run on, into cpus[]; where
 * there is only one, the case cannot run: exit 77 (ctest: skipped). */
static inline void tgvl_two_cpus(int cpus[2]) {
  cpu_set_t set;
  CHECK_OK(sched_getaffinity(0, sizeof set, &set));
  if (CPU_COUNT(&set) < 2) {
    printf("skipped: needs two CPUs\n");
    exit(77);
  }
  for (int i = 0, n = 0; n < 2; i++)
    if (CPU_ISSET(i, &set)) cpus[n++] = i;
}

#ifdef TGVL_PARK_WRAP
#include "gvl_int.h"
/* Static links with -Wl,--wrap=gvl__park_wait: how often a thread slept in
 * the GVL's own waits (a waiter whose spin ran out), counted while
 * tgvl_parks_on is set on it.  Unlike its voluntary context switches, this
 * leaves out sleeps that are not the GVL's (a lock of a sanitizer's
 * runtime, a page fault on a loaded machine). */
void __real_gvl__park_wait(gvl__park_t *p, uint32_t seq, uint64_t deadline_ns);
void __wrap_gvl__park_wait(gvl__park_t *p, uint32_t seq, uint64_t deadline_ns);
static _Thread_local int tgvl_parks_on;
static atomic_long tgvl_parks;
void __wrap_gvl__park_wait(gvl__park_t *p, uint32_t seq, uint64_t deadline_ns) {
  if (tgvl_parks_on) atomic_fetch_add(&tgvl_parks, 1);
  __real_gvl__park_wait(p, seq, deadline_ns);
}
#endif

/* A thread's sleeps so far: its voluntary context switches in /proc. */
static inline long tgvl_task_sleeps(int tid) {
  char path[64], line[128];
  long v = -1;
  snprintf(path, sizeof path, "/proc/self/task/%d/status", tid);
  FILE *f = fopen(path, "r");
  CHECK(f != NULL);
  while (fgets(line, sizeof line, f))
    if (sscanf(line, "voluntary_ctxt_switches: %ld", &v) == 1) break;
  fclose(f);
  CHECK_GE(v, 0);
  return v;
}

/* A thread's state letter in /proc (R running, S sleeping, ...). */
static inline char tgvl_thread_state(int tid) {
  char path[64], buf[256], *p;
  FILE *f;
  snprintf(path, sizeof path, "/proc/self/task/%d/stat", tid);
  CHECK(f = fopen(path, "r"));
  CHECK(fgets(buf, sizeof buf, f) != NULL);
  fclose(f);
  p = strrchr(buf, ')');   /* the name may hold spaces */
  CHECK(p && p[1] == ' ');
  return p[2];
}
#endif

/* Wait for a forked child, which must exit 0. */
static inline void tgvl_wait_child(pid_t pid) {
  int st;
  CHECK(pid > 0);
  CHECK_EQ(waitpid(pid, &st, 0), pid);
  if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
    fprintf(stderr, "child status 0x%x\n", st);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
  }
}

static inline void tgvl_spawn(pthread_t *th, void *(*fn)(void *), void *arg) {
  CHECK_OK(pthread_create(th, NULL, fn, arg));
}

static inline void tgvl_join(pthread_t th) {
  CHECK_OK(pthread_join(th, NULL));
}

/* CPU work that the compiler cannot remove: roughly a microsecond per unit
 * on this machine, but only its amount of work matters to the tests. */
static inline void tgvl_work(unsigned units) {
  volatile unsigned x = 0;
  for (unsigned u = 0; u < units; u++)
    for (unsigned i = 0; i < 300; i++) x = x * 33u + i;
}

/* ---- hook recorder ------------------------------------------------------ */

#define TGVL_LOG_MAX 4096

typedef struct {
  gvl_thread_t *t;
  gvl_event_t ev;
  uint64_t ns;
  pthread_t self;
} tgvl_event_t;

typedef struct {
  atomic_uint count[8]; /* per gvl_event_t value */
  atomic_uint n;        /* entries claimed in ev[] (may exceed TGVL_LOG_MAX) */
  tgvl_event_t ev[TGVL_LOG_MAX];
} tgvl_log_t;

/* The hook: counts every event and keeps the first TGVL_LOG_MAX of them.
 * Entries are read only after the threads that wrote them were joined. */
static inline void tgvl_hook(void *arg, gvl_thread_t *t, gvl_event_t ev,
                      uint64_t now_ns) {
  tgvl_log_t *log = arg;
  if ((unsigned)ev < 8) atomic_fetch_add(&log->count[ev], 1);
  unsigned i = atomic_fetch_add(&log->n, 1);
  if (i < TGVL_LOG_MAX) {
    log->ev[i].t = t;
    log->ev[i].ev = ev;
    log->ev[i].ns = now_ns;
    log->ev[i].self = pthread_self();
  }
}

static inline void tgvl_log_reset(tgvl_log_t *log) {
  for (int i = 0; i < 8; i++) atomic_store(&log->count[i], 0);
  atomic_store(&log->n, 0);
}

static inline unsigned tgvl_count(tgvl_log_t *log, gvl_event_t ev) {
  return atomic_load(&log->count[ev]);
}

/* A config with the given slice whose other knobs cannot reorder waiters:
 * aging is pushed out of reach, the interactivity policy is off and the
 * boost cap is 100% (unless a test sets it). */
static inline gvl_config_t tgvl_strict_config(uint64_t slice_ns,
                                              tgvl_log_t *log) {
  gvl_config_t c;
  memset(&c, 0, sizeof c);
  c.slice_ns = slice_ns;
  c.boost_cap_pct = 100;
  c.age_ns = 3600ull * 1000000000ull;
  c.flags = GVL_F_NOINTERACTIVE;
  if (log) {
    c.hook = tgvl_hook;
    c.hook_arg = log;
  }
  return c;
}

#define TGVL_HOUR_NS (3600ull * 1000000000ull)

/* The usual start of a case: *gp made from cfg with its log (if any)
 * emptied, the calling thread attached at priority 0 and holding at prio.
 * Returns the caller's handle. */
static inline gvl_thread_t *tgvl_start_holding(gvl_t **gp,
                                               const gvl_config_t *cfg,
                                               int prio) {
  if (cfg->hook == tgvl_hook) tgvl_log_reset((tgvl_log_t *)cfg->hook_arg);
  *gp = gvl_create(cfg);
  CHECK(*gp != NULL);
  gvl_thread_t *me = gvl_thread_attach(*gp, 0);
  CHECK(me != NULL);
  CHECK_OK(prio ? gvl_acquire_prio(me, prio) : gvl_acquire(me));
  return me;
}

static inline gvl_stats_t tgvl_stats(gvl_t *g) {
  gvl_stats_t s;
  CHECK_OK(gvl_stats(g, &s));
  return s;
}

static inline gvl_stats_t tgvl_tstats(gvl_thread_t *t) {
  gvl_stats_t s;
  CHECK_OK(gvl_thread_stats(t, &s));
  return s;
}

/* Programs made of named cases, one ctest per case: run the case named by
 * argv[1], or every case without an argument; prints "ok" when done. */
typedef struct {
  const char *name;
  void (*fn)(void);
} tgvl_case_t;

static inline int tgvl_run_cases(const tgvl_case_t *cases, size_t n,
                                 int argc, char **argv) {
  int ran = 0;
  for (size_t i = 0; i < n; i++) {
    if (argc > 1 && strcmp(argv[1], cases[i].name) != 0) continue;
    fprintf(stderr, "%s\n", cases[i].name);
    cases[i].fn();
    ran++;
  }
  CHECK_GT(ran, 0);
  puts("ok");
  return 0;
}

#endif /* TGVL_H */
