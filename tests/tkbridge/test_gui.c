/* SPDX-License-Identifier: MIT */
/*
 * test_gui.c -- libtkbridge with Tk on a real X server (Xvfb, started by
 * run_x.sh when DISPLAY is unset): widgets from other threads, Tk events
 * reaching host commands under the GVL, repaint while a hog holds the GVL.
 * Run as `tkb_test_gui CASE`.
 */
#include <unistd.h>

#include <X11/Xlib.h>
#include <X11/Xutil.h>
#include <tk.h>

#include "tkb_test.h"

/* ---- widgets from other interpreter threads ---------------------------------- */

typedef struct {
  fx_t *f;
  int id;
  int attach;
} wk_t;

static void *widget_worker(void *arg) {
  wk_t *w = arg;
  gvl_thread_t *me = NULL;
  if (w->attach) {
    me = gvl_thread_attach(w->f->g, 0);
    CHECK(me != NULL);
    CHECK_RC(gvl_acquire(me), 0);
  }
  char s[256], want[64];
  for (int i = 0; i < 40; i++) {
    snprintf(s, sizeof s, "button .b%d_%d -text t%d; pack .b%d_%d", w->id, i, i, w->id, i);
    CHECK_RC(tkb_eval(w->f->tk, s, NULL), 0);
    snprintf(s, sizeof s, ".b%d_%d configure -text w%d_%d; .b%d_%d cget -text", w->id, i,
             w->id, i, w->id, i);
    snprintf(want, sizeof want, "w%d_%d", w->id, i);
    fx_expect(w->f->tk, s, want);
    snprintf(s, sizeof s, "update idletasks; destroy .b%d_%d; winfo exists .b%d_%d", w->id, i,
             w->id, i);
    fx_expect(w->f->tk, s, "0");
  }
  if (me) {
    CHECK_RC(gvl_release(me), 0);
    CHECK_RC(gvl_thread_detach(me), 0);
  }
  return NULL;
}

static void t_widgets_threads(void) {
  fx_t f;
  fx_start(&f, 0);
  pthread_t th[4];
  wk_t w[4];
  for (int i = 0; i < 4; i++) {
    w[i] = (wk_t){&f, i, i % 2};
    CHECK(pthread_create(&th[i], NULL, widget_worker, &w[i]) == 0);
  }
  for (int i = 0; i < 4; i++) pthread_join(th[i], NULL);
  fx_expect(f.tk, "winfo children .", "");
  fx_stop(&f);
}

/* ---- Tk events to host commands ------------------------------------------------ */

typedef struct {
  fx_t *f;
  atomic_int calls;
  atomic_int held;
  atomic_int on_loop;
  char last[64];
} ev_t;

static int ev_cb(tkb_t *tk, void *arg, int argc, const char *const *argv,
                 tkb_result_t *res) {
  ev_t *e = arg;
  (void)tk;
  (void)res;
  gvl_thread_t *me = gvl_thread_self(e->f->g);
  if (me && gvl_thread_holds(me)) atomic_fetch_add(&e->held, 1);
  if (evl_in_loop_thread(e->f->l)) atomic_fetch_add(&e->on_loop, 1);
  if (argc > 1) snprintf(e->last, sizeof e->last, "%s", argv[1]);
  atomic_fetch_add(&e->calls, 1);
  return 0;
}

static void t_event_generate(void) {
  fx_t f;
  fx_start(&f, 0);
  ev_t e;
  memset(&e, 0, sizeof e);
  e.f = &f;
  tkb_stats_t before, after;
  CHECK_RC(tkb_stats(f.tk, &before), 0);
  CHECK_RC(tkb_command_create(f.tk, "hostev", ev_cb, &e), 0);
  fx_expect(f.tk,
            "frame .f -width 100 -height 100; pack .f; update\n"
            "bind .f <<Ping>> {hostev %d}\n"
            "bind .f <ButtonPress-1> {hostev button}\n"
            "for {set i 0} {$i < 50} {incr i} {event generate .f <<Ping>> -data $i -when tail}\n"
            "event generate .f <ButtonPress-1> -x 5 -y 5 -when tail\n"
            "update\n"
            "set ok 1",
            "1");
  CHECK(atomic_load(&e.calls) == 51);
  CHECK(atomic_load(&e.held) == 51);
  CHECK(atomic_load(&e.on_loop) == 51);
  CHECK(strcmp(e.last, "button") == 0);
  CHECK_RC(tkb_stats(f.tk, &after), 0);
  CHECK(after.gvl_acquires == before.gvl_acquires + 51);
  CHECK(after.cmd_calls == before.cmd_calls + 51);
  fx_stop(&f);
}

/* ---- repaint while a hog holds the GVL -------------------------------------------- */

typedef struct {
  gvl_t *g;
  atomic_int holding;
  atomic_int stop;
} hog_t;

/* Holds the GVL without a single safe point: nothing that needs the GVL can
 * run until it stops. */
static void *hog_main(void *arg) {
  hog_t *h = arg;
  gvl_thread_t *t = gvl_thread_attach(h->g, 0);
  CHECK(t != NULL);
  CHECK_RC(gvl_acquire(t), 0);
  atomic_store(&h->holding, 1);
  while (!atomic_load(&h->stop)) {
  }
  CHECK_RC(gvl_release(t), 0);
  CHECK_RC(gvl_thread_detach(t), 0);
  return NULL;
}

static long file_size(const char *p) {
  FILE *f = fopen(p, "rb");
  if (!f) return -1;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fclose(f);
  return n;
}

static int same_file(const char *a, const char *b) {
  FILE *fa = fopen(a, "rb"), *fb = fopen(b, "rb");
  int same = fa && fb;
  while (same) {
    int ca = fgetc(fa), cb = fgetc(fb);
    if (ca != cb) same = 0;
    if (ca == EOF || cb == EOF) break;
  }
  if (fa) fclose(fa);
  if (fb) fclose(fb);
  return same;
}

static void capture(const char *winid, const char *out) {
  char cmd[512];
  snprintf(cmd, sizeof cmd, "xwd -silent -id %s -out %s", winid, out);
  CHECK(system(cmd) == 0);
  CHECK(file_size(out) > 100);
}

/* Capture the window into out until it is the same as ref (want 1) or
 * differs from it (want 0): at most 50 tries, an update and 20 ms apart,
 * bounded retries rather than a timing guess.  Returns whether it got there. */
static int capture_until(tkb_t *tk, const char *winid, const char *out,
                         const char *ref, int want) {
  for (int i = 0; i < 50; i++) {
    capture(winid, out);
    if (same_file(ref, out) == want) return 1;
    CHECK_RC(tkb_eval(tk, "after 20; update", NULL), 0);
  }
  return 0;
}

static void t_repaint_hog(void) {
  if (system("command -v xwd >/dev/null 2>&1") != 0) {
    fprintf(stderr, "xwd not installed (apt-get install x11-apps): skipped\n");
    exit(77);
  }
  fx_t f;
  fx_start(&f, 0);
  char *id = fx_eval(f.tk,
                     "wm geometry . 200x120+0+0; . configure -bg gray50\n"
                     "label .l -text {Repaint me} -bg yellow -fg black -font {Helvetica 14}\n"
                     "place .l -x 20 -y 30\n"
                     "update; after 50; update\n"
                     "winfo id .");
  char a[] = "/tmp/tkb_capAXXXXXX", b[] = "/tmp/tkb_capBXXXXXX", c[] = "/tmp/tkb_capCXXXXXX";
  close(mkstemp(a));
  close(mkstemp(b));
  close(mkstemp(c));
  capture(id, a);
  for (int i = 0; i < 50; i++) {  /* until two captures agree: drawn */
    CHECK_RC(tkb_eval(f.tk, "after 20; update", NULL), 0);
    capture(id, c);
    if (same_file(a, c)) break;
    capture(id, a);
  }

  hog_t h = {f.g, 0, 0};
  pthread_t th;
  CHECK(pthread_create(&th, NULL, hog_main, &h) == 0);
  while (!atomic_load(&h.holding)) usleep(100);
  tkb_stats_t s0, s1;
  CHECK_RC(tkb_stats(f.tk, &s0), 0);
  /* This thread is not attached: tkb_eval needs no GVL.  Cover the window
   * with another toplevel, then uncover it: the Expose must be repainted. */
  CHECK_RC(tkb_eval(f.tk,
                    "toplevel .c -bg blue; wm geometry .c 200x120+0+0\n"
                    "update; after 50; update",
                    NULL),
           0);
  capture_until(f.tk, id, b, a, 0);
  CHECK_RC(tkb_eval(f.tk, "destroy .c; update", NULL), 0);
  int same = capture_until(f.tk, id, c, a, 1);
  CHECK_RC(tkb_stats(f.tk, &s1), 0);
  CHECK(atomic_load(&h.holding) == 1);
  atomic_store(&h.stop, 1);
  pthread_join(th, NULL);
  CHECK(!same_file(a, b)); /* the cover was really there */
  CHECK(same);             /* and the window came back, GVL held elsewhere */
  CHECK(s1.gvl_acquires == s0.gvl_acquires);
  unlink(a);
  unlink(b);
  unlink(c);
  free(id);
  fx_stop(&f);
}

/* Many real X round trips (configure, sync) with Tk asking for zero block
 * time while Xlib holds queued events: nothing stalls. */
static void t_x11_burst(void) {
  fx_t f;
  fx_start(&f, 0);
  fx_expect(f.tk,
            "set ::conf 0\n"
            "frame .f -width 50 -height 50; pack .f -fill both -expand 1\n"
            "bind .f <Configure> {incr ::conf}\n"
            "update\n"
            "for {set i 0} {$i < 40} {incr i} {\n"
            "  wm geometry . [expr {100 + $i}]x100\n"
            "  set ::want $i\n"
            "  after idle {set ::tick 1}\n"
            "  vwait ::tick\n"
            "  update\n"
            "}\n"
            "expr {$::conf > 0}",
            "1");
  fx_stop(&f);
}

/* No display: ENOTSUP with Tk's own message, and DISPLAY in the process
 * environment as it was, so that a later default start still works. */
static void t_no_display(void) {
  gvl_t *g = gvl_create(NULL);
  evl_config_t ec;
  memset(&ec, 0, sizeof ec);
  tkb_evl_config(&ec);
  evl_t *l = evl_start(g, &ec);
  const char *env = getenv("DISPLAY");
  char *before = env ? strdup(env) : NULL;
  tkb_config_t tc;
  memset(&tc, 0, sizeof tc);
  tc.display = ":4242";
  tkb_t *tk = (tkb_t *)1;
  CHECK_RC(tkb_start(l, &tc, &tk), ENOTSUP);
  CHECK(tk == NULL);
  const char *msg = tkb_errmsg();
  CHECK(msg != NULL);
  if (strstr(msg, "couldn't connect to display \":4242\"") == NULL) {
    fprintf(stderr, "tkb_errmsg: %s\n", msg);
    abort();
  }
  env = getenv("DISPLAY");
  CHECK((before == NULL) == (env == NULL));
  CHECK(before == NULL || strcmp(before, env) == 0);
  if (before != NULL) { /* the default display still works */
    CHECK_RC(tkb_start(l, NULL, &tk), 0);
    CHECK(strcmp(tkb_errmsg(), "") == 0);
    CHECK_RC(tkb_destroy(tk), 0);
  }
  free(before);
  CHECK_RC(evl_destroy(l), 0);
  CHECK_RC(gvl_destroy(g), 0);
}

/* cfg.argv with Tk options: Tk_Init parses them as wish does (they act and
 * leave $argv, the rest stays), and a -display there leaves DISPLAY in the
 * process environment as it was, as cfg.display does. */
static void t_argv_tk_options(void) {
  const char *env = getenv("DISPLAY");
  CHECK(env != NULL);
  char *before = strdup(env);
  char other[256];
  /* The same server, spelt differently, so that Tk's rewrite would show. */
  snprintf(other, sizeof other, "%s%s", env[0] == ':' ? "unix" : "", env);
  char *argv[] = {"-display", other, "-name", "other", "--", "file.txt"};
  tkb_config_t tc;
  memset(&tc, 0, sizeof tc);
  tc.argc = 6;
  tc.argv = argv;
  tc.app_name = "mine";
  fx_t f;
  fx_start_cfg(&f, &tc);
  fx_expect(f.tk, "list $argc $argv [tk appname]",
            "1 file.txt other");
  CHECK(strcmp(getenv("DISPLAY"), before) == 0);
  fx_stop(&f);
  free(before);
}

/* A <Destroy> binding that calls a host command which stops the bridge,
 * fired by the teardown itself (interp deletion destroys the windows). */
static atomic_int destroy_calls;

static int stop_again_cb(tkb_t *tk, void *arg, int argc, const char *const *argv,
                         tkb_result_t *res) {
  (void)arg;
  (void)argc;
  (void)argv;
  (void)res;
  atomic_fetch_add(&destroy_calls, 1);
  CHECK_RC(tkb_stop(tk), 0);
  return 0;
}

static void t_destroy_binding_stop(void) {
  fx_t f;
  fx_start(&f, 0);
  CHECK_RC(tkb_command_create(f.tk, "stopagain", stop_again_cb, NULL), 0);
  fx_expect(f.tk, "frame .f; pack .f; bind .f <Destroy> stopagain; update; set ok 1", "1");
  CHECK_RC(tkb_stop(f.tk), 0);
  CHECK(atomic_load(&destroy_calls) <= 1);
  CHECK_RC(tkb_eval(f.tk, "set x", NULL), ECANCELED);
  CHECK_RC(tkb_destroy(f.tk), 0);

  /* and from a script: destroy the window whose binding stops the bridge
   * (a new bridge on the same loop: Tk stays on the thread that has it) */
  CHECK_RC(tkb_start(f.l, NULL, &f.tk), 0);
  atomic_store(&destroy_calls, 0);
  CHECK_RC(tkb_command_create(f.tk, "stopagain", stop_again_cb, NULL), 0);
  int rc = tkb_eval(f.tk, "frame .f; pack .f; bind .f <Destroy> stopagain; update;"
                          " destroy .f; set after 1", NULL);
  CHECK(rc == 0 || rc == TKB_ETCL);
  CHECK(atomic_load(&destroy_calls) == 1);
  CHECK_RC(tkb_eval(f.tk, "set x", NULL), ECANCELED);
  fx_stop(&f);
}

/* An X event made by another client reaches the bridge through the X
 * connection's descriptor: uv_poll -> Tcl file event -> Tk -> binding.
 * Here: another client covers the window, then uncovers it (Expose).  What
 * is checked is what the user sees: the binding runs and the label is
 * painted again (its text is back on its background).  How many reads of
 * the X connection that took is Xlib's business: it may already have read
 * the Expose into its queue while doing something else. */
typedef struct {
  fx_t *f;
  int rc;
} xw_t;

static void *xwait_thread(void *arg) {
  xw_t *x = arg;
  x->rc = tkb_eval(x->f->tk, "if {![info exists ::exposed]} {vwait ::exposed}", NULL);
  return NULL;
}

/* Finish Tk's redraws and wait until the X server has done them. */
static void flush_tk(tkb_t *tk, struct Tcl_Interp *ip, void *arg) {
  (void)tk;
  (void)arg;
  CHECK(Tcl_Eval(ip, "update idletasks") == TCL_OK);
  XSync(Tk_Display(Tk_MainWindow(ip)), False);
}

/* The label shows something besides its background: pixels of another
 * value than the corner's (the text).  A label left unpainted after being
 * uncovered is one colour: what covered it, or the background the server
 * filled in. */
static int label_painted(Display *dpy, Window w, int width, int height) {
  XImage *im = XGetImage(dpy, w, 0, 0, (unsigned)width, (unsigned)height, AllPlanes, ZPixmap);
  CHECK(im != NULL);
  unsigned long bg = XGetPixel(im, 1, 1);
  int other = 0;
  for (int y = 0; y < height && !other; y++)
    for (int x = 0; x < width && !other; x++) other = XGetPixel(im, x, y) != bg;
  XDestroyImage(im);
  return other;
}

static void t_x_external(void) {
  fx_t f;
  fx_start(&f, 0);
  fx_expect(f.tk,
            "wm geometry . 100x100+0+0; label .l -text hi -font {Helvetica -40}\n"
            "pack .l -fill both -expand 1\n"
            "update; after 50; update\n"
            "bind .l <Expose> {set ::exposed 1}\n"
            "set ok 1",
            "1");
  char *id = fx_eval(f.tk, "winfo id .l");
  char *wh = fx_eval(f.tk, "list [winfo width .l] [winfo height .l]");
  Window lw = (Window)strtoul(id, NULL, 0);
  int width = 0, height = 0;
  CHECK(sscanf(wh, "%d %d", &width, &height) == 2 && width > 4 && height > 4);
  free(id);
  free(wh);
  xw_t x = {&f, -1};
  pthread_t th;
  Display *dpy = XOpenDisplay(NULL);
  CHECK(dpy != NULL);
  CHECK_RC(tkb_run(f.tk, flush_tk, NULL), 0);
  CHECK(label_painted(dpy, lw, width, height));
  /* An Expose of the mapping that came only now would pass for the
   * uncovering's: forget it. */
  CHECK_RC(tkb_eval(f.tk, "unset -nocomplain ::exposed", NULL), 0);
  CHECK(pthread_create(&th, NULL, xwait_thread, &x) == 0);
  Window w = XCreateSimpleWindow(dpy, DefaultRootWindow(dpy), 0, 0, 300, 300, 0, 0, 0);
  XSetWindowAttributes a;
  a.override_redirect = True;
  XChangeWindowAttributes(dpy, w, CWOverrideRedirect, &a);
  XMapRaised(dpy, w);
  XSync(dpy, False);
  XDestroyWindow(dpy, w); /* uncovers: the server sends Expose to the bridge */
  XSync(dpy, False);
  pthread_join(th, NULL);
  CHECK_RC(x.rc, 0); /* the binding ran */
  /* and the text is back: the redraw is idle work an Expose queues, and
   * the one that ran the binding need not be the uncovering's last (so a
   * bounded wait). */
  int painted = 0;
  for (int i = 0; i < 500 && !painted; i++) {
    if (i) usleep(20000);
    CHECK_RC(tkb_run(f.tk, flush_tk, NULL), 0);
    painted = label_painted(dpy, lw, width, height);
  }
  CHECK(painted);
  XCloseDisplay(dpy);
  fx_stop(&f);
}

/* ---- Tk's thread, and stopping quietly --------------------------------------- */

/* Bridges in turn on one evloop, each stopped right after it made a widget,
 * while Tk's idle work for it (ttk::ThemeChanged) may still be running: the
 * cancel that stops it must not make Tcl print "error in background error
 * handler" (it did in about half the stops).  stderr goes to a file here,
 * which must stay empty. */
static void t_stop_quiet(void) {
  fx_t f;
  fx_start(&f, 0);
  char path[] = "/tmp/tkb_stop_quiet.XXXXXX";
  int fd = mkstemp(path);
  CHECK(fd >= 0);
  unlink(path);
  fflush(stderr);
  int saved = dup(2);
  CHECK(saved >= 0 && dup2(fd, 2) == 2);
  for (int i = 0; i < 40; i++) {
    if (i > 0) CHECK_RC(tkb_start(f.l, NULL, &f.tk), 0);
    CHECK_RC(tkb_eval(f.tk, "button .b; pack .b", NULL), 0);
    CHECK_RC(tkb_destroy(f.tk), 0);
  }
  f.tk = NULL;
  fflush(stderr);
  off_t len = lseek(fd, 0, SEEK_END);
  char buf[512] = "";
  if (len > 0) {
    ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
    if (n > 0) buf[n] = '\0';
  }
  dup2(saved, 2);
  close(saved);
  close(fd);
  if (len != 0) fprintf(stderr, "stderr while stopping (%lld bytes):\n%s\n", (long long)len, buf);
  CHECK(len == 0);
  fx_stop(&f);
}

/* Tk on a new loop thread once one that ran Tk has ended: refused with
 * ENOTSUP (Tk 8.6 set up again on a third thread made Xlib exit the
 * process); Tcl alone is still fine there. */
static void t_tk_new_thread(void) {
  fx_t f;
  fx_start(&f, 0);
  fx_expect(f.tk, "button .b; winfo class .b", "Button");
  fx_stop(&f);
  for (int i = 0; i < 3; i++) {
    gvl_t *g = gvl_create(NULL);
    CHECK(g != NULL);
    evl_t *l = fx_loop(g);
    tkb_t *tk = NULL;
    CHECK_RC(tkb_start(l, NULL, &tk), ENOTSUP);
    CHECK(strstr(tkb_errmsg(), "new thread") != NULL);
    tkb_config_t tc;
    memset(&tc, 0, sizeof tc);
    tc.no_tk = 1;
    CHECK_RC(tkb_start(l, &tc, &tk), 0);
    fx_expect(tk, "expr {6 * 7}", "42");
    CHECK_RC(tkb_destroy(tk), 0);
    CHECK_RC(evl_destroy(l), 0);
    CHECK_RC(gvl_destroy(g), 0);
  }
}

static const tcase_t cases[] = {
    {"widgets_threads", t_widgets_threads},
    {"event_generate", t_event_generate},
    {"repaint_hog", t_repaint_hog},
    {"x11_burst", t_x11_burst},
    {"no_display", t_no_display},
    {"argv_tk_options", t_argv_tk_options},
    {"destroy_binding_stop", t_destroy_binding_stop},
    {"x_external", t_x_external},
    {"stop_quiet", t_stop_quiet},
    {"tk_new_thread", t_tk_new_thread},
    {NULL, NULL}};

int main(int argc, char **argv) {
  return run_case(cases, argc, argv);
}
