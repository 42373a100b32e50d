/* SPDX-License-Identifier: MIT */
/*
 * gvshell.c -- gvwish and gvtclsh: wish and tclsh, with Tcl's notifier on
 * libuv and a GVL underneath.
 *
 * Both are the stock mains (Tk_Main, Tcl_Main) with the stock application
 * init, so every option, the interactive loop, tcl_interactive, the prompts,
 * the rc file, script loading, `exit` and the exit codes are those of wish
 * and tclsh.  Before the main runs, the main thread becomes the loop thread
 * of an evloop (evl_attach) and its Tcl notifier is bound to that loop
 * (tkb_notifier_bind): Tcl waits in evl_step without the GVL, and host
 * callbacks queued on the loop run from those waits under the GVL, taken
 * with the boost.
 *
 * gvloop's own settings come from the environment only, so that the command
 * line stays wish's and tclsh's (see man/gvwish.1):
 *   GVLOOP_NO_BOOST=1     host callbacks at normal GVL priority
 *   GVLOOP_SLICE_MS=N     the GVL's time slice (1..10000 ms)
 *   GVLOOP_BOOST_CAP=PCT  the share of GVL time boosted holds may take
 * The interp gets gvloop::ping and gvloop::stats, as every bridge interp
 * (tkb_notifier_commands; see gvloop(n)).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <tcl.h>
#ifndef GVSHELL_TCLSH
#include <tk.h>
#endif

#include "tkbridge.h"

#ifdef GVSHELL_TCLSH
#define SHELL_NAME "gvtclsh"
#define SHELL_RC "~/.tclshrc"
#else
#define SHELL_NAME "gvwish"
#define SHELL_RC "~/.wishrc"
#endif

/* Set up in main before the Tcl main runs; only read afterwards. */
static evl_t *the_loop;
static int host_prio = TKB_PRIO_BOOST;

/* ---- settings ---------------------------------------------------------------- */

/* An integer setting from the environment: def when unset; a bad value is
 * reported and ignored, so a typo does not stop a script from running. */
static long env_long(const char *name, long lo, long hi, long def) {
  const char *s = getenv(name);
  if (s == NULL || s[0] == '\0') return def;
  char *end = (char *)s;
  errno = 0;
  /* Digits only (strtol alone takes leading blanks and a sign). */
  long v = (s[0] >= '0' && s[0] <= '9') ? strtol(s, &end, 10) : 0;
  if (errno != 0 || end == s || *end != '\0' || v < lo || v > hi) {
    fprintf(stderr, SHELL_NAME ": ignoring %s=%s (want %ld..%ld)\n", name, s, lo, hi);
    return def;
  }
  return v;
}

static gvl_t *make_gvl(void) {
  gvl_config_t gc;
  memset(&gc, 0, sizeof gc);
  gc.slice_ns = (uint64_t)env_long("GVLOOP_SLICE_MS", 1, 10000, 0) * 1000000u;
  gc.boost_cap_pct = (unsigned)env_long("GVLOOP_BOOST_CAP", 1, 100, 0);
  return gvl_create(&gc);
}

/* ---- descriptors 0-2 ---------------------------------------------------------- */

/* A closed standard descriptor would be the next one handed out, and the
 * loop's own descriptors (epoll, eventfd) must not become stdin: libuv
 * refuses to close those (an assertion).  So each closed one is opened on
 * /dev/null, as a daemon does; Tcl then sees an empty stdin, a discarding
 * stdout. */
static void fill_std_fds(void) {
  for (int fd = 0; fd <= 2; fd++) {
    if (fcntl(fd, F_GETFD) != -1 || errno != EBADF) continue;
    /* The lowest free descriptor: fd itself, the ones below are open. */
    (void)open("/dev/null", fd == 0 ? O_RDONLY : O_WRONLY);
  }
}

/* ---- the application init of wish / tclsh --------------------------------------- */

static int app_init(Tcl_Interp *ip) {
  if (Tcl_Init(ip) == TCL_ERROR) return TCL_ERROR;
#ifndef GVSHELL_TCLSH
  if (Tk_Init(ip) == TCL_ERROR) return TCL_ERROR;
  Tcl_StaticPackage(ip, "Tk", Tk_Init, Tk_SafeInit);
#endif
  int rc = tkb_notifier_commands(ip, the_loop, host_prio);
  if (rc != 0) {
    Tcl_SetObjResult(ip, Tcl_NewStringObj(tkb_strerror(rc), -1));
    return TCL_ERROR;
  }
  Tcl_SetVar2(ip, "tcl_rcFileName", NULL, SHELL_RC, TCL_GLOBAL_ONLY);
  return TCL_OK;
}

/* ---- main ---------------------------------------------------------------------- */

static int fail(const char *what, int err) {
  fprintf(stderr, SHELL_NAME ": %s: %s\n", what, strerror(err));
  return 1;
}

int main(int argc, char **argv) {
  fill_std_fds();
  gvl_t *g = make_gvl();
  if (g == NULL) return fail("cannot create the GVL", errno);
  evl_config_t ec;
  memset(&ec, 0, sizeof ec);
  ec.no_thread = 1;
  ec.prio = EVL_PRIO_BOOST;
  if (env_long("GVLOOP_NO_BOOST", 0, 1, 0)) {
    ec.prio = EVL_PRIO_NORMAL;
    host_prio = TKB_PRIO_NORMAL;
  }
  the_loop = evl_start(g, &ec);
  if (the_loop == NULL) return fail("cannot create the event loop", errno);
  int rc = evl_attach(the_loop);
  if (rc == 0) rc = tkb_notifier_bind(the_loop);
  if (rc != 0) return fail("cannot set up the libuv notifier", rc);
  /* Tcl opens init.tcl next: with no descriptor left after the loop's it
   * would say it cannot find init.tcl, which misleads. */
  int spare = fcntl(0, F_DUPFD_CLOEXEC, 0);
  if (spare < 0) return fail("cannot create the event loop", errno);
  close(spare);
  /* Neither returns: `exit`, the end of the script or of stdin, and (wish)
   * the main window's destruction end the process through Tcl_Exit. */
#ifdef GVSHELL_TCLSH
  Tcl_Main(argc, argv, app_init);
#else
  Tk_Main(argc, argv, app_init);
#endif
  return 0;
}
