/* SPDX-License-Identifier: MIT */
/*
 * soak: the demo workload for N seconds, reporting handoffs, latency and
 * memory growth.  Not a ctest test (it runs for minutes): the `soak` target
 * runs it, see tests/faults/CMakeLists.txt and RELIABILITY.md.
 *
 *   soak [seconds]            (default: $SOAK_SECONDS, else 300)
 *
 * Workload, all at once:
 *   - 2 hogs: CPU-bound interpreter threads holding the GVL, passing safe
 *     points;
 *   - boosted events: a thread that takes the GVL with gvl_acquire_prio
 *     (GVL_PRIO_BOOST) 1000 times a second and measures the wait;
 *   - evloop traffic, dispatched boosted (EVL_PRIO_BOOST, as a GUI host
 *     sets it; at normal priority the loop would wait out the hogs' slices
 *     and the ticker's posts pile up): a 1 kHz ticker posting stamped
 *     callbacks (latency from evl_post to the callback's start, under the
 *     hogs), two posting threads
 *     with exact accounting, a pipe ping-pong through an fd watch, pool work,
 *     whole-file reads, and timers made and cancelled;
 *   - with tkbridge (built with it, and a display or Xvfb): evals from two
 *     threads into a Tk interpreter that creates and destroys widgets, and a
 *     host command called from Tcl.
 * Every 10 s a line: handoffs, boosts, max latencies, RSS.  At the end: a
 * summary; RSS growth is measured from the end of the first tenth of the
 * run (warm-up: pools, caches) to the end.  Exit 1 if any accounting is
 * off (a lost or doubled callback), 0 otherwise.
 */
#include <fcntl.h>

#include "flt.h"
#ifdef SOAK_WITH_TK
#include "tkbridge.h"
#endif

static gvl_t *g;
static evl_t *l;
static atomic_int stop_all;
static uint64_t t_start, t_end;

/* ---- latency histograms (log2 buckets in ns, plus max) ------------------- */

typedef struct {
  atomic_ulong n, max, sum;
  atomic_ulong imax;        /* max since the last report line */
  atomic_ulong bucket[48];
} hist_t;

static void hist_add(hist_t *h, uint64_t ns) {
  unsigned b = 0;
  uint64_t v = ns, m;
  while (v > 1 && b < 47) {
    v >>= 1;
    b++;
  }
  atomic_fetch_add(&h->bucket[b], 1);
  atomic_fetch_add(&h->n, 1);
  atomic_fetch_add(&h->sum, ns);
  m = atomic_load(&h->max);
  while (ns > m && !atomic_compare_exchange_weak(&h->max, &m, ns)) {
  }
  m = atomic_load(&h->imax);
  while (ns > m && !atomic_compare_exchange_weak(&h->imax, &m, ns)) {
  }
}

/* Upper bound of the bucket holding the q-quantile. */
static uint64_t hist_q(hist_t *h, double q) {
  uint64_t n = atomic_load(&h->n), acc = 0, want = (uint64_t)(q * (double)n);
  unsigned b;
  for (b = 0; b < 48; b++) {
    acc += atomic_load(&h->bucket[b]);
    if (acc > want) return 2ull << b;
  }
  return atomic_load(&h->max);
}

static hist_t lat_boost, lat_post;

/* ---- memory --------------------------------------------------------------------- */

static long rss_kb(void) {
  char buf[4096], *p;
  long kb = -1;
  int fd = open("/proc/self/status", O_RDONLY);
  ssize_t n;
  if (fd < 0) return -1;
  n = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (n <= 0) return -1;
  buf[n] = '\0';
  p = strstr(buf, "VmRSS:");
  if (p != NULL) kb = strtol(p + 6, NULL, 10);
  return kb;
}

/* ---- hogs and boosted events ------------------------------------------------- */

static atomic_ulong hog_units;

static void *hog_main(void *arg) {
  gvl_thread_t *t = gvl_thread_attach(g, 0);
  (void)arg;
  CHECK(t != NULL);
  CHECK_OK(gvl_acquire(t));
  while (!atomic_load(&stop_all)) {
    volatile unsigned x = 0;
    unsigned i;
    for (i = 0; i < 300; i++) x = x * 33u + i;
    atomic_fetch_add_explicit(&hog_units, 1, memory_order_relaxed);
    CHECK_OK(gvl_check_ints(t));
  }
  CHECK_OK(gvl_release(t));
  CHECK_OK(gvl_thread_detach(t));
  return NULL;
}

static void *booster_main(void *arg) {
  gvl_thread_t *t = gvl_thread_attach(g, 0);
  (void)arg;
  CHECK(t != NULL);
  while (!atomic_load(&stop_all)) {
    uint64_t t0 = gvl_now_ns();
    CHECK_OK(gvl_acquire_prio(t, GVL_PRIO_BOOST));
    hist_add(&lat_boost, gvl_now_ns() - t0);
    CHECK_OK(gvl_release(t));
    flt_sleep_us(1000);
  }
  CHECK_OK(gvl_thread_detach(t));
  return NULL;
}

/* ---- evloop traffic ---------------------------------------------------------------- */

static atomic_ulong posts_sent, posts_done, ticks_sent, ticks_done;
static atomic_ulong pings, works_sent, works_done, reads_sent, reads_done;
static atomic_ulong timers_made, timers_last, bad;

static void stamped_cb(evl_t *ll, void *arg, int status) {
  uint64_t t0 = (uint64_t)(uintptr_t)arg;
  if (status == 0) {
    if (!flt_holds(ll)) atomic_fetch_add(&bad, 1);
    hist_add(&lat_post, gvl_now_ns() - t0);
  }
  atomic_fetch_add(&ticks_done, 1);
}

static void *ticker_main(void *arg) {
  (void)arg;
  while (!atomic_load(&stop_all)) {
    if (evl_post(l, stamped_cb, (void *)(uintptr_t)gvl_now_ns(), NULL) == 0)
      atomic_fetch_add(&ticks_sent, 1);
    flt_sleep_us(1000);
  }
  return NULL;
}

static void count_cb(evl_t *ll, void *arg, int status) {
  (void)ll;
  (void)arg;
  if (status != 0 && status != ECANCELED) atomic_fetch_add(&bad, 1);
  atomic_fetch_add(&posts_done, 1);
}

static void *poster_main(void *arg) {
  (void)arg;
  while (!atomic_load(&stop_all)) {
    int i;
    for (i = 0; i < 4; i++) {
      if (evl_post_flags(l, count_cb, NULL, i % 8 == 0 ? EVL_F_NOGVL : 0,
                         NULL) == 0)
        atomic_fetch_add(&posts_sent, 1);
    }
    while (atomic_load(&posts_sent) - atomic_load(&posts_done) > 512 &&
           !atomic_load(&stop_all))
      flt_sleep_us(200);
    flt_sleep_us(1000);
  }
  return NULL;
}

static int ping[2], pong[2];

static void ping_cb(evl_t *ll, void *arg, int status, unsigned ev) {
  char c[64];
  (void)ll;
  (void)arg;
  (void)ev;
  if (status != 0) return;
  if (read(ping[0], c, sizeof c) > 0) {
    atomic_fetch_add(&pings, 1);
    if (write(pong[1], "o", 1) != 1) atomic_fetch_add(&bad, 1);
  }
}

static void *pinger_main(void *arg) {
  (void)arg;
  while (!atomic_load(&stop_all)) {
    char c;
    if (write(ping[1], "i", 1) != 1) break;
    /* Wait for the answer, but never past the stop. */
    while (read(pong[0], &c, 1) != 1) {
      if (atomic_load(&stop_all)) return NULL;
      flt_sleep_us(100);
    }
    flt_sleep_us(500);
  }
  return NULL;
}

static void work_fn(void *arg) {
  volatile unsigned x = 0;
  unsigned i;
  (void)arg;
  for (i = 0; i < 20000; i++) x += i;
}

static void work_cb(evl_t *ll, void *arg, int status) {
  (void)ll;
  (void)arg;
  if (status != 0 && status != ECANCELED) atomic_fetch_add(&bad, 1);
  atomic_fetch_add(&works_done, 1);
}

static void read_cb(evl_t *ll, void *arg, int status, char *d, size_t n) {
  (void)ll;
  (void)arg;
  (void)n;
  if (status != 0 && status != ECANCELED) atomic_fetch_add(&bad, 1);
  free(d);
  atomic_fetch_add(&reads_done, 1);
}

static void timer_cb(evl_t *ll, void *arg, int status) {
  (void)ll;
  (void)arg;
  if (status != 0) atomic_fetch_add(&timers_last, 1);
}

static void *misc_main(void *arg) {
  unsigned k = 0;
  (void)arg;
  while (!atomic_load(&stop_all)) {
    evl_id_t id;
    if (evl_work(l, work_fn, 0, work_cb, NULL, NULL) == 0)
      atomic_fetch_add(&works_sent, 1);
    if (k % 10 == 0 &&
        evl_read_file(l, "/proc/self/status", 0, 0, read_cb, NULL, NULL) == 0)
      atomic_fetch_add(&reads_sent, 1);
    /* A repeating timer that lives a few ms, then is cancelled. */
    if (evl_timer(l, 1, 1, 0, timer_cb, NULL, &id) == 0) {
      atomic_fetch_add(&timers_made, 1);
      flt_sleep_us(3000);
      if (evl_cancel(l, id) != 0) atomic_fetch_add(&bad, 1);
    }
    k++;
  }
  return NULL;
}

/* ---- Tk traffic ------------------------------------------------------------------- */

#ifdef SOAK_WITH_TK
static tkb_t *tk;
static atomic_ulong tk_evals, tk_cmds, tk_async_sent, tk_async_done;
static int tk_gui;

static int host_cmd(tkb_t *b, void *arg, int argc, const char *const *argv,
                    tkb_result_t *res) {
  (void)b;
  (void)arg;
  (void)argv;
  atomic_fetch_add(&tk_cmds, 1);
  return tkb_result_set(res, argc > 1 ? "args" : "none");
}

static void tk_done(tkb_t *b, int status, const char *result, void *arg) {
  (void)b;
  (void)result;
  (void)arg;
  if (status != 0 && status != ECANCELED) atomic_fetch_add(&bad, 1);
  atomic_fetch_add(&tk_async_done, 1);
}

static void *tk_main(void *arg) {
  long id = (long)(intptr_t)arg;
  unsigned k = 0;
  char script[256];
  while (!atomic_load(&stop_all)) {
    char *res = NULL;
    int r;
    if (tk_gui)
      snprintf(script, sizeof script,
               "catch {destroy .w%ld}; toplevel .w%ld; "
               "button .w%ld.b -text %u -command {soak_cmd x}; pack .w%ld.b; "
               "update idletasks; .w%ld.b invoke",
               id, id, id, k, id, id);
    else
      snprintf(script, sizeof script, "soak_cmd %u; set x%ld %u", k, id, k);
    r = tkb_eval(tk, script, &res);
    if (r != 0) {
      fprintf(stderr, "soak: tk eval failed (%d): %s\n", r, res ? res : "");
      atomic_fetch_add(&bad, 1);
    }
    free(res);
    atomic_fetch_add(&tk_evals, 1);
    if (tkb_eval_async(tk, "expr {1+1}", tk_done, NULL) == 0)
      atomic_fetch_add(&tk_async_sent, 1);
    k++;
    flt_sleep_us(2000);
  }
  return NULL;
}

static int tk_setup(gvl_t *gg) {
  evl_config_t ec;
  tkb_config_t tc;
  int r;
  memset(&ec, 0, sizeof ec);
  CHECK_OK(tkb_evl_config(&ec));
  ec.prio = EVL_PRIO_BOOST;
  l = evl_start(gg, &ec);
  CHECK(l != NULL);
  memset(&tc, 0, sizeof tc);
  tc.prio = TKB_PRIO_BOOST;
  tc.no_tk = getenv("DISPLAY") == NULL;
  r = tkb_start(l, &tc, &tk);
  if (r == ENOTSUP && !tc.no_tk) {
    tc.no_tk = 1;
    r = tkb_start(l, &tc, &tk);
  }
  CHECK_OK(r);
  tk_gui = !tc.no_tk;
  CHECK_OK(tkb_command_create(tk, "soak_cmd", host_cmd, NULL));
  return tk_gui;
}
#endif

/* ---- reporting ------------------------------------------------------------------- */

static void report_line(long rss0) {
  gvl_stats_t s;
  double el = (double)(gvl_now_ns() - t_start) / 1e9;
  CHECK_OK(gvl_stats(g, &s));
  /* Maxima of the last interval (the summary has the whole run's). */
  printf("[%6.0fs] handoffs %llu boosts %llu refused %llu | last 10 s: boost "
         "wait max %.1f us, post->cb max %.1f us | RSS %ld kB (%+ld)\n",
         el, (unsigned long long)s.handoffs, (unsigned long long)s.boosts,
         (unsigned long long)s.boosts_refused,
         (double)atomic_exchange(&lat_boost.imax, 0) / 1e3,
         (double)atomic_exchange(&lat_post.imax, 0) / 1e3, rss_kb(),
         rss0 >= 0 ? rss_kb() - rss0 : 0);
  fflush(stdout);
}

int main(int argc, char **argv) {
  const char *env = getenv("SOAK_SECONDS");
  long secs = argc > 1 ? atol(argv[1]) : env != NULL ? atol(env) : 300;
  pthread_t hogs[2], booster, ticker, posters[2], pinger, misc;
#ifdef SOAK_WITH_TK
  pthread_t tkth[2];
#endif
  long rss_start, rss_warm = -1, rss_half = -1, rss_end, rss_peak = 0, warm_at;
  gvl_stats_t s;
  evl_stats_t es;
  int i, failed = 0, with_tk = 0;
  if (secs <= 0) secs = 300;
  warm_at = secs / 10 > 5 ? secs / 10 : 5;
  flt_watchdog((unsigned)(secs + 300));
  signal(SIGPIPE, SIG_IGN);
  g = flt_gvl();
#ifdef SOAK_WITH_TK
  with_tk = 1;
  tk_setup(g);
#else
  evl_config_t ec = {.prio = EVL_PRIO_BOOST};
  l = evl_start(g, &ec);
  CHECK(l != NULL);
#endif
  CHECK_OK(pipe2(ping, O_NONBLOCK));
  CHECK_OK(pipe2(pong, O_NONBLOCK));
  CHECK_OK(evl_fd_watch(l, ping[0], EVL_READABLE, 0, ping_cb, NULL, NULL));
  rss_start = rss_kb();
  t_start = gvl_now_ns();
  printf("soak: %ld s; 2 hogs, 1 kHz boosted acquires, 1 kHz stamped posts, "
         "2 posters, pipe ping-pong, pool work, reads, timer churn%s\n",
         secs,
#ifdef SOAK_WITH_TK
         tk_gui ? ", Tk widgets from 2 threads" : ", Tcl evals from 2 threads (no display)"
#else
         ""
#endif
  );
  (void)with_tk;
  for (i = 0; i < 2; i++) flt_spawn(&hogs[i], hog_main, NULL);
  flt_spawn(&booster, booster_main, NULL);
  flt_spawn(&ticker, ticker_main, NULL);
  for (i = 0; i < 2; i++) flt_spawn(&posters[i], poster_main, NULL);
  flt_spawn(&pinger, pinger_main, NULL);
  flt_spawn(&misc, misc_main, NULL);
#ifdef SOAK_WITH_TK
  for (i = 0; i < 2; i++) flt_spawn(&tkth[i], tk_main, (void *)(intptr_t)i);
#endif
  for (i = 1; i <= secs; i++) {
    long r;
    flt_sleep_us(1000000);
    r = rss_kb();
    if (r > rss_peak) rss_peak = r;
    if (i == warm_at) rss_warm = r;
    if (i == secs / 2) rss_half = r;
    if (i % 10 == 0 || i == secs) report_line(rss_warm);
  }
  rss_end = rss_kb();
  atomic_store(&stop_all, 1);
  for (i = 0; i < 2; i++) flt_join(hogs[i]);
  flt_join(booster);
  flt_join(ticker);
  for (i = 0; i < 2; i++) flt_join(posters[i]);
  flt_join(pinger);
  flt_join(misc);
#ifdef SOAK_WITH_TK
  for (i = 0; i < 2; i++) flt_join(tkth[i]);
  CHECK_OK(tkb_destroy(tk));
#endif
  t_end = gvl_now_ns();
  CHECK_OK(evl_stop(l));
  CHECK_OK(evl_stats(l, &es));
  CHECK_OK(gvl_stats(g, &s));
  CHECK_OK(evl_destroy(l));
  CHECK_OK(gvl_destroy(g));

  printf("\nsoak summary (%.0f s)\n", (double)(t_end - t_start) / 1e9);
  printf("  GVL: %llu acquisitions, %llu handoffs, %llu preemptions, %llu "
         "boosts (%llu refused by the cap)\n",
         (unsigned long long)s.acquires, (unsigned long long)s.handoffs,
         (unsigned long long)s.preemptions, (unsigned long long)s.boosts,
         (unsigned long long)s.boosts_refused);
  printf("  boosted acquire wait: n=%lu p50<%.1f us p99<%.1f us max %.1f us\n",
         atomic_load(&lat_boost.n), (double)hist_q(&lat_boost, 0.5) / 1e3,
         (double)hist_q(&lat_boost, 0.99) / 1e3,
         (double)atomic_load(&lat_boost.max) / 1e3);
  printf("  evl_post -> callback: n=%lu p50<%.1f us p99<%.1f us max %.1f us\n",
         atomic_load(&lat_post.n), (double)hist_q(&lat_post, 0.5) / 1e3,
         (double)hist_q(&lat_post, 0.99) / 1e3,
         (double)atomic_load(&lat_post.max) / 1e3);
  printf("  hog work units: %lu\n", atomic_load(&hog_units));
  printf("  evloop: %llu dispatched, %llu cancelled, %llu errors, live %llu; "
         "posts %lu/%lu, stamped %lu/%lu, pings %lu, work %lu/%lu, reads "
         "%lu/%lu, timers %lu/%lu\n",
         (unsigned long long)es.dispatched, (unsigned long long)es.cancelled,
         (unsigned long long)es.errors, (unsigned long long)es.live,
         atomic_load(&posts_done), atomic_load(&posts_sent),
         atomic_load(&ticks_done), atomic_load(&ticks_sent),
         atomic_load(&pings), atomic_load(&works_done),
         atomic_load(&works_sent), atomic_load(&reads_done),
         atomic_load(&reads_sent), atomic_load(&timers_last),
         atomic_load(&timers_made));
#ifdef SOAK_WITH_TK
  printf("  tk (%s): %lu evals, %lu host command calls, async %lu/%lu\n",
         tk_gui ? "Tk widgets" : "Tcl only", atomic_load(&tk_evals),
         atomic_load(&tk_cmds), atomic_load(&tk_async_done),
         atomic_load(&tk_async_sent));
  if (atomic_load(&tk_async_done) != atomic_load(&tk_async_sent)) failed = 1;
#endif
  printf("  RSS: %ld kB at start, %ld kB after warm-up (%ld s), %ld kB at "
         "half time, %ld kB at the end, peak %ld kB; growth after warm-up "
         "%+ld kB, over the second half %+ld kB\n",
         rss_start, rss_warm, warm_at, rss_half, rss_end, rss_peak,
         rss_end - rss_warm, rss_end - rss_half);
  if (atomic_load(&posts_done) != atomic_load(&posts_sent) ||
      atomic_load(&ticks_done) != atomic_load(&ticks_sent) ||
      atomic_load(&works_done) != atomic_load(&works_sent) ||
      atomic_load(&reads_done) != atomic_load(&reads_sent) ||
      atomic_load(&timers_last) != atomic_load(&timers_made) ||
      es.live != 0 || es.errors != 0 || atomic_load(&bad) != 0)
    failed = 1;
  printf("  accounting: %s\n", failed ? "FAILED" : "exact (nothing lost, nothing doubled)");
  close(ping[0]);
  close(ping[1]);
  close(pong[0]);
  close(pong[1]);
  return failed;
}
