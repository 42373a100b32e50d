/*
 * gvshell.c -- gvwish and gvtclsh: wish- and tclsh-compatible shells that
 * run Tcl/Tk scripts on the bridge (Tcl's event loop on libuv, Tk on the
 * evloop's loop thread), with optional GVL hogs.
 *
 *   gvwish  [--hog N] [--no-boost] [script [arg ...]]
 *   gvtclsh [--hog N] [--no-boost] [script [arg ...]]
 *
 * --hog N     start N interpreter threads that hold the GVL in a CPU loop
 *             with a safe point (gvl_check_ints) every ~1 us of work.
 * --no-boost  dispatch host callbacks at normal GVL priority (for
 *             comparisons; the default takes the GVL with the boost).
 *
 * Like tclsh/wish: the script is sourced with $argv0/$argv/$argc set; an
 * error prints $errorInfo and exits 1; `exit ?code?` ends the program.
 * gvtclsh exits after the script, gvwish when its main window is destroyed.
 * Without a script, commands are read from stdin until end of file.
 * Every interp also has gvloop::stats and gvloop::ping (see tkbridge.h).
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <tcl.h>
#ifndef GVSHELL_TCLSH
#include <tk.h>
#endif

#include "tkb_hog.h"
#include "tkbridge.h"

#ifdef GVSHELL_TCLSH
#define SHELL_NAME "gvtclsh"
#define SHELL_TK 0
#else
#define SHELL_NAME "gvwish"
#define SHELL_TK 1
#endif

/* ---- quitting ------------------------------------------------------------- */

static pthread_mutex_t quit_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t quit_cv = PTHREAD_COND_INITIALIZER;
static int quit_flag;   /* guarded by quit_mu */
static int quit_code;   /* guarded by quit_mu */

static void quit(int code) {
  pthread_mutex_lock(&quit_mu);
  if (!quit_flag) quit_code = code;
  quit_flag = 1;
  pthread_cond_broadcast(&quit_cv);
  pthread_mutex_unlock(&quit_mu);
}

static int quitting(void) {
  pthread_mutex_lock(&quit_mu);
  int q = quit_flag;
  pthread_mutex_unlock(&quit_mu);
  return q;
}

static void *wait_quit(void *arg) {
  (void)arg;
  pthread_mutex_lock(&quit_mu);
  while (!quit_flag) pthread_cond_wait(&quit_cv, &quit_mu);
  pthread_mutex_unlock(&quit_mu);
  return &quit_flag;
}

/* `exit ?code?`: stop the bridge (running scripts unwind) and let main end
 * the process cleanly, instead of Tcl_Exit on the loop thread. */
static int exit_cmd(tkb_t *tk, void *arg, int argc, const char *const *argv,
                    tkb_result_t *res) {
  (void)arg;
  int code = 0;
  if (argc > 2 || (argc == 2 && sscanf(argv[1], "%d", &code) != 1)) {
    tkb_result_set(res, "usage: exit ?returnCode?");
    return EINVAL;
  }
  quit(code);
  tkb_stop(tk);
  return 0;
}

#if SHELL_TK
static void main_window_proc(ClientData cd, XEvent *ev) {
  (void)cd;
  if (ev->type == DestroyNotify) quit(0);
}

static void watch_main_window(tkb_t *tk, Tcl_Interp *ip, void *arg) {
  (void)tk;
  (void)arg;
  Tk_Window w = Tk_MainWindow(ip);
  if (w != NULL) Tk_CreateEventHandler(w, StructureNotifyMask, main_window_proc, NULL);
}
#endif

/* The one GVL of the process: main, the loop thread and the --hog threads
 * (tkb_hog.h) share it. */
static gvl_t *the_gvl;

/* ---- running scripts ------------------------------------------------------- */

static void print_error_info(tkb_t *tk, const char *msg) {
  char *info = NULL;
  if (tkb_eval(tk, "set ::errorInfo", &info) == 0 && info && info[0])
    fprintf(stderr, "%s\n", info);
  else
    fprintf(stderr, "%s\n", msg ? msg : "error");
  free(info);
}

/* Source the script; returns 0 on success, 1 after printing the error. */
static int run_script(tkb_t *tk) {
  char *res = NULL;
  int rc = tkb_eval(tk, "source $::argv0", &res);
  if (rc == 0 || quitting()) {
    free(res);
    return 0;
  }
  if (rc == TKB_ETCL) print_error_info(tk, res);
  else fprintf(stderr, SHELL_NAME ": %s\n", tkb_strerror(rc));
  free(res);
  return 1;
}

typedef struct {
  const char *text;
  int complete;
} complete_t;

static void complete_fn(tkb_t *tk, Tcl_Interp *ip, void *arg) {
  (void)tk;
  (void)ip;
  complete_t *c = arg;
  c->complete = Tcl_CommandComplete(c->text);
}

/* Tcl's parser runs on the loop thread, like everything else of Tcl. */
static int is_complete(tkb_t *tk, const char *text) {
  complete_t c = {text, 1};
  tkb_run(tk, complete_fn, &c);
  return c.complete;
}

static gvl_thread_t *main_gvl; /* main thread's handle (it holds the GVL) */

typedef struct {
  char *buf;
  int size;
  char *got;
} line_t;

static void *read_line_fn(void *arg) {
  line_t *ln = arg;
  ln->got = fgets(ln->buf, ln->size, stdin);
  return ln;
}

/* Read a line without holding the GVL: hogs and host callbacks go on. */
static char *read_line(char *buf, int size) {
  line_t ln = {buf, size, NULL};
  if (gvl_call_without(main_gvl, read_line_fn, &ln, NULL, NULL) == NULL) return NULL;
  return ln.got;
}

/* Read commands from stdin, tclsh style: accumulate lines until the command
 * is complete, evaluate, print. */
static void repl(tkb_t *tk) {
  int tty = isatty(0);
  char line[4096];
  Tcl_DString cmd;
  Tcl_DStringInit(&cmd);
  for (;;) {
    if (tty) {
      fputs(Tcl_DStringLength(&cmd) ? "> " : "% ", stdout);
      fflush(stdout);
    }
    if (read_line(line, sizeof line) == NULL || quitting()) break;
    Tcl_DStringAppend(&cmd, line, -1);
    if (!is_complete(tk, Tcl_DStringValue(&cmd))) continue;
    char *res = NULL;
    int rc = tkb_eval(tk, Tcl_DStringValue(&cmd), &res);
    Tcl_DStringFree(&cmd);
    if (quitting()) {
      free(res);
      break;
    }
    if (rc == 0 && res && res[0]) printf("%s\n", res);
    else if (rc == TKB_ETCL) fprintf(stderr, "%s\n", res ? res : "error");
    else if (rc != 0) fprintf(stderr, SHELL_NAME ": %s\n", tkb_strerror(rc));
    fflush(stdout);
    free(res);
  }
  Tcl_DStringFree(&cmd);
}

/* ---- main ------------------------------------------------------------------ */

static void usage(void) {
  fprintf(stderr, "usage: " SHELL_NAME " [--hog N] [--no-boost] [script [arg ...]]\n");
}

typedef struct {
  int hogs;
  int no_boost;
  int first;   /* index of the script in argv, or argc */
} opts_t;

static int parse(int argc, char **argv, opts_t *o) {
  int i = 1;
  memset(o, 0, sizeof(*o));
  for (; i < argc; i++) {
    if (strcmp(argv[i], "--hog") == 0 && i + 1 < argc) {
      char *end;
      long n = strtol(argv[++i], &end, 10);
      if (*end || n < 0 || n > 64) return -1;
      o->hogs = (int)n;
    } else if (strcmp(argv[i], "--no-boost") == 0) {
      o->no_boost = 1;
    } else if (strcmp(argv[i], "--") == 0) {
      i++;
      break;
    } else if (argv[i][0] == '-' && argv[i][1] == '-') {
      return -1;
    } else {
      break;
    }
  }
  o->first = i;
  return 0;
}

static int start_bridge(const opts_t *o, int argc, char **argv, evl_t **lp, tkb_t **tkp) {
  evl_config_t ec;
  memset(&ec, 0, sizeof ec);
  tkb_evl_config(&ec);
  ec.prio = o->no_boost ? EVL_PRIO_NORMAL : EVL_PRIO_BOOST;
  evl_t *l = evl_start(the_gvl, &ec);
  if (l == NULL) {
    fprintf(stderr, SHELL_NAME ": evl_start: %s\n", strerror(errno));
    return 1;
  }
  tkb_config_t tc;
  memset(&tc, 0, sizeof tc);
  int has_script = o->first < argc;
  tc.argv0 = has_script ? argv[o->first] : argv[0];
  tc.argc = has_script ? argc - o->first - 1 : 0;
  tc.argv = has_script ? argv + o->first + 1 : NULL;
  tc.no_tk = !SHELL_TK;
  tc.prio = o->no_boost ? TKB_PRIO_NORMAL : TKB_PRIO_BOOST;
  int rc = tkb_start(l, &tc, tkp);
  *lp = l;
  if (rc == ENOTSUP) {
    const char *d = getenv("DISPLAY");
    fprintf(stderr, SHELL_NAME ": cannot start Tk: no usable X display (DISPLAY=%s)\n",
            d ? d : "unset");
    return 1;
  }
  if (rc != 0) {
    fprintf(stderr, SHELL_NAME ": cannot start: %s\n", tkb_strerror(rc));
    return 1;
  }
  tkb_command_create(*tkp, "exit", exit_cmd, NULL);
#if SHELL_TK
  tkb_run(*tkp, watch_main_window, NULL);
#endif
  return 0;
}

int main(int argc, char **argv) {
  opts_t o;
  if (parse(argc, argv, &o) != 0) {
    usage();
    return 2;
  }
  the_gvl = gvl_create(NULL);
  gvl_thread_t *me = the_gvl ? gvl_thread_attach(the_gvl, GVL_PRIO_NORMAL) : NULL;
  if (me == NULL) {
    fprintf(stderr, SHELL_NAME ": cannot create the GVL\n");
    return 1;
  }
  gvl_acquire(me); /* main acts as an interpreter thread */
  main_gvl = me;
  pthread_t hog[64];
  tkb__hog_t hogs = {.gvl = the_gvl, .spin_per_us = o.hogs ? tkb__hog_calibrate() : 1};
  atomic_init(&hogs.stop, 0);
  for (int i = 0; i < o.hogs; i++) pthread_create(&hog[i], NULL, tkb__hog_main, &hogs);

  evl_t *l = NULL;
  tkb_t *tk = NULL;
  int code = start_bridge(&o, argc, argv, &l, &tk);
  if (code == 0) {
    if (o.first < argc) code = run_script(tk);
    else repl(tk);
    if (code == 0 && SHELL_TK && !quitting() && o.first < argc)
      gvl_call_without(me, wait_quit, NULL, NULL, NULL);
    if (quitting()) {
      pthread_mutex_lock(&quit_mu);
      code = quit_code;
      pthread_mutex_unlock(&quit_mu);
    }
  }
  fflush(stdout);
  if (tk) tkb_destroy(tk);
  if (l) evl_destroy(l);
  atomic_store(&hogs.stop, 1);
  gvl_release(me);
  for (int i = 0; i < o.hogs; i++) pthread_join(hog[i], NULL);
  gvl_thread_detach(me);
  gvl_destroy(the_gvl);
  return code;
}
