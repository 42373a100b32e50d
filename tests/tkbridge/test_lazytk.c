/* SPDX-License-Identifier: MIT */
/*
 * test_lazytk.c -- Tk is loaded when a bridge asks for it, not before.
 *
 * This program is linked to libtkbridge and Tcl only, as a host that wants
 * Tcl on its loop is: until a bridge starts Tk, neither libtk nor Xlib is
 * in the process; then Tk works as in wish, the bridge's -name included,
 * and a child interp gets it with `load {} Tk`.
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tkb_test.h"

/* The number of executable mappings of files named *name*: one per copy
 * of a library. */
static int copies(const char *name) {
  FILE *f = fopen("/proc/self/maps", "r");
  CHECK(f != NULL);
  char line[4096];
  int n = 0;
  while (fgets(line, sizeof line, f) != NULL)
    n += strstr(line, name) != NULL && strstr(line, " r-xp ") != NULL;
  fclose(f);
  return n;
}

static void t_lazy(void) {
  CHECK(copies("libtk8.6") == 0 && copies("libX11") == 0);
  fx_t f;
  fx_start(&f, 1);
  fx_expect(f.tk, "expr {6 * 7}", "42");
  fx_expect(f.tk, "llength [info commands winfo]", "0");
  CHECK_RC(tkb_destroy(f.tk), 0);
  CHECK(copies("libtk8.6") == 0 && copies("libX11") == 0);

  tkb_config_t tc;
  memset(&tc, 0, sizeof tc);
  tc.app_name = "lazyapp";
  CHECK_RC(tkb_start(f.l, &tc, &f.tk), 0);
  CHECK(copies("libtk8.6") == 1 && copies("libX11") == 1);
  fx_expect(f.tk, "tk appname", "lazyapp");
  fx_expect(f.tk, "package vsatisfies [package present Tk] 8.6", "1");
  fx_expect(f.tk, "button .b -text hi; pack .b; update; winfo ismapped .b", "1");
  fx_expect(f.tk,
            "interp create c; load {} Tk c\n"
            "set r [c eval {label .l -text x; pack .l; update; winfo exists .l}]\n"
            "interp delete c; set r",
            "1");
  fx_stop(&f);
}

/* Tk bridges on several evloops at once (tkbridge.h), all started together
 * so that their Tk setups would overlap: each has its own main window.
 * Their race inside Xlib (without tk_mu) shows only to TSan: elsewhere
 * this case checks the outcome alone. */
#define AT_ONCE 4

typedef struct {
  fx_t f;
  char name[16];
} both_t;

static void *start_one(void *arg) {
  both_t *b = arg;
  b->f.g = gvl_create(NULL);
  CHECK(b->f.g != NULL);
  b->f.l = fx_loop(b->f.g);
  tkb_config_t tc;
  memset(&tc, 0, sizeof tc);
  tc.app_name = b->name;
  CHECK_RC(tkb_start(b->f.l, &tc, &b->f.tk), 0);
  return NULL;
}

static void t_tk_at_once(void) {
  both_t b[AT_ONCE];
  pthread_t th[AT_ONCE];
  for (int i = 0; i < AT_ONCE; i++) {
    memset(&b[i], 0, sizeof b[i]);
    snprintf(b[i].name, sizeof b[i].name, "app%d", i);
  }
  for (int i = 0; i < AT_ONCE; i++)
    CHECK(pthread_create(&th[i], NULL, start_one, &b[i]) == 0);
  for (int i = 0; i < AT_ONCE; i++) CHECK(pthread_join(th[i], NULL) == 0);
  for (int i = 0; i < AT_ONCE; i++) {
    fx_expect(b[i].f.tk, "tk appname", b[i].name);
    fx_expect(b[i].f.tk, "button .b -text [tk appname]; pack .b; update; .b cget -text",
              b[i].name);
    fx_expect(b[i].f.tk, "winfo children .", ".b");
  }
  for (int i = 0; i < AT_ONCE; i++) fx_stop(&b[i].f);
}

/* An X server that never answers: connections wait in its backlog.  The
 * listening descriptor; *num is its display number on 127.0.0.1. */
static int silent_x(int *num) {
  for (int n = 150; n < 250; n++) {
    int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    CHECK(s >= 0);
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_port = htons((uint16_t)(6000 + n));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind(s, (struct sockaddr *)&a, sizeof a) == 0 && listen(s, 8) == 0) {
      *num = n;
      return s;
    }
    close(s);
  }
  CHECK(!"no free port for a display");
  return -1;
}

typedef struct {
  fx_t f;
  char display[32];
  int rc;
} stuck_t;

static void *stuck_start(void *arg) {
  stuck_t *s = arg;
  tkb_config_t tc;
  memset(&tc, 0, sizeof tc);
  tc.display = s->display;
  s->rc = tkb_start(s->f.l, &tc, &s->f.tk);
  return NULL;
}

typedef struct {
  evl_t *l;
  pid_t pid;
} forker_t;

/* [B's loop thread] fork; the child, which goes on running this thread's
 * Tcl (tkbridge.h), starts a Tcl-only bridge of its own on this loop, and
 * asks for one with Tk, which it must be refused (ENOTSUP, with words that
 * say why) when the parent had a Tk setup under way: it exits 0 if all
 * went so.  The parent gets the child's pid. */
static void fork_and_start(tkb_t *tk, struct Tcl_Interp *ip, void *arg) {
  (void)tk;
  (void)ip;
  forker_t *fk = arg;
  pid_t pid = fork();
  CHECK(pid >= 0);
  if (pid > 0) {
    fk->pid = pid;
    return;
  }
  alarm(30);
  tkb_config_t tc;
  memset(&tc, 0, sizeof tc);
  tc.no_tk = 1;
  tkb_t *c = NULL;
  int rc = tkb_start(fk->l, &tc, &c);
  char *r = NULL;
  if (rc == 0) rc = tkb_eval(c, "expr {6 * 7}", &r);
  int ok = rc == 0 && r != NULL && strcmp(r, "42") == 0;
  tc.no_tk = 0;
  tkb_t *w = NULL;
  rc = tkb_start(fk->l, &tc, &w);
  if (fk->pid == -1) /* asked to check the refusal */
    ok = ok && rc == ENOTSUP && strstr(tkb_errmsg(), "forked") != NULL;
  _exit(ok ? 0 : 1);
}

/* Fork from b's loop thread (check_tk: the child must be refused Tk) and
 * require the child's exit 0. */
static void fork_child_ok(fx_t *b, int check_tk) {
  forker_t fk = {.l = b->l, .pid = check_tk ? -1 : 0};
  CHECK_RC(tkb_run(b->tk, fork_and_start, &fk), 0);
  CHECK(fk.pid > 0);
  int st;
  CHECK(waitpid(fk.pid, &st, 0) == fk.pid);
  if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
    fprintf(stderr, "child: %s %d\n", WIFEXITED(st) ? "exit" : "signal",
            WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
    abort();
  }
}

/* A Tk start stuck connecting to an X server that does not answer holds up
 * no Tcl-only start on another loop.  (Another Tk start would wait: libX11
 * since 1.8 holds a process-wide lock while it connects.)  A child forked
 * meanwhile by a loop thread starts Tcl-only bridges and is refused Tk.
 * Once the server goes away the stuck start fails with ENOTSUP. */
static void t_tk_stuck(void) {
  alarm(60);
  stuck_t a;
  memset(&a, 0, sizeof a);
  int num, lfd = silent_x(&num);
  snprintf(a.display, sizeof a.display, "127.0.0.1:%d", num);
  a.f.g = gvl_create(NULL);
  CHECK(a.f.g != NULL);
  a.f.l = fx_loop(a.f.g);
  pthread_t th;
  CHECK(pthread_create(&th, NULL, stuck_start, &a) == 0);
  /* Its connection is in the backlog: Tk waits for the server's answer. */
  struct pollfd p = {.fd = lfd, .events = POLLIN};
  CHECK(poll(&p, 1, 30000) == 1);

  fx_t b;
  fx_start(&b, 1);
  fx_expect(b.tk, "expr {6 * 7}", "42");
  fork_child_ok(&b, 1);
  fx_stop(&b);

  close(lfd); /* the backlog's connection is reset */
  CHECK(pthread_join(th, NULL) == 0);
  CHECK_RC(a.rc, ENOTSUP);
  CHECK(a.f.tk == NULL);
  fx_stop(&a.f);
  alarm(0);
}

/* 1 once a thread of this process sleeps reading a pipe or FIFO (its wchan
 * is pipe_read, anon_pipe_read in later kernels). */
static int a_thread_reads_a_pipe(void) {
  DIR *d = opendir("/proc/self/task");
  CHECK(d != NULL);
  int found = 0;
  struct dirent *e;
  while (!found && (e = readdir(d)) != NULL) {
    if (e->d_name[0] == '.') continue;
    char path[300], wchan[64];
    snprintf(path, sizeof path, "/proc/self/task/%s/wchan", e->d_name);
    FILE *f = fopen(path, "r");
    if (f == NULL) continue;
    found = fgets(wchan, sizeof wchan, f) != NULL && strstr(wchan, "pipe_read") != NULL;
    fclose(f);
  }
  closedir(d);
  return found;
}

/* A child forked by a loop thread while another thread is in the middle of
 * a boot (here: stuck reading Tcl's init.tcl, a FIFO nobody writes) can
 * start bridges: the boot's lock is not the child's.  Once init.tcl reads
 * as an error, the stuck start fails with TKB_ETCL. */
static void t_fork_mid_boot(void) {
  fx_t b;
  fx_start(&b, 1);
  char dir[] = "/tmp/tkb_lazy_XXXXXX", fifo[64];
  CHECK(mkdtemp(dir) != NULL);
  snprintf(fifo, sizeof fifo, "%s/init.tcl", dir);
  CHECK(mkfifo(fifo, 0600) == 0);
  const char *lib = getenv("TCL_LIBRARY");
  char *saved = lib ? strdup(lib) : NULL;
  CHECK(setenv("TCL_LIBRARY", dir, 1) == 0);
  stuck_t a;
  memset(&a, 0, sizeof a);
  a.f.g = gvl_create(NULL);
  CHECK(a.f.g != NULL);
  a.f.l = fx_loop(a.f.g);
  pthread_t th;
  CHECK(pthread_create(&th, NULL, stuck_start, &a) == 0);
  /* A writer's open succeeds once the boot has the FIFO open to read; the
   * fork waits until the boot sleeps in its read (not between the two,
   * where it may hold a lock of Tcl's own). */
  int wfd = -1;
  for (int i = 0; i < 30000 && wfd < 0; i++) {
    wfd = open(fifo, O_WRONLY | O_NONBLOCK | O_CLOEXEC);
    if (wfd < 0) usleep(1000);
  }
  CHECK(wfd >= 0);
  for (int i = 0; i < 30000 && !a_thread_reads_a_pipe(); i++) usleep(1000);
  CHECK(a_thread_reads_a_pipe());
  if (saved) CHECK(setenv("TCL_LIBRARY", saved, 1) == 0);
  else CHECK(unsetenv("TCL_LIBRARY") == 0);
  free(saved);

  fork_child_ok(&b, 0);

  static const char bad[] = "error {init.tcl unreadable}\n";
  CHECK(write(wfd, bad, sizeof bad - 1) == (ssize_t)(sizeof bad - 1));
  close(wfd);
  CHECK(pthread_join(th, NULL) == 0);
  CHECK_RC(a.rc, TKB_ETCL);
  CHECK(a.f.tk == NULL);
  fx_stop(&a.f);
  fx_stop(&b);
  unlink(fifo);
  rmdir(dir);
}

/* A Tk the host loaded privately (RTLD_LOCAL) from another path is the one
 * a bridge uses: no second copy of Tk in the process. */
static void t_private_copy(void) {
  /* In the test's working directory: /tmp may be mounted noexec. */
  char dir[] = "tkb_tkcopy_XXXXXX", path[64], cmd[256];
  CHECK(mkdtemp(dir) != NULL);
  snprintf(path, sizeof path, "%s/libtk8.6.so", dir);
  snprintf(cmd, sizeof cmd, "cp '%s' '%s'", TEST_TK_LIBRARY, path);
  CHECK(system(cmd) == 0);
  CHECK(dlopen(path, RTLD_NOW | RTLD_LOCAL) != NULL);
  CHECK(copies("libtk8.6") == 1);
  fx_t f;
  fx_start(&f, 0);
  fx_expect(f.tk, "button .b; winfo class .b", "Button");
  CHECK(copies("libtk8.6") == 1);
  fx_stop(&f);
  unlink(path);
  rmdir(dir);
}

int main(int argc, char **argv) {
  static const tcase_t cases[] = {{"lazy", t_lazy},
                                   {"tk_at_once", t_tk_at_once},
                                   {"tk_stuck", t_tk_stuck},
                                   {"fork_mid_boot", t_fork_mid_boot},
                                   {"private_copy", t_private_copy},
                                   {NULL, NULL}};
  return run_case(cases, argc, argv);
}
