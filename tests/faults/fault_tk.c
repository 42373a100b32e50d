/* SPDX-License-Identifier: MIT */
/*
 * Tcl/Tk faults on the bridge, one case per process (argv[1]):
 *   tcl_errors      errors from scripts, host commands, async evals and
 *                   background events (after, bindings) reach the right
 *                   place: TKB_ETCL with the message, the done callback,
 *                   the bridge's error callback; the bridge keeps working.
 *   exit_cmd        a host `exit` (as gvwish has) called from an `after`
 *                   callback stops the bridge while other threads have
 *                   evals pending: each gets 0 or ECANCELED, none hangs.
 *   tcl_exit        Tcl's own `exit 7` inside a callback while hogs and
 *                   evaluating threads run: the process ends with status 7
 *                   (run in a child; a crash or hang fails).
 *   destroy_pending windows destroyed and re-made while 4 threads keep
 *                   evals (sync and async) on them in flight: each eval
 *                   ends 0 or TKB_ETCL, each async completes exactly once.
 *   destroy_main    `destroy .` while evals are pending: no crash, every
 *                   call ends, the bridge shuts down cleanly.
 *   stop_pending    tkb_destroy from one thread while 4 others are blocked
 *                   in tkb_eval, queued behind a script held at a gate
 *                   until the destroy cancels it (and make no call after).
 * GUI cases need a display (run_x.sh starts Xvfb).
 */
#include <sys/wait.h>

#include <tcl.h>

#include "flt.h"
#include "tkbridge.h"

typedef struct {
  gvl_t *g;
  evl_t *l;
  tkb_t *tk;
} fx_t;

static atomic_long bg_count;
static char bg_last[256];
static pthread_mutex_t bg_mu = PTHREAD_MUTEX_INITIALIZER;

static void on_bg(tkb_t *tk, const char *msg, void *arg) {
  (void)tk;
  (void)arg;
  pthread_mutex_lock(&bg_mu);
  snprintf(bg_last, sizeof bg_last, "%s", msg != NULL ? msg : "");
  pthread_mutex_unlock(&bg_mu);
  atomic_fetch_add(&bg_count, 1);
}

static void fx_start(fx_t *f, int no_tk) {
  evl_config_t ec;
  tkb_config_t tc;
  int r;
  memset(&ec, 0, sizeof ec);
  memset(&tc, 0, sizeof tc);
  f->g = flt_gvl();
  CHECK_OK(tkb_evl_config(&ec));
  f->l = evl_start(f->g, &ec);
  CHECK(f->l != NULL);
  tc.no_tk = no_tk;
  tc.on_error = on_bg;
  r = tkb_start(f->l, &tc, &f->tk);
  /* Tk_Init failed: no display.  Not the refusal of Tk on a new loop thread
   * (each case is one process, with Tk on one thread): that is a failure. */
  if (r == ENOTSUP && strstr(tkb_errmsg(), "new thread") == NULL) {
    printf("no display: skipped\n");
    exit(77);
  }
  CHECK_OK(r);
}

static void fx_stop(fx_t *f) {
  if (f->tk != NULL) CHECK_OK(tkb_destroy(f->tk));
  CHECK_OK(evl_destroy(f->l));
  CHECK_OK(gvl_destroy(f->g));
}

static int eval_str(tkb_t *tk, const char *script, char *out, size_t n) {
  char *res = NULL;
  int r = tkb_eval(tk, script, &res);
  if (out != NULL) snprintf(out, n, "%s", res != NULL ? res : "");
  free(res);
  return r;
}

/* ---- tcl_errors ------------------------------------------------------------- */

static int failing_cmd(tkb_t *tk, void *arg, int argc, const char *const *argv,
                       tkb_result_t *res) {
  (void)tk;
  (void)arg;
  CHECK(gvl_thread_holds(evl_gvl_thread(tkb_evl(tk))));
  if (argc > 1 && strcmp(argv[1], "msg") == 0) {
    CHECK_OK(tkb_result_set(res, "host says no"));
    return EIO;
  }
  return EINVAL;   /* no message: the tkb_strerror text */
}

static atomic_long async_done, async_etcl;
static void done_cb(tkb_t *tk, int status, const char *result, void *arg) {
  (void)tk;
  (void)arg;
  CHECK(result != NULL);
  if (status == TKB_ETCL) {
    CHECK(strstr(result, "async boom") != NULL);
    atomic_fetch_add(&async_etcl, 1);
  }
  atomic_fetch_add(&async_done, 1);
}

static void case_tcl_errors(void) {
  fx_t f;
  char out[512];
  fx_start(&f, 0);
  CHECK_EQ(eval_str(f.tk, "error boom", out, sizeof out), TKB_ETCL);
  CHECK(strcmp(out, "boom") == 0);
  CHECK_OK(tkb_command_create(f.tk, "hostfail", failing_cmd, NULL));
  CHECK_EQ(eval_str(f.tk, "hostfail msg", out, sizeof out), TKB_ETCL);
  CHECK(strstr(out, "host says no") != NULL);
  CHECK_EQ(eval_str(f.tk, "hostfail", out, sizeof out), TKB_ETCL);
  CHECK(out[0] != '\0');
  /* catch sees the host error like any Tcl error. */
  CHECK_OK(eval_str(f.tk, "catch {hostfail msg} m; set m", out, sizeof out));
  CHECK(strstr(out, "host says no") != NULL);
  /* Async errors go to the done callback. */
  CHECK_OK(tkb_eval_async(f.tk, "error {async boom}", done_cb, NULL));
  CHECK_OK(tkb_eval_async(f.tk, "set ok 1", done_cb, NULL));
  flt_wait_ge(&async_done, 2);
  CHECK_EQ(atomic_load(&async_etcl), 1);
  /* Background errors: an after script, a host command failing in an after
   * script, and in a binding.  Each reaches the host's callback, then the
   * ::bgerror proc.  (Without a ::bgerror proc Tk's default is its modal
   * error dialog, which holds back every later report until dismissed.) */
  CHECK_OK(eval_str(f.tk, "set seen {}; proc bgerror {m} {lappend ::seen $m}",
                    NULL, 0));
  CHECK_OK(eval_str(f.tk, "after 0 {error {bg one}}", NULL, 0));
  flt_wait_ge(&bg_count, 1);
  pthread_mutex_lock(&bg_mu);
  CHECK(strstr(bg_last, "bg one") != NULL);
  pthread_mutex_unlock(&bg_mu);
  CHECK_OK(eval_str(f.tk, "after 0 {hostfail msg}", NULL, 0));
  flt_wait_ge(&bg_count, 2);
  CHECK_OK(eval_str(f.tk,
                    "button .b -text x; pack .b; update; "
                    "bind .b <<Boom>> {hostfail msg}; "
                    "event generate .b <<Boom>> -when tail",
                    NULL, 0));
  flt_wait_ge(&bg_count, 3);
  pthread_mutex_lock(&bg_mu);
  CHECK(strstr(bg_last, "host says no") != NULL);
  pthread_mutex_unlock(&bg_mu);
  for (;;) {
    CHECK_OK(eval_str(f.tk, "llength $seen", out, sizeof out));
    if (strcmp(out, "3") == 0) break;
    flt_sleep_us(1000);
  }
  CHECK_OK(eval_str(f.tk, "lindex $seen 0", out, sizeof out));
  CHECK(strcmp(out, "bg one") == 0);
  /* Still alive. */
  CHECK_OK(eval_str(f.tk, "expr {6*7}", out, sizeof out));
  CHECK(strcmp(out, "42") == 0);
  {
    tkb_stats_t st;
    CHECK_OK(tkb_stats(f.tk, &st));
    CHECK_GE(st.bg_errors, 3);
    CHECK_GE(st.cmd_errors, 4);
  }
  fx_stop(&f);
}

/* ---- exit_cmd / stop_pending ---------------------------------------------------- */

typedef struct {
  tkb_t *tk;
  const char *script;
  atomic_long calls, ok, cancelled, etcl, other;
  atomic_long async_sent, async_done;
  int forever;
  atomic_int *closed;   /* set before tkb_destroy: make no further call */
  atomic_int in_call;   /* 1 from just before a tkb_eval until it returns */
} evaler_t;

static int evaler_closed(evaler_t *e) {
  return e->closed && atomic_load(e->closed);
}

static void evaler_done(tkb_t *tk, int status, const char *result, void *arg) {
  evaler_t *e = arg;
  (void)tk;
  (void)result;
  if (status != 0 && status != ECANCELED && status != TKB_ETCL)
    atomic_fetch_add(&e->other, 1);
  atomic_fetch_add(&e->async_done, 1);
}

/* Evaluates until its call is cancelled.  Where another thread destroys
 * the bridge (e->closed), tk must not be used once that may have happened
 * (tkbridge.h, tkb_destroy): the closed flag is checked before every call;
 * a call already made when it is set is one the destroy finds pending. */
static void *evaler_main(void *arg) {
  evaler_t *e = arg;
  for (;;) {
    if (evaler_closed(e)) break;
    atomic_store(&e->in_call, 1);
    int r = tkb_eval(e->tk, e->script, NULL);
    atomic_store(&e->in_call, 0);
    atomic_fetch_add(&e->calls, 1);
    if (r == 0) atomic_fetch_add(&e->ok, 1);
    else if (r == ECANCELED) atomic_fetch_add(&e->cancelled, 1);
    else if (r == TKB_ETCL) atomic_fetch_add(&e->etcl, 1);
    else atomic_fetch_add(&e->other, 1);
    if (evaler_closed(e)) break;
    if (tkb_eval_async(e->tk, e->script, evaler_done, e) == 0)
      atomic_fetch_add(&e->async_sent, 1);
    if (r == ECANCELED && !e->forever) break;
    if (r == ECANCELED) flt_sleep_us(1000);
    if (e->forever && atomic_load(&e->calls) > 100000) break;
  }
  return NULL;
}

static int exit_cmd(tkb_t *tk, void *arg, int argc, const char *const *argv,
                    tkb_result_t *res) {
  (void)arg;
  (void)argc;
  (void)argv;
  (void)res;
  /* From the loop thread this only starts the teardown. */
  CHECK_OK(tkb_stop(tk));
  return 0;
}

/* `gate`: once armed, holds the loop thread until the bridge's stop has
 * cancelled the running script (tkb_destroy does that first, with
 * Tcl_CancelEval), so the
 * calls queued behind it are still pending when the destroy comes, on a
 * slow machine too.  A gate never opened fails the case. */
static atomic_int gate_armed, gate_in;

static int gate_cmd(tkb_t *tk, void *arg, int argc, const char *const *argv,
                    tkb_result_t *res) {
  (void)arg;
  (void)argc;
  (void)argv;
  (void)res;
  if (!atomic_load(&gate_armed)) return 0;
  atomic_store(&gate_in, 1);
  Tcl_Interp *ip = tkb_interp(tk);
  for (long i = 0; Tcl_Canceled(ip, 0) != TCL_ERROR; i++) {
    CHECK(i < 60000L * flt_slow());
    flt_sleep_us(1000);
    /* Tcl_CancelEval from another thread marks an async handler; it
     * sets the cancel flag when run, as Tcl's own loops do. */
    if (Tcl_AsyncReady()) (void)Tcl_AsyncInvoke(ip, TCL_OK);
  }
  return 0;
}

static void run_evalers(fx_t *f, const char *script, const char *killer,
                        int use_destroy) {
  evaler_t e[4];
  pthread_t th[4];
  atomic_int closed = 0;
  long cancelled = 0;
  int i;
  memset(e, 0, sizeof e);
  for (i = 0; i < 4; i++) {
    e[i].tk = f->tk;
    e[i].script = script;
    e[i].closed = use_destroy ? &closed : NULL;
    flt_spawn(&th[i], evaler_main, &e[i]);
  }
  for (i = 0; i < 4; i++)
    while (atomic_load(&e[i].calls) < 3) flt_sleep_us(1000);
  if (killer != NULL) {
    CHECK_OK(eval_str(f->tk, killer, NULL, 0));
  } else if (use_destroy) {
    /* The gate holds the loop thread; every evaler then ends up in a
     * tkb_eval, all but at most one of them queued behind the gate. */
    atomic_store(&gate_armed, 1);
    for (long n = 0;; n++) {
      int in = 0;
      for (i = 0; i < 4; i++) in += atomic_load(&e[i].in_call);
      if (atomic_load(&gate_in) && in == 4) break;
      CHECK(n < 60000L * flt_slow());
      flt_sleep_us(1000);
    }
    /* No call starts from here on (each evaler is inside its call). */
    atomic_store(&closed, 1);
    CHECK_OK(tkb_destroy(f->tk));
    f->tk = NULL;
  }
  for (i = 0; i < 4; i++) flt_join(th[i]);
  if (f->tk != NULL) {
    /* After the stop every call fails with ECANCELED at once. */
    CHECK_EQ(tkb_eval(f->tk, "set x 1", NULL), ECANCELED);
    CHECK_EQ(tkb_eval_async(f->tk, "set x 1", NULL, NULL), ECANCELED);
  }
  for (i = 0; i < 4; i++) {
    CHECK_EQ(atomic_load(&e[i].other), 0);
    /* A stop cancels every evaler's next call; a destroy, the calls it
     * found pending (the one running when it came ends 0). */
    if (!use_destroy) CHECK_GE(atomic_load(&e[i].cancelled), 1);
    cancelled += atomic_load(&e[i].cancelled);
    CHECK_EQ(atomic_load(&e[i].ok) + atomic_load(&e[i].cancelled) +
                 atomic_load(&e[i].etcl),
             atomic_load(&e[i].calls));
  }
  CHECK_GE(cancelled, 1);
  if (f->tk != NULL) CHECK_OK(tkb_destroy(f->tk));
  f->tk = NULL;
  /* Every accepted async eval completed exactly once (ECANCELED at the
   * latest when the bridge stopped). */
  for (i = 0; i < 4; i++)
    CHECK_EQ(atomic_load(&e[i].async_done), atomic_load(&e[i].async_sent));
}

static void case_exit_cmd(void) {
  fx_t f;
  fx_start(&f, 0);
  CHECK_OK(tkb_command_create(f.tk, "exit", exit_cmd, NULL));
  run_evalers(&f, "after 2; set y [expr {1+1}]", "after 20 {exit 0}", 0);
  fx_stop(&f);
}

static void case_stop_pending(void) {
  fx_t f;
  fx_start(&f, 0);
  CHECK_OK(tkb_command_create(f.tk, "gate", gate_cmd, NULL));
  run_evalers(&f, "after 30; gate; set y 2", NULL, 1);
  fx_stop(&f);
}

/* ---- tcl_exit -------------------------------------------------------------------- */

static atomic_int hog_stop;
static void *hog_main(void *arg) {
  gvl_t *g = arg;
  gvl_thread_t *t = gvl_thread_attach(g, 0);
  CHECK(t != NULL);
  CHECK_OK(gvl_acquire(t));
  while (!atomic_load(&hog_stop)) CHECK_OK(gvl_check_ints(t));
  CHECK_OK(gvl_release(t));
  CHECK_OK(gvl_thread_detach(t));
  return NULL;
}

static void tcl_exit_child(void) {
  fx_t f;
  pthread_t hog;
  evaler_t e[2];
  pthread_t th[2];
  int i;
  flt_watchdog(60);
  fx_start(&f, 0);
  flt_spawn(&hog, hog_main, f.g);
  memset(e, 0, sizeof e);
  for (i = 0; i < 2; i++) {
    e[i].tk = f.tk;
    e[i].script = "button .b$i -text x; destroy .b$i; set i 1";
    e[i].forever = 1;
    flt_spawn(&th[i], evaler_main, &e[i]);
  }
  for (i = 0; i < 2; i++)
    while (atomic_load(&e[i].calls) < 3) flt_sleep_us(1000);
  /* Tcl's own exit, inside an event callback on the loop thread. */
  CHECK_OK(eval_str(f.tk, "after 10 {exit 7}", NULL, 0));
  flt_sleep_us(60 * 1000000L);   /* the exit ends the process first */
  _exit(99);
}

static void case_tcl_exit(void) {
  int status = 0;
  pid_t pid = fork();
  CHECK(pid >= 0);
  if (pid == 0) tcl_exit_child();
  CHECK_EQ(waitpid(pid, &status, 0), pid);
  if (WIFEXITED(status) && WEXITSTATUS(status) == 77) exit(77);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 7) {
    fprintf(stderr, "tcl_exit: child status 0x%x (%s %d), want exit 7\n",
            status, WIFSIGNALED(status) ? "signal" : "exit",
            WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
    exit(1);
  }
}

/* ---- destroy_pending / destroy_main -------------------------------------------------- */

typedef struct {
  tkb_t *tk;
  int idx;
  atomic_int *stop;
  atomic_long calls, ok, etcl, other, async_sent, async_done;
} winner_t;

static void winner_done(tkb_t *tk, int status, const char *result,
                        void *arg) {
  winner_t *w = arg;
  (void)tk;
  (void)result;
  if (status != 0 && status != TKB_ETCL && status != ECANCELED)
    atomic_fetch_add(&w->other, 1);
  atomic_fetch_add(&w->async_done, 1);
}

static void *winner_main(void *arg) {
  winner_t *w = arg;
  char script[256];
  unsigned k = 0;
  while (!atomic_load(w->stop)) {
    int r;
    snprintf(script, sizeof script,
             ".w%d.b configure -text %u; .w%d.c create line 0 0 %u 10; "
             "update idletasks; winfo exists .w%d",
             w->idx, k, w->idx, k % 50, w->idx);
    r = tkb_eval(w->tk, script, NULL);
    atomic_fetch_add(&w->calls, 1);
    if (r == 0) atomic_fetch_add(&w->ok, 1);
    else if (r == TKB_ETCL) atomic_fetch_add(&w->etcl, 1);
    else if (r != ECANCELED) atomic_fetch_add(&w->other, 1);
    snprintf(script, sizeof script, "after 1 {catch {destroy .w%d.b}}",
             w->idx);
    if (tkb_eval_async(w->tk, script, winner_done, w) == 0)
      atomic_fetch_add(&w->async_sent, 1);
    k++;
  }
  return NULL;
}

static void make_windows(tkb_t *tk) {
  int i;
  char script[256];
  for (i = 0; i < 4; i++) {
    snprintf(script, sizeof script,
             "catch {destroy .w%d}; toplevel .w%d; button .w%d.b; "
             "canvas .w%d.c -width 50 -height 20; pack .w%d.b .w%d.c",
             i, i, i, i, i, i);
    CHECK_OK(eval_str(tk, script, NULL, 0));
  }
}

static void run_winners(int destroy_main) {
  fx_t f;
  winner_t w[4];
  pthread_t th[4];
  atomic_int stop = 0;
  int i, round, rounds = 40 / flt_slow() + 2;
  fx_start(&f, 0);
  make_windows(f.tk);
  memset(w, 0, sizeof w);
  for (i = 0; i < 4; i++) {
    w[i].tk = f.tk;
    w[i].idx = i;
    w[i].stop = &stop;
    flt_spawn(&th[i], winner_main, &w[i]);
  }
  /* Each winner's first call meets its windows whole: nothing destroys
   * .wN.b before that call but the winner's own `after`.  Without this
   * wait a late-starting winner could lose every race on a loaded machine
   * (a queued `after` of its own destroys each re-made button), and the
   * ok > 0 check below would depend on scheduling. */
  for (i = 0; i < 4; i++)
    while (atomic_load(&w[i].calls) == 0) flt_sleep_us(1000);
  for (round = 0; round < rounds; round++) {
    char script[64];
    int r;
    flt_sleep_us(5000);
    snprintf(script, sizeof script, "destroy .w%d", round % 4);
    r = eval_str(f.tk, script, NULL, 0);
    CHECK(r == 0 || r == TKB_ETCL);
    if (round % 4 == 3) make_windows(f.tk);
  }
  if (destroy_main) {
    /* Tk's main window goes away under the evaluating threads. */
    int r = eval_str(f.tk, "destroy .", NULL, 0);
    CHECK(r == 0 || r == TKB_ETCL);
    flt_sleep_us(50000);
  }
  atomic_store(&stop, 1);
  for (i = 0; i < 4; i++) flt_join(th[i]);
  CHECK_OK(tkb_destroy(f.tk));
  f.tk = NULL;
  for (i = 0; i < 4; i++) {
    CHECK_EQ(atomic_load(&w[i].other), 0);
    CHECK_GT(atomic_load(&w[i].calls), 0);
    CHECK_EQ(atomic_load(&w[i].async_done), atomic_load(&w[i].async_sent));
  }
  if (!destroy_main)
    for (i = 0; i < 4; i++) CHECK_GT(atomic_load(&w[i].ok), 0);
  fx_stop(&f);
}

int main(int argc, char **argv) {
  const char *c = argc > 1 ? argv[1] : "";
  flt_watchdog(120);
  signal(SIGPIPE, SIG_IGN);
  if (strcmp(c, "tcl_errors") == 0) case_tcl_errors();
  else if (strcmp(c, "exit_cmd") == 0) case_exit_cmd();
  else if (strcmp(c, "tcl_exit") == 0) case_tcl_exit();
  else if (strcmp(c, "destroy_pending") == 0) run_winners(0);
  else if (strcmp(c, "destroy_main") == 0) run_winners(1);
  else if (strcmp(c, "stop_pending") == 0) case_stop_pending();
  else {
    fprintf(stderr, "usage: fault_tk CASE\n");
    return 2;
  }
  printf("fault_tk %s: ok\n", c);
  return 0;
}
