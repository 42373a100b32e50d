/* SPDX-License-Identifier: MIT */
/*
 * test_core.c -- libtkbridge without a display: the notifier (timers, file
 * handlers and their traps, alerts, zero block time), evals from threads,
 * host commands under the GVL, errors, shutdown, bad arguments.
 * Run as `tkb_test_core CASE`; each case is its own ctest.
 */
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <sched.h>
#include <time.h>
#include <unistd.h>

#include <tcl.h>

#include "tkb_test.h"

/* ---- evals ------------------------------------------------------------------- */

static void t_eval(void) {
  fx_t f;
  fx_start(&f, 1);
  fx_expect(f.tk, "expr {6*7}", "42");
  CHECK_RC(tkb_eval(f.tk, "set x 1", NULL), 0);
  fx_expect(f.tk, "set x", "1");
  CHECK(strcmp(tkb_notifier_name(), "libuv-notifier") == 0);
  CHECK(tkb_evl(f.tk) == f.l);
  CHECK(tkb_interp(f.tk) == NULL); /* not the loop thread */
  fx_stop(&f);
}

/* `after` ordering that holds however late the loop runs: timers fire by
 * due time, equal due times in creation order, cancelled ones never, and an
 * idle handler made by a timer runs after that timer.  c is due after a and
 * b only if they were made within its 20 ms: a round in which the thread was
 * held off longer between the calls runs again. */
static void t_after_order(void) {
  fx_t f;
  fx_start(&f, 1);
  fx_expect(f.tk,
            "for {set round 0} {$round < 10} {incr round} {\n"
            "  set ::l {}\n"
            "  unset -nocomplain ::idle ::done\n"
            "  set t0 [clock microseconds]\n"
            "  after 20 {lappend ::l c}\n"
            "  after 0 {lappend ::l a}\n"
            "  after 0 {lappend ::l b; after idle {lappend ::l i; set ::idle 1}}\n"
            "  set t1 [clock microseconds]\n"
            "  after 20 {lappend ::l d; set ::done 1}\n"
            "  set id [after 1 {lappend ::l never}]\n"
            "  after cancel $id\n"
            "  vwait ::done\n"
            "  if {![info exists ::idle]} {vwait ::idle}\n"
            "  if {$t1 - $t0 < 20000} break\n"
            "}\n"
            "list [lsearch -all -inline -not $::l i] [expr {[lsearch $::l i] > [lsearch $::l b]}]",
            "{a b c d} 1");
  fx_stop(&f);
}

static void t_fileevent_pipe(void) {
  fx_t f;
  fx_start(&f, 1);
  fx_expect(f.tk,
            "lassign [chan pipe] r w\n"
            "fconfigure $r -blocking 0\n"
            "fconfigure $w -buffering none\n"
            "set ::got {}\n"
            "fileevent $r readable {\n"
            "  set d [read $r]\n"
            "  if {[eof $r]} {close $r; set ::done 1} else {append ::got $d}\n"
            "}\n"
            "after 0 [list puts -nonewline $w hello]\n"
            "after 5 [list apply {w {puts -nonewline $w world; close $w}} $w]\n"
            "vwait ::done\n"
            "set ::got",
            "helloworld");
  fx_stop(&f);
}

static void t_socket(void) {
  fx_t f;
  fx_start(&f, 1);
  fx_expect(f.tk,
            "proc accept {s a p} {fconfigure $s -buffering line -blocking 0;"
            " fileevent $s readable [list echo $s]}\n"
            "proc echo {s} {\n"
            "  if {[gets $s line] < 0} {if {[eof $s]} {close $s}; return}\n"
            "  puts $s echo:$line\n"
            "}\n"
            "set srv [socket -server accept -myaddr 127.0.0.1 0]\n"
            "set port [lindex [fconfigure $srv -sockname] 2]\n"
            "set c [socket -async 127.0.0.1 $port]\n"
            "fconfigure $c -buffering line -blocking 0\n"
            "fileevent $c writable {fileevent $c writable {}; puts $c ping; puts $c pong}\n"
            "set ::lines {}\n"
            "fileevent $c readable {\n"
            "  if {[gets $c line] >= 0} {lappend ::lines $line\n"
            "    if {[llength $::lines] == 2} {set ::done 1}\n"
            "  } elseif {[eof $c]} {set ::done eof}\n"
            "}\n"
            "vwait ::done\n"
            "close $c; close $srv\n"
            "set ::lines",
            "echo:ping echo:pong");
  fx_stop(&f);
}

/* A regular file cannot be polled by epoll: it must count as always ready. */
static void t_regular_file(void) {
  char path[] = "/tmp/tkb_regXXXXXX";
  int fd = mkstemp(path);
  CHECK(fd >= 0);
  CHECK(write(fd, "abc\n", 4) == 4);
  close(fd);
  fx_t f;
  fx_start(&f, 1);
  char script[512];
  snprintf(script, sizeof script,
           "set f [open %s r]\n"
           "fileevent $f readable {append ::r [read $f]; if {[eof $f]} {set ::done 1}}\n"
           "vwait ::done\n"
           "close $f\n"
           "set ::r",
           path);
  fx_expect(f.tk, script, "abc\n");
  fx_stop(&f);
  unlink(path);
}

/* ---- notifier traps, driven from C on the loop thread ------------------------ */

/* A process's POSIX record locks on a file go when it closes any descriptor
 * of that file, so a file handler must open and close none of the file it
 * watches: a fileevent on a locked file (a regular file, a FIFO, a serial
 * line) would otherwise drop the lock, where tclsh keeps it. */
typedef struct {
  int fd[2];
} lk_t;

static void lk_proc(ClientData cd, int mask) {
  (void)cd;
  (void)mask;
}

static void lk_add(tkb_t *tk, struct Tcl_Interp *ip, void *arg) {
  lk_t *k = arg;
  (void)tk;
  (void)ip;
  for (int i = 0; i < 2; i++)
    Tcl_CreateFileHandler(k->fd[i], TCL_READABLE, lk_proc, k);
}

static void lk_del(tkb_t *tk, struct Tcl_Interp *ip, void *arg) {
  lk_t *k = arg;
  (void)tk;
  (void)ip;
  for (int i = 0; i < 2; i++) Tcl_DeleteFileHandler(k->fd[i]);
}

/* Whether another process finds path write-locked (by this one). */
static int lk_held(const char *path) {
  pid_t pid = fork();
  CHECK(pid >= 0);
  if (pid == 0) {
    int fd = open(path, O_RDWR | O_NONBLOCK);
    struct flock fl;
    memset(&fl, 0, sizeof fl);
    fl.l_type = F_WRLCK;
    fl.l_whence = SEEK_SET;
    _exit(fd >= 0 && fcntl(fd, F_GETLK, &fl) == 0 && fl.l_type != F_UNLCK
              ? 0 : 1);
  }
  int st;
  CHECK(waitpid(pid, &st, 0) == pid);
  return WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

static void t_locks_kept(void) {
  char file[] = "/tmp/tkb_lkXXXXXX", fifo[64];
  lk_t k;
  k.fd[0] = mkstemp(file);
  CHECK(k.fd[0] >= 0);
  snprintf(fifo, sizeof fifo, "%s.fifo", file);
  CHECK(mkfifo(fifo, 0600) == 0);
  k.fd[1] = open(fifo, O_RDWR | O_NONBLOCK);
  CHECK(k.fd[1] >= 0);
  const char *path[2] = {file, fifo};
  for (int i = 0; i < 2; i++) {
    struct flock fl;
    memset(&fl, 0, sizeof fl);
    fl.l_type = F_WRLCK;
    fl.l_whence = SEEK_SET;
    CHECK(fcntl(k.fd[i], F_SETLK, &fl) == 0);
    CHECK(lk_held(path[i]));
  }
  fx_t f;
  fx_start(&f, 1);
  for (int round = 0; round < 2; round++) {
    CHECK_RC(tkb_run(f.tk, lk_add, &k), 0);
    CHECK_RC(tkb_eval(f.tk, "after 20 {set ::lk 1}; vwait ::lk", NULL), 0);
    for (int i = 0; i < 2; i++) CHECK(lk_held(path[i]));
    CHECK_RC(tkb_run(f.tk, lk_del, &k), 0);
    for (int i = 0; i < 2; i++) CHECK(lk_held(path[i]));
  }
  fx_stop(&f);
  for (int i = 0; i < 2; i++) CHECK(lk_held(path[i]));
  close(k.fd[0]);
  close(k.fd[1]);
  unlink(file);
  unlink(fifo);
}

typedef struct {
  int rfd, wfd;
  int n1, n2;
  int flags_before, flags_after;
} fdt_t;

static void count1(ClientData cd, int mask) {
  fdt_t *t = cd;
  (void)mask;
  t->n1++;
}

static void count2(ClientData cd, int mask) {
  fdt_t *t = cd;
  char c;
  (void)mask;
  t->n2++;
  CHECK(read(t->rfd, &c, 1) == 1);
  Tcl_DeleteFileHandler(t->rfd);
}

/* A handler deleted while its event is queued must not fire; a handler that
 * replaced it for the same fd fires only for readiness seen after. */
static void deleted_handler_fn(tkb_t *tk, struct Tcl_Interp *ip, void *arg) {
  fdt_t *t = arg;
  (void)tk;
  (void)ip;
  CHECK(write(t->wfd, "x", 1) == 1);
  Tcl_CreateFileHandler(t->rfd, TCL_READABLE, count1, t);
  /* Waits (queuing the file event) but services timer events only. */
  Tcl_DoOneEvent(TCL_TIMER_EVENTS | TCL_DONT_WAIT);
  Tcl_DeleteFileHandler(t->rfd);
  Tcl_CreateFileHandler(t->rfd, TCL_READABLE, count2, t);
  for (int i = 0; i < 100 && t->n2 == 0; i++) Tcl_DoOneEvent(TCL_ALL_EVENTS | TCL_DONT_WAIT);
}

static void t_deleted_handler(void) {
  fx_t f;
  int p[2];
  CHECK(pipe(p) == 0);
  fdt_t t = {p[0], p[1], 0, 0, 0, 0};
  fx_start(&f, 1);
  CHECK_RC(tkb_run(f.tk, deleted_handler_fn, &t), 0);
  CHECK(t.n1 == 0);
  CHECK(t.n2 == 1);
  fx_stop(&f);
  close(p[0]);
  close(p[1]);
}

/* A descriptor ready while its event sits unserved in Tcl's queue (the
 * loop services timer events only) must not make the waits spin: its poll
 * waits until the event is served, then starts again (count1 does not
 * read, so the pipe is ready again at once, as select() would say). */
static int unserved_timer_fired;
static void unserved_timer(ClientData cd) {
  (void)cd;
  unserved_timer_fired = 1;
}

static void unserved_fn(tkb_t *tk, struct Tcl_Interp *ip, void *arg) {
  fdt_t *t = arg;
  (void)tk;
  (void)ip;
  CHECK(write(t->wfd, "x", 1) == 1);
  Tcl_CreateFileHandler(t->rfd, TCL_READABLE, count1, t);
  unserved_timer_fired = 0;
  Tcl_CreateTimerHandler(200, unserved_timer, NULL);
  while (!unserved_timer_fired) Tcl_DoOneEvent(TCL_TIMER_EVENTS);
  t->flags_before = t->n1;   /* 0: the file event waited */
  for (int i = 0; i < 1000 && t->n1 < 3; i++) Tcl_DoOneEvent(TCL_ALL_EVENTS | TCL_DONT_WAIT);
  Tcl_DeleteFileHandler(t->rfd);
}

static void t_ready_unserved(void) {
  fx_t f;
  int p[2];
  tkb_stats_t a, b;
  CHECK(pipe(p) == 0);
  fdt_t t = {p[0], p[1], 0, 0, 0, 0};
  fx_start(&f, 1);
  CHECK_RC(tkb_stats(f.tk, &a), 0);
  CHECK_RC(tkb_run(f.tk, unserved_fn, &t), 0);
  CHECK_RC(tkb_stats(f.tk, &b), 0);
  CHECK(t.flags_before == 0);
  CHECK(t.n1 == 3);                        /* the poll started again */
  /* A few waits while the event waited, not one per loop pass (a spin
   * makes thousands in the 200 ms). */
  CHECK(b.ntf_waits - a.ntf_waits < 100);
  fx_stop(&f);
  close(p[0]);
  close(p[1]);
}

/* C code that closes a descriptor before deleting its handler, or makes
 * its number name another file (dup2), while another descriptor keeps the
 * first file open: the kernel may go on reporting that file.  Its data
 * must neither make the wait spin (a spin makes thousands of waits in the
 * 200 ms) nor reach a handler now on the number, as under tclsh, whose
 * select() watches numbers:
 *   closed   closed, then its handler deleted;
 *   reused   the same, then the number names a new pipe with a handler;
 *   renamed  the number names a new pipe (dup2), and the handler is made
 *            again for writable (a read end never is).
 * Then data comes to the first pipe. */
typedef struct {
  fdt_t t;
  int keep, mode, q[2];
} orphan_t;

static void orphan_fn(tkb_t *tk, struct Tcl_Interp *ip, void *arg) {
  orphan_t *o = arg;
  int fd = o->t.rfd;
  (void)tk;
  (void)ip;
  o->keep = dup(fd);
  CHECK(o->keep >= 0);
  Tcl_CreateFileHandler(fd, TCL_READABLE, count1, &o->t);
  if (o->mode == 2) {
    CHECK(pipe(o->q) == 0 && dup2(o->q[0], fd) == fd);
    Tcl_CreateFileHandler(fd, TCL_WRITABLE, count1, &o->t);
  } else {
    close(fd);
    Tcl_DeleteFileHandler(fd);
    if (o->mode == 1) {
      CHECK(pipe(o->q) == 0 && dup2(o->q[0], fd) == fd);
      Tcl_CreateFileHandler(fd, TCL_READABLE, count1, &o->t);
    }
  }
  CHECK(write(o->t.wfd, "x", 1) == 1);
}

static void orphan(int mode) {
  fx_t f;
  int p[2];
  tkb_stats_t a, b;
  CHECK(pipe(p) == 0);
  orphan_t o = {{p[0], p[1], 0, 0, 0, 0}, -1, mode, {-1, -1}};
  fx_start(&f, 1);
  CHECK_RC(tkb_stats(f.tk, &a), 0);
  CHECK_RC(tkb_run(f.tk, orphan_fn, &o), 0);
  fx_expect(f.tk, "after 200 {set ::got late}; vwait ::got; set ::got", "late");
  CHECK_RC(tkb_stats(f.tk, &b), 0);
  CHECK(o.t.n1 == 0);
  CHECK(b.ntf_waits - a.ntf_waits < 100);
  fx_stop(&f);
  close(o.keep);
  close(p[1]);
  if (mode > 0) {
    close(p[0]);
    close(o.q[0]);
    close(o.q[1]);
  }
}

static void t_closed_first(void) { orphan(0); }
static void t_closed_reused(void) { orphan(1); }
static void t_renamed_fd(void) { orphan(2); }

/* A pipe whose writer has gone: select() reports it readable, never as an
 * exception or writable.  A handler of exception only is never called
 * (and the wait does not spin on the hang-up epoll reports anyway); one of
 * readable and exception is called for readable. */
typedef struct {
  int r[2];
  int n_exc, n_both, mask_both;
} hup_t;

static void hup_exc(ClientData cd, int mask) {
  (void)mask;
  ((hup_t *)cd)->n_exc++;
}

static void hup_both(ClientData cd, int mask) {
  hup_t *h = cd;
  h->n_both++;
  h->mask_both = mask;
  Tcl_DeleteFileHandler(h->r[1]);
}

static void hup_fn(tkb_t *tk, struct Tcl_Interp *ip, void *arg) {
  hup_t *h = arg;
  (void)tk;
  (void)ip;
  Tcl_CreateFileHandler(h->r[0], TCL_EXCEPTION, hup_exc, h);
  Tcl_CreateFileHandler(h->r[1], TCL_READABLE | TCL_EXCEPTION, hup_both, h);
}

static void hup_del(tkb_t *tk, struct Tcl_Interp *ip, void *arg) {
  (void)tk;
  (void)ip;
  Tcl_DeleteFileHandler(((hup_t *)arg)->r[0]);
}

static void t_hangup_masks(void) {
  fx_t f;
  int a[2], b[2];
  tkb_stats_t s0, s1;
  CHECK(pipe(a) == 0 && pipe(b) == 0);
  close(a[1]);
  close(b[1]);
  hup_t h = {{a[0], b[0]}, 0, 0, 0};
  fx_start(&f, 1);
  CHECK_RC(tkb_stats(f.tk, &s0), 0);
  CHECK_RC(tkb_run(f.tk, hup_fn, &h), 0);
  fx_expect(f.tk, "after 200 {set ::got late}; vwait ::got; set ::got", "late");
  CHECK_RC(tkb_run(f.tk, hup_del, &h), 0);
  CHECK_RC(tkb_stats(f.tk, &s1), 0);
  CHECK(h.n_exc == 0);
  CHECK(h.n_both == 1 && h.mask_both == TCL_READABLE);
  CHECK(s1.ntf_waits - s0.ntf_waits < 100);
  fx_stop(&f);
  close(a[0]);
  close(b[0]);
}

/* uv_poll_init sets O_NONBLOCK; Tcl channels own the blocking mode. */
static void blocking_fn(tkb_t *tk, struct Tcl_Interp *ip, void *arg) {
  fdt_t *t = arg;
  (void)tk;
  (void)ip;
  t->flags_before = fcntl(t->rfd, F_GETFL);
  Tcl_CreateFileHandler(t->rfd, TCL_READABLE, count1, t);
  t->flags_after = fcntl(t->rfd, F_GETFL);
  Tcl_DeleteFileHandler(t->rfd);
}

static void t_blocking_mode(void) {
  fx_t f;
  int p[2];
  CHECK(pipe(p) == 0);
  fdt_t t = {p[0], p[1], 0, 0, 0, 0};
  fx_start(&f, 1);
  CHECK_RC(tkb_run(f.tk, blocking_fn, &t), 0);
  CHECK((t.flags_before & O_NONBLOCK) == 0);
  CHECK(t.flags_after == t.flags_before);
  CHECK(fcntl(p[1], F_SETFL, O_NONBLOCK) == 0 && fcntl(p[0], F_SETFL, O_NONBLOCK) == 0);
  CHECK_RC(tkb_run(f.tk, blocking_fn, &t), 0);
  CHECK((t.flags_after & O_NONBLOCK) != 0);
  fx_stop(&f);
  close(p[0]);
  close(p[1]);
}

/* The host watches the same descriptor on the same loop as a Tcl handler:
 * both hear about it (a plain uv_poll_init would fail with EEXIST). */
typedef struct {
  fdt_t t;
  atomic_int host;
  evl_id_t id;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int tcl_seen;
} shared_t;

static void shared_host_cb(evl_t *l, void *arg, int status, unsigned events) {
  shared_t *s = arg;
  (void)events;
  if (status != 0) return;
  if (atomic_fetch_add(&s->host, 1) == 0) evl_cancel(l, s->id);
}

static void shared_tcl_proc(ClientData cd, int mask) {
  shared_t *s = cd;
  (void)mask;
  Tcl_DeleteFileHandler(s->t.rfd);
  pthread_mutex_lock(&s->mu);
  s->tcl_seen = 1;
  pthread_cond_broadcast(&s->cv);
  pthread_mutex_unlock(&s->mu);
}

static void shared_fn(tkb_t *tk, struct Tcl_Interp *ip, void *arg) {
  shared_t *s = arg;
  (void)tk;
  (void)ip;
  Tcl_CreateFileHandler(s->t.rfd, TCL_READABLE, shared_tcl_proc, s);
}

/* The host and a Tcl file handler watch one fd on the loop, in either
 * order: both are called. */
static void shared_fd(int tcl_first) {
  fx_t f;
  int p[2];
  CHECK(pipe(p) == 0);
  shared_t s;
  memset(&s, 0, sizeof s);
  s.t.rfd = p[0];
  s.t.wfd = p[1];
  pthread_mutex_init(&s.mu, NULL);
  pthread_cond_init(&s.cv, NULL);
  fx_start(&f, 1);
  if (tcl_first) CHECK_RC(tkb_run(f.tk, shared_fn, &s), 0);
  CHECK_RC(evl_fd_watch(f.l, p[0], EVL_READABLE, 0, shared_host_cb, &s, &s.id), 0);
  if (!tcl_first) CHECK_RC(tkb_run(f.tk, shared_fn, &s), 0);
  CHECK(write(p[1], "x", 1) == 1);
  pthread_mutex_lock(&s.mu);
  while (!s.tcl_seen) pthread_cond_wait(&s.cv, &s.mu);
  pthread_mutex_unlock(&s.mu);
  fx_stop(&f); /* the watch's last call has come by now */
  CHECK(atomic_load(&s.host) >= 1);
  close(p[0]);
  close(p[1]);
}

static void t_shared_fd(void) { shared_fd(0); }
static void t_shared_fd_tcl_first(void) { shared_fd(1); }

/* Zero block time (what Tk asks for while Xlib holds queued events) must
 * make the wait a poll; were it ignored, this test would hang. */
typedef struct {
  int pending;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int done;
} zb_t;

static zb_t zb = {0, PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0};

static void zb_setup(ClientData cd, int flags) {
  (void)cd;
  (void)flags;
  if (zb.pending) {
    Tcl_Time t = {0, 0};
    Tcl_SetMaxBlockTime(&t);
  }
}

static int zb_event(Tcl_Event *ev, int flags) {
  (void)ev;
  (void)flags;
  pthread_mutex_lock(&zb.mu);
  zb.done = 1;
  pthread_cond_broadcast(&zb.cv);
  pthread_mutex_unlock(&zb.mu);
  return 1;
}

static void zb_check(ClientData cd, int flags) {
  (void)cd;
  (void)flags;
  if (!zb.pending) return;
  zb.pending = 0;
  Tcl_Event *ev = (Tcl_Event *)ckalloc(sizeof(Tcl_Event));
  ev->proc = zb_event;
  Tcl_QueueEvent(ev, TCL_QUEUE_TAIL);
}

static void zb_install(tkb_t *tk, struct Tcl_Interp *ip, void *arg) {
  (void)tk;
  (void)ip;
  (void)arg;
  Tcl_CreateEventSource(zb_setup, zb_check, NULL);
  zb.pending = 1; /* nothing else will wake the loop */
}

static void zb_remove(tkb_t *tk, struct Tcl_Interp *ip, void *arg) {
  (void)tk;
  (void)ip;
  (void)arg;
  Tcl_DeleteEventSource(zb_setup, zb_check, NULL);
}

static void t_zero_block_time(void) {
  fx_t f;
  fx_start(&f, 1);
  CHECK_RC(tkb_run(f.tk, zb_install, NULL), 0);
  pthread_mutex_lock(&zb.mu);
  while (!zb.done) pthread_cond_wait(&zb.cv, &zb.mu);
  pthread_mutex_unlock(&zb.mu);
  CHECK_RC(tkb_run(f.tk, zb_remove, NULL), 0);
  fx_stop(&f);
}

/* ---- host commands, vwait/update inside them ------------------------------------ */

typedef struct {
  fx_t *f;
  int calls;
  int held_ok;
} hc_t;

static int held_by_me(fx_t *f) {
  gvl_thread_t *me = gvl_thread_self(f->g);
  return me != NULL && gvl_thread_holds(me);
}

/* Runs vwait and update from inside a host callback (GVL held on entry). */
static int nested_cb(tkb_t *tk, void *arg, int argc, const char *const *argv,
                     tkb_result_t *res) {
  hc_t *h = arg;
  (void)argc;
  (void)argv;
  h->calls++;
  if (held_by_me(h->f) && evl_in_loop_thread(h->f->l)) h->held_ok++;
  char *r = NULL;
  /* the nested script calls another host command while we wait */
  CHECK_RC(tkb_eval(tk, "after 5 {set ::x [leaf]}; vwait ::x; set ::x", &r), 0);
  CHECK(strcmp(r, "leaf") == 0);
  free(r);
  CHECK(held_by_me(h->f)); /* the GVL is ours again */
  CHECK_RC(tkb_eval(tk, "after 0 {incr ::u}", NULL), 0);
  CHECK_RC(tkb_eval(tk, "update", NULL), 0);
  fx_expect(tk, "set ::u", "1");
  tkb_result_set(res, "nested-done");
  return 0;
}

static int leaf_cb(tkb_t *tk, void *arg, int argc, const char *const *argv,
                   tkb_result_t *res) {
  hc_t *h = arg;
  (void)tk;
  (void)argc;
  (void)argv;
  if (held_by_me(h->f)) h->held_ok++;
  tkb_result_set(res, "leaf");
  return 0;
}

static void t_vwait_in_cb(void) {
  fx_t f;
  fx_start(&f, 1);
  hc_t h = {&f, 0, 0};
  CHECK_RC(tkb_command_create(f.tk, "nested", nested_cb, &h), 0);
  CHECK_RC(tkb_command_create(f.tk, "leaf", leaf_cb, &h), 0);
  fx_expect(f.tk, "set ::u 0; nested", "nested-done");
  CHECK(h.calls == 1);
  CHECK(h.held_ok == 2);
  /* From a thread holding the GVL: it is released while waiting. */
  gvl_thread_t *me = gvl_thread_attach(f.g, 0);
  CHECK(me != NULL);
  CHECK_RC(gvl_acquire(me), 0);
  fx_expect(f.tk, "set ::u 0; nested", "nested-done");
  CHECK(gvl_thread_holds(me));
  CHECK_RC(gvl_release(me), 0);
  CHECK_RC(gvl_thread_detach(me), 0);
  CHECK_RC(tkb_command_delete(f.tk, "leaf"), 0);
  CHECK_RC(tkb_command_delete(f.tk, "leaf"), TKB_ENOCMD);
  fx_stop(&f);
}

/* ---- errors -------------------------------------------------------------------- */

typedef struct {
  atomic_int on_error;
  atomic_int on_error_held;
  fx_t *f;
  char last[256];
} err_t;

static err_t errs;

static void on_error(tkb_t *tk, const char *msg, void *arg) {
  err_t *e = arg;
  (void)tk;
  if (held_by_me(e->f)) atomic_fetch_add(&e->on_error_held, 1);
  snprintf(e->last, sizeof e->last, "%s", msg);
  atomic_fetch_add(&e->on_error, 1);
}

static int fail_cb(tkb_t *tk, void *arg, int argc, const char *const *argv,
                   tkb_result_t *res) {
  (void)tk;
  (void)arg;
  if (argc > 1) tkb_result_set(res, argv[1]);
  return EIO;
}

/* A host command that fails with the errno value its argument names. */
static int errno_cb(tkb_t *tk, void *arg, int argc, const char *const *argv,
                    tkb_result_t *res) {
  (void)tk, (void)arg, (void)res;
  return argc > 1 ? atoi(argv[1]) : EIO;
}

/* A host command that fails with a code of its own (not an errno value). */
static int oddfail_cb(tkb_t *tk, void *arg, int argc, const char *const *argv,
                      tkb_result_t *res) {
  (void)tk, (void)arg, (void)argc, (void)argv, (void)res;
  return 12345;
}

/* Fails with code argv[2] (default 12345) and message argv[1]. */
static int msgfail_cb(tkb_t *tk, void *arg, int argc, const char *const *argv,
                      tkb_result_t *res) {
  (void)tk, (void)arg;
  tkb_result_set(res, argv[1]);
  return argc > 2 ? atoi(argv[2]) : 12345;
}

typedef struct {
  atomic_int calls;
  atomic_int status;
  char msg[128];
} done_t;

static void done_cb(tkb_t *tk, int status, const char *result, void *arg) {
  done_t *d = arg;
  (void)tk;
  snprintf(d->msg, sizeof d->msg, "%s", result);
  atomic_store(&d->status, status);
  atomic_fetch_add(&d->calls, 1);
}

static void count_run_fn(tkb_t *tk, Tcl_Interp *ip, void *arg) {
  (void)tk, (void)ip, (void)arg;
}

static void t_errors(void) {
  fx_t f;
  tkb_config_t tc;
  memset(&tc, 0, sizeof tc);
  tc.no_tk = 1;
  tc.on_error = on_error;
  tc.on_error_arg = &errs;
  errs.f = &f;
  fx_start_cfg(&f, &tc);
  char *r = NULL;
  CHECK_RC(tkb_eval(f.tk, "error boom", &r), TKB_ETCL);
  CHECK(strcmp(r, "boom") == 0);
  free(r);
  CHECK_RC(tkb_command_create(f.tk, "hostfail", fail_cb, NULL), 0);
  CHECK_RC(tkb_eval(f.tk, "hostfail {custom message}", &r), TKB_ETCL);
  CHECK(strcmp(r, "custom message") == 0);
  free(r);
  CHECK_RC(tkb_eval(f.tk, "hostfail", &r), TKB_ETCL);
  CHECK(strcmp(r, Tcl_ErrnoMsg(EIO)) == 0);
  free(r);
  /* The errorCode names the code: POSIX for errno values, GVLOOP HOST for
   * a host's own code (never "Unknown error" with errorCode NONE). */
  CHECK_RC(tkb_eval(f.tk, "catch hostfail; lrange $::errorCode 0 1", &r), 0);
  CHECK(strcmp(r, "POSIX EIO") == 0);
  free(r);
  /* An errno value the bridge also returns (EPERM: not set up with
   * tkb_evl_config; ECANCELED: the bridge stopped) means the host's
   * failure here, in Tcl's words, as Tcl's own commands say it. */
  CHECK_RC(tkb_command_create(f.tk, "errnofail", errno_cb, NULL), 0);
  const int codes[] = {EPERM, ECANCELED, ENOTSUP, ENOENT};
  for (size_t i = 0; i < sizeof codes / sizeof codes[0]; i++) {
    char script[160], want[160];
    snprintf(script, sizeof script,
             "join [list [catch {errnofail %d} m] $m {*}$::errorCode] |",
             codes[i]);
    snprintf(want, sizeof want, "1|%s|POSIX|%s|%s", Tcl_ErrnoMsg(codes[i]),
             tkb_err_name(codes[i]), Tcl_ErrnoMsg(codes[i]));
    CHECK_RC(tkb_eval(f.tk, script, &r), 0);
    if (strcmp(r, want) != 0) fprintf(stderr, "got {%s} want {%s}\n", r, want);
    CHECK(strcmp(r, want) == 0);
    free(r);
  }
  CHECK_RC(tkb_command_create(f.tk, "oddfail", oddfail_cb, NULL), 0);
  CHECK_RC(tkb_eval(f.tk, "oddfail", &r), TKB_ETCL);
  CHECK(strcmp(r, "oddfail: host command failed with code 12345") == 0);
  free(r);
  CHECK_RC(tkb_eval(f.tk, "catch oddfail; lrange $::errorCode 0 2", &r), 0);
  CHECK(strcmp(r, "GVLOOP HOST 12345") == 0);
  free(r);
  /* {GVLOOP NAME code msg} is a list of four whatever the message holds
   * (braces, a final backslash), for a host's code and for gvloop's. */
  CHECK_RC(tkb_command_create(f.tk, "msgfail", msgfail_cb, NULL), 0);
  char script[600];
  snprintf(script, sizeof script,
           "set msgs [list \"C:\\\\tmp\\\\\" \"x\\} \\{y\" \"a\\{b\" \"x\\}\"]\n"
           "set out {}\n"
           "foreach code {12345 %d} { foreach msg $msgs {\n"
           "  catch {msgfail $msg $code} m o; set ec [dict get $o -errorcode]\n"
           "  lappend out [expr {[string is list $ec] && [llength $ec] == 4 &&\n"
           "                     [lindex $ec 2] == $code && [lindex $ec 3] eq $msg && $m eq $msg}]\n"
           "}}\n"
           "join $out {}",
           TKB_ENOCMD);
  CHECK_RC(tkb_eval(f.tk, script, &r), 0);
  if (strcmp(r, "11111111") != 0) fprintf(stderr, "errorCode lists: %s\n", r);
  CHECK(strcmp(r, "11111111") == 0);
  free(r);
  CHECK(strcmp(tkb_err_name(TKB_ETCL), "TKB_ETCL") == 0);
  CHECK(strcmp(tkb_err_name(TKB_ENOCMD), "TKB_ENOCMD") == 0);
  CHECK(strcmp(tkb_err_name(EVL_ESTOPPED), "EVL_ESTOPPED") == 0);
  CHECK(strcmp(tkb_err_name(ENOTSUP), "ENOTSUP") == 0);  /* not EOPNOTSUPP */
  CHECK(tkb_version() == (unsigned)TKB_VERSION_HEX);
  CHECK(strcmp(tkb_version_string(), TKB_VERSION_STRING) == 0);
  CHECK_RC(tkb_eval(f.tk, "catch {hostfail caught} m; set m", &r), 0);
  CHECK(strcmp(r, "caught") == 0);
  free(r);
  /* From an event handler: reaches bgerror and the host's on_error. */
  fx_expect(f.tk,
            "proc bgerror {m} {set ::bg $m}\n"
            "after 0 {hostfail from-after}\n"
            "vwait ::bg\n"
            "set ::bg",
            "from-after");
  CHECK(atomic_load(&errs.on_error) == 1);
  CHECK(atomic_load(&errs.on_error_held) == 1);
  CHECK(strcmp(errs.last, "from-after") == 0);
  /* async: the error goes to the completion, or to bgerror without one */
  done_t d;
  memset(&d, 0, sizeof d);
  CHECK_RC(tkb_eval_async(f.tk, "error async-boom", done_cb, &d), 0);
  CHECK_RC(tkb_eval_async(f.tk, "error nobody-listens", NULL, NULL), 0);
  fx_expect(f.tk, "update; set ::bg", "nobody-listens");
  CHECK(atomic_load(&d.calls) == 1);
  CHECK(atomic_load(&d.status) == TKB_ETCL);
  CHECK(strcmp(d.msg, "async-boom") == 0);
  CHECK(atomic_load(&errs.on_error) == 2);
  tkb_stats_t st;
  CHECK_RC(tkb_stats(f.tk, &st), 0);
  CHECK(st.cmd_errors == 19);   /* 11, and msgfail 8 times */
  CHECK(st.bg_errors == 2);
  /* runs counts the host's tkb_run calls, not tkb_stats' own. */
  uint64_t runs0 = st.runs;
  CHECK_RC(tkb_run(f.tk, count_run_fn, NULL), 0);
  for (int i = 0; i < 3; i++) CHECK_RC(tkb_stats(f.tk, &st), 0);
  CHECK(st.runs == runs0 + 1);
  fx_stop(&f);
}

/* ---- many evals from threads --------------------------------------------------- */

typedef struct {
  fx_t *f;
  int id;
  int attach;
} worker_t;

static void *eval_worker(void *arg) {
  worker_t *w = arg;
  gvl_thread_t *me = NULL;
  if (w->attach) {
    me = gvl_thread_attach(w->f->g, 0);
    CHECK(me != NULL);
    CHECK_RC(gvl_acquire(me), 0);
  }
  for (int i = 0; i < 250; i++) {
    char script[128], want[32];
    snprintf(script, sizeof script, "incr ::count; expr {%d * 1000 + %d}", w->id, i);
    snprintf(want, sizeof want, "%d", w->id * 1000 + i);
    char *r = fx_eval(w->f->tk, script);
    CHECK(strcmp(r, want) == 0);
    free(r);
    if (me) CHECK(gvl_thread_holds(me));
  }
  if (me) {
    CHECK_RC(gvl_release(me), 0);
    CHECK_RC(gvl_thread_detach(me), 0);
  }
  return NULL;
}

static void t_evals_4threads(void) {
  fx_t f;
  fx_start(&f, 1);
  CHECK_RC(tkb_eval(f.tk, "set ::count 0", NULL), 0);
  pthread_t th[4];
  worker_t w[4];
  for (int i = 0; i < 4; i++) {
    w[i] = (worker_t){&f, i + 1, i % 2};
    CHECK(pthread_create(&th[i], NULL, eval_worker, &w[i]) == 0);
  }
  for (int i = 0; i < 4; i++) pthread_join(th[i], NULL);
  fx_expect(f.tk, "set ::count", "1000");
  tkb_stats_t st;
  CHECK_RC(tkb_stats(f.tk, &st), 0);
  CHECK(st.evals_remote == 1002);
  fx_stop(&f);
}

/* ---- shutdown -------------------------------------------------------------------- */

typedef struct {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int entered, release;
} gate_t;

static gate_t gate = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0};

/* Blocks the loop thread (no events serviced) until released. */
static void gate_fn(tkb_t *tk, struct Tcl_Interp *ip, void *arg) {
  (void)tk;
  (void)ip;
  (void)arg;
  pthread_mutex_lock(&gate.mu);
  gate.entered = 1;
  pthread_cond_broadcast(&gate.cv);
  while (!gate.release) pthread_cond_wait(&gate.cv, &gate.mu);
  pthread_mutex_unlock(&gate.mu);
}

static void *gate_thread(void *arg) {
  fx_t *f = arg;
  CHECK_RC(tkb_run(f->tk, gate_fn, NULL), 0);
  return NULL;
}

static void *sync_eval_thread(void *arg) {
  fx_t *f = arg;
  char *r = (char *)1;
  CHECK_RC(tkb_eval(f->tk, "set ::never 1", &r), ECANCELED);
  CHECK(r == NULL);
  return NULL;
}

enum { NASYNC = 200 };
static atomic_int async_calls[NASYNC];
static atomic_int async_cancelled;

/* When tkb_stop returns, every call accepted before has completed. */
static void *stop_thread(void *arg) {
  fx_t *f = arg;
  CHECK_RC(tkb_stop(f->tk), 0);
  for (int i = 0; i < NASYNC; i++) CHECK(atomic_load(&async_calls[i]) == 1);
  return NULL;
}


static void count_done(tkb_t *tk, int status, const char *result, void *arg) {
  (void)tk;
  (void)result;
  atomic_fetch_add(&async_calls[(intptr_t)arg], 1);
  if (status == ECANCELED) atomic_fetch_add(&async_cancelled, 1);
}

/* Calls pending when tkb_stop runs get ECANCELED, each exactly once. */
static void t_shutdown_pending(void) {
  fx_t f;
  fx_start(&f, 1);
  pthread_t g, s[2], st;
  CHECK(pthread_create(&g, NULL, gate_thread, &f) == 0);
  pthread_mutex_lock(&gate.mu);
  while (!gate.entered) pthread_cond_wait(&gate.cv, &gate.mu);
  pthread_mutex_unlock(&gate.mu);
  for (intptr_t i = 0; i < NASYNC; i++)
    CHECK_RC(tkb_eval_async(f.tk, "incr ::n", count_done, (void *)i), 0);
  for (int i = 0; i < 2; i++) CHECK(pthread_create(&s[i], NULL, sync_eval_thread, &f) == 0);
  CHECK(pthread_create(&st, NULL, stop_thread, &f) == 0);
  /* wait until the stop is visible: new calls are refused */
  while (tkb_eval_async(f.tk, "", NULL, NULL) == 0) usleep(1000);
  usleep(20000); /* let the sync evals queue (they fail either way) */
  pthread_mutex_lock(&gate.mu);
  gate.release = 1;
  pthread_cond_broadcast(&gate.cv);
  pthread_mutex_unlock(&gate.mu);
  pthread_join(g, NULL);
  pthread_join(st, NULL);
  for (int i = 0; i < 2; i++) pthread_join(s[i], NULL);
  for (int i = 0; i < NASYNC; i++) CHECK(atomic_load(&async_calls[i]) == 1);
  CHECK(atomic_load(&async_cancelled) == NASYNC);
  CHECK_RC(tkb_eval(f.tk, "set x", NULL), ECANCELED);
  CHECK_RC(tkb_eval_async(f.tk, "set x", count_done, (void *)0), ECANCELED);
  CHECK_RC(tkb_stop(f.tk), 0);
  fx_stop(&f);
}

/* A script blocked in vwait is unwound by tkb_stop; evl_stop with a live
 * bridge tears it down too, and queued completions all run. */
static void t_shutdown_running(void) {
  fx_t f;
  fx_start(&f, 1);
  done_t d;
  memset(&d, 0, sizeof d);
  CHECK_RC(tkb_eval_async(f.tk, "vwait ::forever", done_cb, &d), 0);
  CHECK_RC(tkb_eval(f.tk, "after 1 {set ::tick 1}; vwait ::tick", NULL), 0);
  CHECK_RC(tkb_stop(f.tk), 0);
  CHECK(atomic_load(&d.calls) == 1);
  CHECK(atomic_load(&d.status) != 0);
  fx_stop(&f);

  fx_start(&f, 1);
  memset(&d, 0, sizeof d);
  CHECK_RC(tkb_eval_async(f.tk, "vwait ::forever", done_cb, &d), 0);
  for (intptr_t i = 0; i < 10; i++) tkb_eval_async(f.tk, "incr ::n", count_done, (void *)i);
  CHECK_RC(evl_stop(f.l), 0);
  CHECK(atomic_load(&d.calls) == 1);
  for (int i = 0; i < 10; i++) CHECK(atomic_load(&async_calls[i]) == 1);
  CHECK_RC(tkb_eval(f.tk, "set x", NULL), ECANCELED);
  fx_stop(&f);
}

/* evl_stop while a script runs that never enters Tcl's event loop (a
 * CPU-bound loop, a loop of host commands): the evloop's stop unwinds it,
 * as tkb_stop does, and the waiting tkb_eval gives TKB_ETCL. */
static atomic_int busy_started;

/* A host command that counts its calls in the atomic_int at arg. */
static int count_cmd(tkb_t *tk, void *arg, int argc, const char *const *argv,
                     tkb_result_t *res) {
  (void)tk;
  (void)argc;
  (void)argv;
  (void)res;
  atomic_fetch_add((atomic_int *)arg, 1);
  return 0;
}

typedef struct {
  tkb_t *tk;
  const char *script;
  int rc;
} busy_eval_t;

static void *busy_eval(void *arg) {
  busy_eval_t *b = arg;
  b->rc = tkb_eval(b->tk, b->script, NULL);
  return NULL;
}

/* tkb_notifier_bind: "the binding lasts as long as the thread's Tcl".
 * After Tcl_FinalizeThread the thread binds a new loop for a second
 * session (it got EBUSY), and plain Tcl afterwards runs on a notifier of
 * its own (it crashed on the freed loop). */
static void tcl_session(void) {
  Tcl_Interp *ip = Tcl_CreateInterp();
  CHECK(ip != NULL);
  int code = Tcl_Eval(ip, "after 1 {set ::x 1}; vwait ::x; set ::x");
  if (code != TCL_OK) fprintf(stderr, "tcl_session: %s\n", Tcl_GetStringResult(ip));
  CHECK(code == TCL_OK);
  CHECK(strcmp(Tcl_GetStringResult(ip), "1") == 0);
  Tcl_DeleteInterp(ip);
  Tcl_FinalizeThread();
}

static void t_bind_after_finalize(void) {
  gvl_t *g = gvl_create(NULL);
  CHECK(g != NULL);
  for (int round = 0; round < 2; round++) {
    evl_config_t ec = {.no_thread = 1};
    evl_t *l = evl_start(g, &ec);
    CHECK(l != NULL);
    CHECK_RC(evl_attach(l), 0);
    CHECK_RC(tkb_notifier_bind(l), 0);
    tcl_session();
    CHECK_RC(evl_detach(l), 0);
    CHECK_RC(evl_destroy(l), 0);
  }
  tcl_session();
  CHECK_RC(gvl_destroy(g), 0);
}

/* Tcl_SetTimer's timer: host code that Tcl runs between its own waits (a
 * host command) and that blocks in evl_step is ended by a Tcl timer made
 * before it, so control comes back to Tcl, which then runs the timer.  A
 * watchdog ends the wait after 10 s if nothing else does, and counts. */
typedef struct {
  evl_t *l;
  atomic_int done;           /* the host command's evl_step returned */
  atomic_int watchdog;       /* the watchdog had to end it           */
  int step_rc;
} hs_t;

static void *hs_watchdog(void *arg) {
  hs_t *h = arg;
  for (int i = 0; i < 1000 && !atomic_load(&h->done); i++) usleep(10000);
  if (!atomic_load(&h->done)) {
    atomic_store(&h->watchdog, 1);
    (void)evl_wakeup(h->l);
  }
  return NULL;
}

static int step_cb(tkb_t *tk, void *arg, int argc, const char *const *argv,
                   tkb_result_t *res) {
  hs_t *h = arg;
  (void)tk; (void)argc; (void)argv; (void)res;
  pthread_t wd;
  CHECK_RC(pthread_create(&wd, NULL, hs_watchdog, h), 0);
  h->step_rc = evl_step(h->l, -1);
  atomic_store(&h->done, 1);
  CHECK_RC(pthread_join(wd, NULL), 0);
  return 0;
}

static void t_host_step_timer(void) {
  fx_t f;
  fx_start(&f, 1);
  for (int round = 0; round < 3; round++) {
    hs_t h = {.l = f.l};
    CHECK_RC(tkb_command_create(f.tk, "stepwait", step_cb, &h), 0);
    fx_expect(f.tk, "unset -nocomplain ::fired; after 20 {set ::fired 1}; stepwait; "
                    "vwait ::fired; set ::fired", "1");
    CHECK_RC(h.step_rc, 0);
    CHECK(atomic_load(&h.watchdog) == 0);
  }
  fx_stop(&f);
}

/* A host callback that Tcl's own timed wait dispatches (an evl_timer on the
 * bridge's loop) and that waits in evl_step until a Tcl timer is due: that
 * wait is ended by the deadline timer of the Tcl wait it is nested in (the
 * timerfd), so each step returns and none runs to the watchdog.  t_due is
 * a bound below the Tcl timer's due time, taken before the `after` is made. */
typedef struct {
  hs_t h;
  uint64_t t_due;
} cs_t;

static void cs_timer_cb(evl_t *l, void *arg, int status) {
  cs_t *c = arg;
  (void)l;
  if (status != 0) return;
  pthread_t wd;
  CHECK_RC(pthread_create(&wd, NULL, hs_watchdog, &c->h), 0);
  while (gvl_now_ns() < c->t_due && !atomic_load(&c->h.watchdog))
    c->h.step_rc = evl_step(c->h.l, -1);
  atomic_store(&c->h.done, 1);
  CHECK_RC(pthread_join(wd, NULL), 0);
}

static void t_cb_step_timer(void) {
  fx_t f;
  fx_start(&f, 1);
  for (int round = 0; round < 3; round++) {
    cs_t c = {.h = {.l = f.l}};
    c.t_due = gvl_now_ns() + 40000000u;
    CHECK_RC(tkb_eval(f.tk, "unset -nocomplain ::fired; after 40 {set ::fired 1}", NULL), 0);
    CHECK_RC(evl_timer(f.l, 5, 0, 0, cs_timer_cb, &c, NULL), 0);
    fx_expect(f.tk, "vwait ::fired; set ::fired", "1");
    CHECK_RC(c.h.step_rc, 0);
    CHECK(atomic_load(&c.h.done) == 1);
    CHECK(atomic_load(&c.h.watchdog) == 0);
  }
  fx_stop(&f);
}

/* tkb_notifier_commands: its argument checks, EPERM off the loop thread,
 * and a second call keeping the first one's state (the ping count). */
typedef struct {
  Tcl_Interp *ip;
  evl_t *l;
  int rc;
} nc_t;

static void *nc_other(void *arg) {
  nc_t *c = arg;
  c->rc = tkb_notifier_commands(c->ip, c->l, GVL_PRIO_NORMAL);
  return NULL;
}

static void nc_eval(Tcl_Interp *ip, const char *script, const char *want) {
  int code = Tcl_Eval(ip, script);
  if (code != TCL_OK) fprintf(stderr, "%s: %s\n", script, Tcl_GetStringResult(ip));
  CHECK(code == TCL_OK);
  if (want != NULL) CHECK(strcmp(Tcl_GetStringResult(ip), want) == 0);
}

static void t_notifier_commands(void) {
  gvl_t *g = gvl_create(NULL);
  CHECK(g != NULL);
  evl_config_t ec = {.no_thread = 1};
  evl_t *l = evl_start(g, &ec);
  CHECK(l != NULL);
  CHECK_RC(evl_attach(l), 0);
  CHECK_RC(tkb_notifier_bind(l), 0);
  Tcl_Interp *ip = Tcl_CreateInterp();
  CHECK(ip != NULL);
  CHECK_RC(tkb_notifier_commands(NULL, l, GVL_PRIO_NORMAL), EINVAL);
  CHECK_RC(tkb_notifier_commands(ip, NULL, GVL_PRIO_NORMAL), EINVAL);
  CHECK_RC(tkb_notifier_commands(ip, l, GVL_PRIO_MIN - 1), EINVAL);
  CHECK_RC(tkb_notifier_commands(ip, l, GVL_PRIO_MAX + 1), EINVAL);
  nc_t c = {ip, l, -1};
  pthread_t th;
  CHECK_RC(pthread_create(&th, NULL, nc_other, &c), 0);
  CHECK_RC(pthread_join(th, NULL), 0);
  CHECK_RC(c.rc, EPERM);
  CHECK(Tcl_Eval(ip, "gvloop::ping") == TCL_ERROR); /* nothing was made */
  CHECK_RC(tkb_notifier_commands(ip, l, GVL_PRIO_NORMAL), 0);
  nc_eval(ip, "gvloop::ping; gvloop::ping -noboost; dict get [gvloop::stats] pings", "2");
  gvl_stats_t before, after;
  CHECK_RC(gvl_stats(g, &before), 0);
  CHECK_RC(tkb_notifier_commands(ip, l, GVL_PRIO_BOOST), 0);
  nc_eval(ip, "gvloop::ping; dict get [gvloop::stats] pings", "3");
  CHECK_RC(gvl_stats(g, &after), 0);
  CHECK(after.boosts == before.boosts + 1);  /* the new prio took */
  Tcl_DeleteInterp(ip);
  Tcl_FinalizeThread();
  CHECK_RC(evl_detach(l), 0);
  CHECK_RC(evl_destroy(l), 0);
  CHECK_RC(gvl_destroy(g), 0);
}

/* tkb_errmsg keeps a long message's first 4095 bytes, cut between
 * characters: Tk's message names a display of 4500 bytes of 3-byte
 * characters. */
static void t_errmsg_long(void) {
  static char disp[4501];
  for (int i = 0; i < 1500; i++) memcpy(disp + 3 * i, "\xe4\xb8\xad", 3);
  gvl_t *g = gvl_create(NULL);
  CHECK(g != NULL);
  evl_t *l = fx_loop(g);
  tkb_config_t tc;
  memset(&tc, 0, sizeof tc);
  tc.display = disp;
  tkb_t *tk = NULL;
  CHECK_RC(tkb_start(l, &tc, &tk), ENOTSUP);
  const char *m = tkb_errmsg();
  size_t n = strlen(m);
  CHECK(n > 4000 && n <= 4095);
  CHECK(strstr(m, "\xe4\xb8\xad\xe4\xb8\xad") != NULL);
  /* Whole characters only: the last lead byte has all its continuation
   * bytes. */
  size_t lead = n;
  while (lead > 0 && ((unsigned char)m[lead - 1] & 0xC0) == 0x80) lead--;
  CHECK(lead > 0);
  unsigned char b = (unsigned char)m[lead - 1];
  size_t want = b < 0x80 ? 1 : b >= 0xF0 ? 4 : b >= 0xE0 ? 3 : 2;
  CHECK(n - (lead - 1) == want);
  CHECK_RC(evl_destroy(l), 0);
  CHECK_RC(gvl_destroy(g), 0);
}

static void t_stop_busy(void) {
  static const char *const scripts[] = {
      "mark; while 1 {}",
      "mark; while 1 {mark}",
      "mark; proc spin {} {while 1 {incr ::n}}; spin",
  };
  for (int i = 0; i < 3; i++) {
    fx_t f;
    pthread_t th;
    busy_eval_t b;
    fx_start(&f, 1);
    CHECK_RC(tkb_command_create(f.tk, "mark", count_cmd, &busy_started), 0);
    atomic_store(&busy_started, 0);
    b.tk = f.tk;
    b.script = scripts[i];
    b.rc = -1;
    CHECK(pthread_create(&th, NULL, busy_eval, &b) == 0);
    while (!atomic_load(&busy_started)) usleep(1000);
    CHECK_RC(evl_stop(f.l), 0);
    CHECK(pthread_join(th, NULL) == 0);
    CHECK_RC(b.rc, TKB_ETCL);
    CHECK_RC(tkb_eval(f.tk, "set x 1", NULL), ECANCELED);
    fx_stop(&f);
  }
}

/* Stopping bridge A while a script of A runs one of bridge B (the same loop
 * thread) through a host command, B loops on `update idletasks`, and A
 * then loops without entering the event loop: A must still unwind.  The
 * idle call that clears a stop's cancel (tkb_bridge.c, uncancel_idle) ran
 * in B's `update idletasks` with A's script still on the stack and cleared
 * A's cancel; the STOP call, a Tcl event, never ran, and tkb_stop waited
 * for ever.  The wait here is bounded only to fail instead of hanging. */
static tkb_t *nested_b;

static int call_b_cmd(tkb_t *tk, void *arg, int argc, const char *const *argv,
                      tkb_result_t *res) {
  (void)tk;
  (void)arg;
  (void)res;
  CHECK(argc == 2);
  return tkb_eval(nested_b, argv[1], NULL) == 0 ? 0 : EIO;
}

typedef struct {
  tkb_t *tk;
  atomic_int done;
} stopper_t;

static void *stopper(void *arg) {
  stopper_t *s = arg;
  CHECK_RC(tkb_stop(s->tk), 0);
  atomic_store(&s->done, 1);
  return NULL;
}

static void t_stop_nested_idle(void) {
  fx_t f;
  fx_start(&f, 1);
  tkb_config_t tc;
  memset(&tc, 0, sizeof tc);
  tc.no_tk = 1;
  CHECK_RC(tkb_start(f.l, &tc, &nested_b), 0);
  CHECK_RC(tkb_command_create(f.tk, "callb", call_b_cmd, NULL), 0);
  CHECK_RC(tkb_command_create(nested_b, "mark", count_cmd, &busy_started), 0);
  atomic_store(&busy_started, 0);
  busy_eval_t b = {f.tk,
                   "callb {mark; for {set i 0} {$i < 50} {incr i} {after 10; update idletasks}}\n"
                   "while 1 {}",
                   -1};
  pthread_t th, st;
  CHECK(pthread_create(&th, NULL, busy_eval, &b) == 0);
  while (!atomic_load(&busy_started)) usleep(1000);
  stopper_t s = {f.tk, 0};
  CHECK(pthread_create(&st, NULL, stopper, &s) == 0);
  for (int i = 0; i < 30000 && !atomic_load(&s.done); i++) usleep(1000);
  CHECK(atomic_load(&s.done));
  CHECK(pthread_join(st, NULL) == 0);
  CHECK(pthread_join(th, NULL) == 0);
  CHECK_RC(b.rc, TKB_ETCL);
  CHECK_RC(tkb_destroy(nested_b), 0);
  fx_stop(&f);
}

/* A host command that stops its own bridge, and notes whether the interp
 * was gone when tkb_stop returned (1: still there; -1: not run yet). */
static atomic_int interp_after_stop = -1;

static int stop_cb(tkb_t *tk, void *arg, int argc, const char *const *argv,
                   tkb_result_t *res) {
  (void)arg;
  (void)argc;
  (void)argv;
  (void)res;
  CHECK_RC(tkb_stop(tk), 0);
  atomic_store(&interp_after_stop, tkb_interp(tk) != NULL);
  return 0;
}

static void t_stop_from_cb(void) {
  fx_t f;
  fx_start(&f, 1);
  CHECK_RC(tkb_command_create(f.tk, "stopme", stop_cb, NULL), 0);
  int rc = tkb_eval(f.tk, "stopme; set ::after_stop 1", NULL);
  CHECK(rc == TKB_ETCL || rc == ECANCELED);
  CHECK_RC(tkb_eval(f.tk, "set ::after_stop", NULL), ECANCELED);
  fx_stop(&f);
}

/* gvl_thread_interrupt ends a waiting tkb_eval with EINTR; the call runs on. */
typedef struct {
  fx_t *f;
  gvl_thread_t *waiter;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int entered;
} intr_t;

static int entered_cb(tkb_t *tk, void *arg, int argc, const char *const *argv,
                      tkb_result_t *res) {
  intr_t *it = arg;
  (void)tk;
  (void)argc;
  (void)argv;
  (void)res;
  pthread_mutex_lock(&it->mu);
  it->entered = 1;
  pthread_cond_broadcast(&it->cv);
  pthread_mutex_unlock(&it->mu);
  return 0;
}

static void *interrupter(void *arg) {
  intr_t *it = arg;
  pthread_mutex_lock(&it->mu);
  while (!it->entered) pthread_cond_wait(&it->cv, &it->mu);
  pthread_mutex_unlock(&it->mu);
  CHECK_RC(gvl_thread_interrupt(it->waiter), 0);
  return NULL;
}

/* Interrupts the waiter once the script has begun, then, a while later
 * (long enough for a wait that the interrupt ended to have returned),
 * lets the script finish. */
static void *late_finisher(void *arg) {
  intr_t *it = arg;
  interrupter(arg);
  struct timespec ts = {0, 50 * 1000 * 1000};
  nanosleep(&ts, NULL);
  CHECK_RC(tkb_eval_async(it->f->tk, "set ::go2 9", NULL, NULL), 0);
  return NULL;
}

static void t_interrupt(void) {
  fx_t f;
  fx_start(&f, 1);
  intr_t it;
  memset(&it, 0, sizeof it);
  it.f = &f;
  pthread_mutex_init(&it.mu, NULL);
  pthread_cond_init(&it.cv, NULL);
  CHECK_RC(tkb_command_create(f.tk, "entered", entered_cb, &it), 0);
  it.waiter = gvl_thread_attach(f.g, 0);
  CHECK(it.waiter != NULL);
  CHECK_RC(gvl_acquire(it.waiter), 0);
  pthread_t th;
  CHECK(pthread_create(&th, NULL, interrupter, &it) == 0);
  char *r = (char *)1;
  CHECK_RC(tkb_eval(f.tk, "entered; vwait ::go; set ::go", &r), EINTR);
  CHECK(r == NULL);
  CHECK(gvl_thread_holds(it.waiter));
  pthread_join(th, NULL);
  CHECK_RC(gvl_check_ints(it.waiter), EINTR);  /* still pending, once */
  CHECK_RC(gvl_check_ints(it.waiter), 0);
  /* Pending before the call: the same (or the call was quicker). */
  CHECK_RC(gvl_thread_interrupt(it.waiter), 0);
  int rc = tkb_eval(f.tk, "set ::x 1", NULL);
  CHECK(rc == EINTR || rc == 0);
  CHECK_RC(gvl_check_ints(it.waiter), EINTR);
  CHECK_RC(gvl_check_ints(it.waiter), 0);
  CHECK_RC(gvl_release(it.waiter), 0);
  fx_expect(f.tk, "set ::go 7", "7"); /* the abandoned eval finishes now */
  /* A waiter that does not hold the GVL is not interrupted: it waits for
   * the call's end, and the interrupt stays pending. */
  it.entered = 0;
  CHECK(pthread_create(&th, NULL, late_finisher, &it) == 0);
  r = NULL;
  CHECK_RC(tkb_eval(f.tk, "entered; vwait ::go2; set ::go2", &r), 0);
  CHECK(r != NULL && strcmp(r, "9") == 0);
  free(r);
  pthread_join(th, NULL);
  CHECK_RC(gvl_acquire(it.waiter), 0);
  CHECK_RC(gvl_check_ints(it.waiter), EINTR);
  CHECK_RC(gvl_release(it.waiter), 0);
  CHECK_RC(gvl_thread_detach(it.waiter), 0);
  fx_stop(&f);
}


/* ---- the notifier on other threads ------------------------------------------------ */

/* Tcl_ThreadQueueEvent + Tcl_ThreadAlert from another thread wake the loop
 * thread's notifier (alertNotifierProc -> evl_wakeup). */
typedef struct {
  Tcl_ThreadId tid;
} tid_t;

static void get_tid(tkb_t *tk, struct Tcl_Interp *ip, void *arg) {
  (void)tk;
  (void)ip;
  ((tid_t *)arg)->tid = Tcl_GetCurrentThread();
}

static gate_t alerted = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0};

static int alert_event(Tcl_Event *ev, int flags) {
  (void)ev;
  (void)flags;
  pthread_mutex_lock(&alerted.mu);
  alerted.entered++;
  pthread_cond_broadcast(&alerted.cv);
  pthread_mutex_unlock(&alerted.mu);
  return 1;
}

static void t_thread_alert(void) {
  fx_t f;
  fx_start(&f, 1);
  tid_t t;
  CHECK_RC(tkb_run(f.tk, get_tid, &t), 0);
  for (int i = 0; i < 20; i++) {
    Tcl_Event *ev = (Tcl_Event *)ckalloc(sizeof(Tcl_Event));
    ev->proc = alert_event;
    Tcl_ThreadQueueEvent(t.tid, ev, TCL_QUEUE_TAIL);
    Tcl_ThreadAlert(t.tid);
    pthread_mutex_lock(&alerted.mu);
    while (alerted.entered < i + 1) pthread_cond_wait(&alerted.cv, &alerted.mu);
    pthread_mutex_unlock(&alerted.mu);
  }
  tkb_stats_t st;
  CHECK_RC(tkb_stats(f.tk, &st), 0);
  fx_stop(&f);
  CHECK(alerted.entered == 20);
}

/* A thread that is not a loop thread uses Tcl on its own while the bridge
 * runs: the process-wide notifier gives it a private libuv loop. */
static void *plain_tcl_thread(void *arg) {
  (void)arg;
  Tcl_Interp *ip = Tcl_CreateInterp();
  CHECK(Tcl_Eval(ip, "after 5 {set ::x done}; vwait ::x;"
                     " lassign [chan pipe] r w; fconfigure $w -buffering none;"
                     " fileevent $r readable {set ::y [gets $r]}; puts $w hi; vwait ::y;"
                     " close $r; close $w; set res $::x$::y") == TCL_OK);
  CHECK(strcmp(Tcl_GetStringResult(ip), "donehi") == 0);
  Tcl_DeleteInterp(ip);
  Tcl_FinalizeThread();
  return NULL;
}

static void t_other_thread(void) {
  fx_t f;
  CHECK_RC(tkb_notifier_install(), 0); /* before any Tcl use; idempotent */
  CHECK_RC(tkb_notifier_install(), 0);
  fx_start(&f, 1);
  pthread_t th;
  CHECK(pthread_create(&th, NULL, plain_tcl_thread, NULL) == 0);
  fx_expect(f.tk, "after 5 {set ::z 1}; vwait ::z; set ::z", "1");
  pthread_join(th, NULL);
  fx_stop(&f);
}

/* Two evloops, each with its own bridge on its own loop thread: the
 * process-wide notifier keeps per-thread state. */
typedef struct {
  fx_t f;
  int id;
} loop_t;

static void *loop_worker(void *arg) {
  loop_t *lp = arg;
  char s[128], want[32];
  for (int i = 0; i < 50; i++) {
    snprintf(s, sizeof s, "after 1 {set ::v %d}; vwait ::v; expr {$::v + %d}", i, lp->id);
    snprintf(want, sizeof want, "%d", i + lp->id);
    fx_expect(lp->f.tk, s, want);
  }
  return NULL;
}

static void t_two_loops(void) {
  loop_t a, b;
  fx_start(&a.f, 1);
  fx_start(&b.f, 1);
  a.id = 1000;
  b.id = 2000;
  pthread_t ta, tb;
  CHECK(pthread_create(&ta, NULL, loop_worker, &a) == 0);
  CHECK(pthread_create(&tb, NULL, loop_worker, &b) == 0);
  pthread_join(ta, NULL);
  pthread_join(tb, NULL);
  fx_stop(&a.f);
  fx_stop(&b.f);
}

/* evl no_thread mode: the host runs the loop (and so Tcl/Tk) on a thread of
 * its own choosing, as a port that needs Tk on the main thread would. */
static void *run_loop(void *arg) {
  CHECK_RC(evl_run(arg), 0);
  return NULL;
}

static void t_no_thread(void) {
  gvl_t *g = gvl_create(NULL);
  evl_config_t ec;
  memset(&ec, 0, sizeof ec);
  CHECK_RC(tkb_evl_config(&ec), 0);
  ec.no_thread = 1;
  evl_t *l = evl_start(g, &ec);
  CHECK(l != NULL);
  pthread_t th;
  CHECK(pthread_create(&th, NULL, run_loop, l) == 0);
  tkb_config_t tc;
  memset(&tc, 0, sizeof tc);
  tc.no_tk = 1;
  tkb_t *tk = NULL;
  CHECK_RC(tkb_start(l, &tc, &tk), 0);
  fx_expect(tk, "after 1 {set ::v ok}; vwait ::v; set ::v", "ok");
  CHECK_RC(evl_stop(l), 0);
  pthread_join(th, NULL);
  CHECK_RC(tkb_eval(tk, "set ::v", NULL), ECANCELED);
  CHECK_RC(tkb_destroy(tk), 0);
  CHECK_RC(evl_destroy(l), 0);
  CHECK_RC(gvl_destroy(g), 0);
}

/* ---- bad arguments --------------------------------------------------------------- */

static int noop_cb(tkb_t *tk, void *arg, int argc, const char *const *argv,
                   tkb_result_t *res) {
  (void)tk;
  (void)arg;
  (void)argc;
  (void)argv;
  CHECK_RC(tkb_result_set(res, NULL), EINVAL);
  CHECK_RC(tkb_result_set(NULL, "x"), EINVAL);
  return 0;
}

static void noop_fn(tkb_t *tk, struct Tcl_Interp *ip, void *arg) {
  (void)arg;
  CHECK(tkb_interp(tk) == ip && ip != NULL);
}

static void t_bad_args(void) {
  tkb_t *tk = (tkb_t *)1;
  tkb_config_t tc;
  tkb_stats_t st;
  char *r = (char *)1;
  CHECK_RC(tkb_evl_config(NULL), EINVAL);
  CHECK_RC(tkb_start(NULL, NULL, &tk), EINVAL);
  CHECK(tk == NULL);
  CHECK_RC(tkb_stop(NULL), EINVAL);
  CHECK_RC(tkb_destroy(NULL), EINVAL);
  CHECK_RC(tkb_eval(NULL, "x", &r), EINVAL);
  CHECK(r == NULL);
  CHECK_RC(tkb_eval_async(NULL, "x", NULL, NULL), EINVAL);
  CHECK_RC(tkb_run(NULL, noop_fn, NULL), EINVAL);
  CHECK_RC(tkb_command_create(NULL, "x", noop_cb, NULL), EINVAL);
  CHECK_RC(tkb_command_delete(NULL, "x"), EINVAL);
  CHECK_RC(tkb_result_set(NULL, "x"), EINVAL);
  CHECK_RC(tkb_stats(NULL, &st), EINVAL);
  CHECK(tkb_interp(NULL) == NULL);
  CHECK(tkb_evl(NULL) == NULL);
  CHECK(tkb_strerror(TKB_ETCL) != NULL && tkb_strerror(123456) != NULL);

  /* an evloop without the tkbridge driver */
  gvl_t *g = gvl_create(NULL);
  evl_t *plain = evl_start(g, NULL);
  CHECK(plain != NULL);
  CHECK_RC(tkb_start(plain, NULL, &tk), EPERM);
  CHECK(tk == NULL);
  CHECK_RC(evl_destroy(plain), 0);
  /* ... that nobody runs (no_thread): refused at once, not waited for */
  evl_config_t nt = {0};
  nt.no_thread = 1;
  plain = evl_start(g, &nt);
  CHECK(plain != NULL);
  CHECK_RC(tkb_start(plain, NULL, &tk), EPERM);
  CHECK(tk == NULL);
  CHECK_RC(evl_destroy(plain), 0);
  CHECK_RC(gvl_destroy(g), 0);

  fx_t f;
  fx_start(&f, 1);
  memset(&tc, 0, sizeof tc);
  CHECK_RC(tkb_start(f.l, NULL, NULL), EINVAL);
  tc.argc = -1;
  CHECK_RC(tkb_start(f.l, &tc, &tk), EINVAL);
  tc.argc = 2;
  CHECK_RC(tkb_start(f.l, &tc, &tk), EINVAL);
  tc.argc = 0;
  tc.prio = -5;
  CHECK_RC(tkb_start(f.l, &tc, &tk), EINVAL);
  tc.prio = GVL_PRIO_MAX + 1;
  CHECK_RC(tkb_start(f.l, &tc, &tk), EINVAL);
  CHECK_RC(tkb_eval(f.tk, NULL, &r), EINVAL);
  CHECK_RC(tkb_eval_async(f.tk, NULL, NULL, NULL), EINVAL);
  CHECK_RC(tkb_run(f.tk, NULL, NULL), EINVAL);
  CHECK_RC(tkb_command_create(f.tk, NULL, noop_cb, NULL), EINVAL);
  CHECK_RC(tkb_command_create(f.tk, "", noop_cb, NULL), EINVAL);
  {
    /* 1 to 4095 bytes, as tkbridge.h says. */
    static char name[4097];
    memset(name, 'n', 4096);
    CHECK_RC(tkb_command_create(f.tk, name, noop_cb, NULL), EINVAL);
    name[4095] = '\0';
    CHECK_RC(tkb_command_create(f.tk, name, noop_cb, NULL), 0);
    CHECK_RC(tkb_command_delete(f.tk, name), 0);
  }
  CHECK_RC(tkb_command_create(f.tk, "x", NULL, NULL), EINVAL);
  CHECK_RC(tkb_command_delete(f.tk, NULL), EINVAL);
  CHECK_RC(tkb_command_delete(f.tk, "set"), TKB_ENOCMD); /* not ours */
  CHECK_RC(tkb_command_delete(f.tk, "nosuch"), TKB_ENOCMD);
  CHECK_RC(tkb_stats(f.tk, NULL), EINVAL);
  CHECK_RC(tkb_command_create(f.tk, "ns1::ns2::noop", noop_cb, NULL), 0);
  CHECK_RC(tkb_eval(f.tk, "ns1::ns2::noop", NULL), 0);
  CHECK_RC(tkb_run(f.tk, noop_fn, NULL), 0);
  /* a second bridge on the same loop, then everything after stop */
  tkb_t *tk2 = NULL;
  memset(&tc, 0, sizeof tc);
  tc.no_tk = 1;
  CHECK_RC(tkb_start(f.l, &tc, &tk2), 0);
  CHECK_RC(tkb_eval(tk2, "set a 2", NULL), 0);
  CHECK_RC(tkb_eval(f.tk, "info exists a", &r), 0);
  CHECK(strcmp(r, "0") == 0);
  free(r);
  CHECK_RC(tkb_destroy(tk2), 0);
  CHECK_RC(tkb_stop(f.tk), 0);
  CHECK_RC(tkb_stop(f.tk), 0);
  CHECK_RC(tkb_eval(f.tk, "set x 1", NULL), ECANCELED);
  CHECK_RC(tkb_eval_async(f.tk, "set x 1", NULL, NULL), ECANCELED);
  CHECK_RC(tkb_run(f.tk, noop_fn, NULL), ECANCELED);
  CHECK_RC(tkb_command_create(f.tk, "y", noop_cb, NULL), ECANCELED);
  CHECK_RC(tkb_command_delete(f.tk, "y"), ECANCELED);
  CHECK_RC(tkb_stats(f.tk, &st), 0);
  CHECK_RC(evl_stop(f.l), 0);
  CHECK_RC(tkb_start(f.l, NULL, &tk), ECANCELED);
  fx_stop(&f);
}

/* ---- misuse and stop under an interrupt ------------------------------------------- */

/* tkb_destroy twice (and tkb_stop after it) is a documented misuse that
 * returns EINVAL instead of touching freed memory. */
static void t_destroy_twice(void) {
  fx_t f;
  fx_start(&f, 1);
  CHECK_RC(tkb_destroy(f.tk), 0);
  CHECK_RC(tkb_destroy(f.tk), EINVAL);
  CHECK_RC(tkb_stop(f.tk), EINVAL);
  f.tk = NULL;
  /* With a call still in flight the memory outlives the destroy. */
  fx_t g;
  fx_start(&g, 1);
  CHECK_RC(tkb_eval_async(g.tk, "after 20", NULL, NULL), 0);
  CHECK_RC(tkb_destroy(g.tk), 0);
  CHECK_RC(tkb_destroy(g.tk), EINVAL);
  g.tk = NULL;
  fx_stop(&g);
  fx_stop(&f);
}

static atomic_int stop_done_calls;

static void stop_done(tkb_t *tk, int status, const char *result, void *arg) {
  (void)tk;
  (void)status;
  (void)result;
  (void)arg;
  atomic_fetch_add(&stop_done_calls, 1);
}

/* tkb_stop from a thread holding the GVL with an interrupt pending: the
 * completion of a queued async call needs the GVL on the loop thread, so
 * the stop must wait without it.  The interrupt stays pending. */
static void t_stop_interrupted(void) {
  fx_t f;
  fx_start(&f, 1);
  gvl_thread_t *self = gvl_thread_attach(f.g, 0);
  CHECK(self != NULL);
  CHECK_RC(gvl_acquire(self), 0);
  CHECK_RC(tkb_eval_async(f.tk, "after 50", stop_done, NULL), 0);
  CHECK_RC(gvl_thread_interrupt(self), 0);
  alarm(30); /* a deadlock fails the case instead of waiting for ctest */
  CHECK_RC(tkb_stop(f.tk), 0);
  alarm(0);
  CHECK(atomic_load(&stop_done_calls) == 1);
  CHECK(gvl_thread_holds(self));
  CHECK_RC(gvl_check_ints(self), EINTR);
  CHECK_RC(gvl_release(self), 0);
  CHECK_RC(gvl_thread_detach(self), 0);
  fx_stop(&f);
}

/* A host command that deletes or replaces itself, then fails: the error
 * reaches the script (Tcl frees the command's data as it goes). */
static int self_delete_cb(tkb_t *tk, void *arg, int argc,
                          const char *const *argv, tkb_result_t *res) {
  (void)argc;
  (void)res;
  if (arg != NULL) CHECK_RC(tkb_command_create(tk, argv[0], self_delete_cb, NULL), 0);
  else CHECK_RC(tkb_command_delete(tk, argv[0]), 0);
  return EIO;
}

static void t_self_delete(void) {
  fx_t f;
  char *r = NULL;
  fx_start(&f, 1);
  CHECK_RC(tkb_command_create(f.tk, "gone", self_delete_cb, NULL), 0);
  CHECK_RC(tkb_command_create(f.tk, "renewed", self_delete_cb, &f), 0);
  for (int i = 0; i < 2; i++) {
    CHECK_RC(tkb_eval(f.tk, i ? "renewed" : "gone", &r), TKB_ETCL);
    CHECK(strcmp(r, Tcl_ErrnoMsg(EIO)) == 0);
    free(r);
  }
  fx_expect(f.tk, "info commands gone", "");
  fx_expect(f.tk, "info commands renewed", "renewed");
  fx_stop(&f);
}

/* A script's outcome is the same run nested (from a host command) as run
 * at level 0 (from another thread): `return -code` completes, and codes
 * other than ok and error are errors. */
static const char *const code_scripts[] = {
  "return -code error boom", "return -code 5 x", "return fine", "break",
  "continue", "return -level 2 -code error deep", "error plain", "set ok 1",
};
#define N_CODE_SCRIPTS (sizeof code_scripts / sizeof code_scripts[0])
static int nested_rc[N_CODE_SCRIPTS];
static char *nested_res[N_CODE_SCRIPTS];

static int codes_cb(tkb_t *tk, void *arg, int argc, const char *const *argv,
                    tkb_result_t *res) {
  (void)arg;
  (void)argc;
  (void)argv;
  (void)res;
  for (size_t i = 0; i < N_CODE_SCRIPTS; i++)
    nested_rc[i] = tkb_eval(tk, code_scripts[i], &nested_res[i]);
  return 0;
}

static void t_nested_codes(void) {
  fx_t f;
  fx_start(&f, 1);
  CHECK_RC(tkb_command_create(f.tk, "codes", codes_cb, NULL), 0);
  CHECK_RC(tkb_eval(f.tk, "proc p {} {codes}; p", NULL), 0);
  for (size_t i = 0; i < N_CODE_SCRIPTS; i++) {
    char *r = NULL;
    int rc = tkb_eval(f.tk, code_scripts[i], &r);
    if (rc != nested_rc[i] || strcmp(r, nested_res[i]) != 0) {
      fprintf(stderr, "%s: level 0 %d \"%s\", nested %d \"%s\"\n", code_scripts[i],
              rc, r, nested_rc[i], nested_res[i]);
      abort();
    }
    CHECK(rc == (i < 2 || (i >= 3 && i <= 6) ? TKB_ETCL : 0));
    free(r);
    free(nested_res[i]);
  }
  fx_stop(&f);
}

/* Host code in Tcl in host code, several deep.  Each tkb_eval made holding
 * the GVL runs its script in a blocking region of the loop thread, and a
 * host command in that script, or a callback its vwait dispatches, takes
 * the GVL with the region suspended: every level holds the GVL when it
 * gets control back, and nobody else holds it meanwhile.  With a plain
 * acquire inside the region, a tkb_eval made by the inner host code began
 * and ended a region of its own, which ended the outer one too: the outer
 * host code went on without the GVL (tkbridge.h, "GVL held"), and another
 * thread could take it under its feet. */
static atomic_int deep_bad, deep_inside, deep_stop, deep_b_ran;
static fx_t *deep_f;

/* The GVL is held by the loop thread and nobody else gets it: the
 * contender below would see deep_inside set. */
static void deep_check(void) {
  if (!held_by_me(deep_f)) atomic_fetch_add(&deep_bad, 1);
  atomic_store(&deep_inside, 1);
  usleep(200);
  atomic_store(&deep_inside, 0);
}

static int deep_cb(tkb_t *tk, void *arg, int argc, const char *const *argv,
                   tkb_result_t *res) {
  (void)arg;
  (void)res;
  int depth = argc > 1 ? atoi(argv[1]) : 0;
  deep_check();
  if (depth > 0) {
    char script[96];
    snprintf(script, sizeof script, "deep %d; after 1 {set ::dw%d 1}; vwait ::dw%d",
             depth - 1, depth, depth);
    CHECK_RC(tkb_eval(tk, script, NULL), 0);
    deep_check();
    CHECK_RC(tkb_eval(tk, "deep 0", NULL), 0);
    deep_check();
  }
  return 0;
}

static void *deep_noop(void *arg) { return arg; }

/* Dispatched by the vwait of deep_a's script: a nested pass. */
static void deep_b(evl_t *l, void *arg, int status) {
  (void)arg;
  CHECK_RC(status, 0);
  deep_check();
  CHECK_RC(tkb_eval(deep_f->tk, "deep 1", NULL), 0);
  deep_check();
  CHECK(gvl_call_without(evl_gvl_thread(l), deep_noop, l, NULL, NULL) == l);
  deep_check();
  atomic_fetch_add(&deep_b_ran, 1);
}

static void deep_a(evl_t *l, void *arg, int status) {
  (void)arg;
  CHECK_RC(status, 0);
  deep_check();
  CHECK_RC(evl_post(l, deep_b, NULL, NULL), 0);
  CHECK_RC(tkb_eval(deep_f->tk, "deep 2; after 20 {set ::v 1}; vwait ::v", NULL), 0);
  deep_check();
  CHECK_RC(tkb_eval(deep_f->tk, "update", NULL), 0);
  deep_check();
  atomic_store(&deep_stop, 1);
}

static void *deep_contender(void *arg) {
  gvl_thread_t *t = gvl_thread_attach(deep_f->g, GVL_PRIO_NORMAL);
  (void)arg;
  CHECK(t != NULL);
  while (!atomic_load(&deep_stop)) {
    CHECK_RC(gvl_acquire(t), 0);
    if (atomic_load(&deep_inside)) atomic_fetch_add(&deep_bad, 1);
    CHECK_RC(gvl_release(t), 0);
    usleep(50);
  }
  CHECK_RC(gvl_thread_detach(t), 0);
  return NULL;
}

static void t_nested_evals(void) {
  fx_t f;
  pthread_t th;
  fx_start(&f, 1);
  deep_f = &f;
  CHECK_RC(tkb_command_create(f.tk, "deep", deep_cb, NULL), 0);
  CHECK(pthread_create(&th, NULL, deep_contender, NULL) == 0);
  /* From another thread: the script runs on the loop thread, host commands
   * three deep. */
  CHECK_RC(tkb_eval(f.tk, "deep 3", NULL), 0);
  /* From an evloop callback, with another dispatched inside its vwait. */
  CHECK_RC(evl_post(f.l, deep_a, NULL, NULL), 0);
  while (!atomic_load(&deep_stop)) usleep(1000);
  pthread_join(th, NULL);
  CHECK(atomic_load(&deep_b_ran) == 1);
  CHECK(atomic_load(&deep_bad) == 0);
  fx_stop(&f);
}

/* tkb_stop from a host command tears down at once: timers due in the same
 * pass run no script after it, and the interp is gone when it returns. */
static atomic_int late_calls;


static void t_stop_at_once(void) {
  fx_t f;
  fx_start(&f, 1);
  CHECK_RC(tkb_command_create(f.tk, "stopper", stop_cb, NULL), 0);
  CHECK_RC(tkb_command_create(f.tk, "late", count_cmd, &late_calls), 0);
  /* All three are due when the blocking `after 100` returns: one pass. */
  CHECK_RC(tkb_eval(f.tk, "after 30 stopper; after 31 late; after 60 late; after 100", NULL), 0);
  while (atomic_load(&interp_after_stop) < 0) {  /* the stopper has run */
    struct timespec ts = {0, 1000000};
    nanosleep(&ts, NULL);
  }
  CHECK_RC(tkb_stop(f.tk), 0);
  CHECK(atomic_load(&interp_after_stop) == 0);
  CHECK(atomic_load(&late_calls) == 0);
  CHECK_RC(tkb_eval(f.tk, "late", NULL), ECANCELED);
  fx_stop(&f);
}

/* After stop the counters are the teardown's, read from any thread. */
static tkb_stats_t stats_on_loop;

static void read_stats(tkb_t *tk, struct Tcl_Interp *ip, void *arg) {
  (void)tk;
  (void)ip;
  CHECK_RC(tkb_stats(arg, &stats_on_loop), 0);
}

static void t_stats_after_stop(void) {
  fx_t a;
  tkb_t *b;
  tkb_config_t tc;
  tkb_stats_t sa;
  memset(&tc, 0, sizeof tc);
  tc.no_tk = 1;
  fx_start(&a, 1);
  CHECK_RC(tkb_start(a.l, &tc, &b), 0);   /* a second bridge on the loop */
  CHECK_RC(tkb_stop(a.tk), 0);
  CHECK_RC(tkb_stats(a.tk, &sa), 0);
  for (int i = 0; i < 20; i++)              /* the notifier goes on for b */
    CHECK_RC(tkb_eval(b, "after 1 {set x 1}; vwait x", NULL), 0);
  CHECK_RC(tkb_run(b, read_stats, a.tk), 0);
  CHECK(stats_on_loop.ntf_waits == sa.ntf_waits);
  CHECK(stats_on_loop.ntf_blocking == sa.ntf_blocking);
  CHECK(stats_on_loop.ntf_file_events == sa.ntf_file_events);
  CHECK_RC(tkb_destroy(b), 0);
  fx_stop(&a);
}

/* tkb_run's fn stops the bridge and goes on using the interp it was given:
 * the interp outlives fn (ASan saw it freed under fn). */
static void stop_then_use(tkb_t *tk, struct Tcl_Interp *ip, void *arg) {
  (void)arg;
  CHECK_RC(tkb_stop(tk), 0);
  Tcl_SetObjResult(ip, Tcl_NewStringObj("after", -1));
  CHECK(strcmp(Tcl_GetStringResult(ip), "after") == 0);
}

static void t_run_stop_interp(void) {
  fx_t f;
  fx_start(&f, 1);
  CHECK_RC(tkb_run(f.tk, stop_then_use, NULL), 0);
  CHECK(tkb_interp(f.tk) == NULL);
  fx_stop(&f);
}

/* on_error stops its own bridge and finishes only after another thread's
 * tkb_destroy has returned: the bridge stays valid until it does (ASan
 * saw tkb__run_host read it freed). */
static atomic_int onerr_stopped, onerr_destroyed;

static void stop_and_linger(tkb_t *tk, const char *msg, void *arg) {
  (void)msg;
  (void)arg;
  CHECK_RC(tkb_stop(tk), 0);
  atomic_store(&onerr_stopped, 1);
  while (!atomic_load(&onerr_destroyed)) {
    struct timespec ts = {0, 1000000};
    nanosleep(&ts, NULL);
  }
}

static void t_on_error_stop(void) {
  fx_t f;
  tkb_config_t tc;
  memset(&tc, 0, sizeof tc);
  tc.no_tk = 1;
  tc.on_error = stop_and_linger;
  fx_start_cfg(&f, &tc);
  CHECK_RC(tkb_eval_async(f.tk, "error boom", NULL, NULL), 0);
  while (!atomic_load(&onerr_stopped)) {
    struct timespec ts = {0, 1000000};
    nanosleep(&ts, NULL);
  }
  CHECK_RC(tkb_destroy(f.tk), 0);   /* returns while on_error still runs */
  f.tk = NULL;
  atomic_store(&onerr_destroyed, 1);
  fx_stop(&f);                       /* evl_destroy waits for the loop */
}

/* ---- interrupts, ping, calls racing tkb_destroy ---------------------------- */

/* On the loop thread (a host command, GVL held) with an interrupt pending,
 * tkb_eval, tkb_run and tkb_command_create still run, once each; the
 * interrupt stays pending for the host's next safe point. */
static int li_ran;
static void li_fn(tkb_t *tk, Tcl_Interp *ip, void *arg) {
  (void)tk;
  (void)ip;
  (void)arg;
  li_ran++;
}
static int li_noop(tkb_t *tk, void *arg, int argc, const char *const *argv,
                   tkb_result_t *res) {
  (void)tk, (void)arg, (void)argc, (void)argv, (void)res;
  return 0;
}
static int li_cmd(tkb_t *tk, void *arg, int argc, const char *const *argv,
                  tkb_result_t *res) {
  (void)arg, (void)argc, (void)argv, (void)res;
  gvl_thread_t *t = evl_gvl_thread(tkb_evl(tk));
  CHECK(t != NULL && gvl_thread_holds(t));
  CHECK_RC(gvl_thread_interrupt(t), 0);
  CHECK_RC(tkb_eval(tk, "incr ::ran", NULL), 0);
  CHECK_RC(tkb_run(tk, li_fn, NULL), 0);
  CHECK_RC(tkb_command_create(tk, "li_noop", li_noop, NULL), 0);
  CHECK_RC(gvl_check_ints(t), EINTR);   /* still pending, once */
  CHECK_RC(gvl_check_ints(t), 0);
  return 0;
}
static void t_loop_interrupt(void) {
  fx_t f;
  fx_start(&f, 1);
  CHECK_RC(tkb_eval(f.tk, "set ::ran 0", NULL), 0);
  CHECK_RC(tkb_command_create(f.tk, "li_cmd", li_cmd, NULL), 0);
  char *r = fx_eval(f.tk, "li_cmd; li_noop; set ::ran");
  CHECK(strcmp(r, "1") == 0);
  free(r);
  CHECK(li_ran == 1);
  fx_stop(&f);
}

/* tkb_stats from a thread holding the GVL with an interrupt pending: the
 * wait for the loop thread is interrupted, and it says so (EINTR), with the
 * other fields filled; the interrupt is not lost silently. */
static void t_stats_interrupt(void) {
  fx_t f;
  fx_start(&f, 1);
  gvl_thread_t *t = gvl_thread_attach(f.g, 0);
  CHECK(t != NULL);
  CHECK_RC(gvl_acquire(t), 0);
  tkb_stats_t a, b;
  CHECK_RC(tkb_stats(f.tk, &a), 0);
  CHECK_RC(tkb_eval(f.tk, "set x 1", NULL), 0);
  CHECK_RC(gvl_thread_interrupt(t), 0);
  int rc = tkb_stats(f.tk, &b);
  CHECK(rc == EINTR || gvl_check_ints(t) == EINTR);
  CHECK(b.evals == a.evals + 1);
  CHECK_RC(gvl_release(t), 0);
  CHECK_RC(gvl_thread_detach(t), 0);
  fx_stop(&f);
}

/* gvloop::ping is boosted whatever the bridge's priority; -noboost is not. */
static uint64_t boosts_of(gvl_t *g) {
  gvl_stats_t s;
  CHECK_RC(gvl_stats(g, &s), 0);
  return s.boosts;
}
static void t_ping_boost(void) {
  int prios[2] = {TKB_PRIO_NORMAL, TKB_PRIO_BOOST};
  for (int i = 0; i < 2; i++) {
    fx_t f;
    tkb_config_t tc;
    memset(&tc, 0, sizeof tc);
    tc.no_tk = 1;
    tc.prio = prios[i];
    fx_start_cfg(&f, &tc);
    uint64_t b0 = boosts_of(f.g);
    CHECK_RC(tkb_eval(f.tk, "gvloop::ping", NULL), 0);
    uint64_t b1 = boosts_of(f.g);
    CHECK_RC(tkb_eval(f.tk, "gvloop::ping -noboost", NULL), 0);
    uint64_t b2 = boosts_of(f.g);
    CHECK(b1 - b0 == 1);
    CHECK(b2 - b1 == 0);
    fx_stop(&f);
  }
}

/* tkb_start by a thread holding the GVL with an interrupt pending: it
 * still returns the bridge (an EINTR would leave one running out of
 * reach), and the interrupt stays pending. */
static void t_start_interrupt(void) {
  fx_t f;
  fx_start(&f, 1);
  gvl_thread_t *t = gvl_thread_attach(f.g, 0);
  CHECK(t != NULL);
  CHECK_RC(gvl_acquire(t), 0);
  CHECK_RC(gvl_thread_interrupt(t), 0);
  tkb_config_t tc;
  memset(&tc, 0, sizeof tc);
  tc.no_tk = 1;
  tkb_t *tk2 = NULL;
  CHECK_RC(tkb_start(f.l, &tc, &tk2), 0);
  CHECK(tk2 != NULL);
  CHECK_RC(gvl_check_ints(t), EINTR);
  CHECK_RC(gvl_release(t), 0);
  fx_expect(tk2, "expr {6 * 7}", "42");
  CHECK_RC(tkb_destroy(tk2), 0);
  CHECK_RC(gvl_thread_detach(t), 0);
  fx_stop(&f);
}

/* tkb_stop and tkb_stats on other threads while tkb_destroy drops the
 * caller's reference: the memory outlives them (ASan and valgrind see a
 * use after free otherwise); each returns 0, EINTR or EINVAL. */
static tkb_t *_Atomic dr_cur;
static atomic_int dr_go, dr_quit, dr_mode;
static void *dr_caller(void *arg) {
  (void)arg;
  while (!atomic_load(&dr_quit)) {
    if (!atomic_load(&dr_go)) {
      sched_yield();
      continue;
    }
    tkb_t *tk = atomic_load(&dr_cur);
    if (tk == NULL) continue;
    int rc;
    if (atomic_load(&dr_mode) == 0) {
      rc = tkb_stop(tk);
    } else {
      tkb_stats_t s;
      rc = tkb_stats(tk, &s);
    }
    CHECK(rc == 0 || rc == EINVAL);
    while (atomic_load(&dr_go) && !atomic_load(&dr_quit)) sched_yield();
  }
  return NULL;
}
static void t_destroy_race(void) {
  gvl_t *g = gvl_create(NULL);
  CHECK(g != NULL);
  evl_t *l = fx_loop(g);
  pthread_t th[2];
  for (int i = 0; i < 2; i++) CHECK(pthread_create(&th[i], NULL, dr_caller, NULL) == 0);
  for (int i = 0; i < 200; i++) {
    tkb_config_t tc;
    memset(&tc, 0, sizeof tc);
    tc.no_tk = 1;
    tkb_t *tk;
    CHECK_RC(tkb_start(l, &tc, &tk), 0);
    atomic_store(&dr_mode, i & 1);
    atomic_store(&dr_cur, tk);
    atomic_store(&dr_go, 1);
    for (volatile int k = 0; k < (i % 50) * 100; k++) {
    }
    CHECK_RC(tkb_destroy(tk), 0);
    atomic_store(&dr_cur, NULL);
    struct timespec ts = {0, 2000000};
    nanosleep(&ts, NULL);
    atomic_store(&dr_go, 0);
    ts.tv_nsec = 500000;
    nanosleep(&ts, NULL);
  }
  atomic_store(&dr_quit, 1);
  for (int i = 0; i < 2; i++) pthread_join(th[i], NULL);
  CHECK_RC(evl_destroy(l), 0);
  CHECK_RC(gvl_destroy(g), 0);
}

/* Three threads start bridges while the loop is stopped under them: each
 * tkb_start returns, 0 (the bridge then destroys normally) or ECANCELED.
 * A start queued as a Tcl event behind another's boot, when the stop came
 * before Tcl ran it, was dropped by Tcl_FinalizeThread unanswered, and its
 * caller waited for ever (in 10 of 10 runs of 50 rounds). */
typedef struct {
  evl_t *l;
  tkb_t *tk;
  int rc;
} sr_arg_t;

static void *sr_starter(void *arg) {
  sr_arg_t *a = arg;
  tkb_config_t tc;
  memset(&tc, 0, sizeof tc);
  tc.no_tk = 1;
  a->rc = tkb_start(a->l, &tc, &a->tk);
  return NULL;
}

static void t_start_race(void) {
  gvl_t *g = gvl_create(NULL);
  int started = 0, cancelled = 0;
  CHECK(g != NULL);
  for (int i = 0; i < 40; i++) {
    evl_t *l = fx_loop(g);
    sr_arg_t a[3];
    pthread_t th[3];
    for (int k = 0; k < 3; k++) {
      a[k] = (sr_arg_t){l, NULL, -1};
      CHECK(pthread_create(&th[k], NULL, sr_starter, &a[k]) == 0);
    }
    struct timespec ts = {0, (i % 5) * 1000000L};
    nanosleep(&ts, NULL);
    CHECK_RC(evl_stop(l), 0);
    for (int k = 0; k < 3; k++) {
      pthread_join(th[k], NULL);
      if (a[k].rc == 0) {
        started++;
        CHECK_RC(tkb_destroy(a[k].tk), 0);
      } else {
        CHECK_RC(a[k].rc, ECANCELED);
        cancelled++;
      }
    }
    CHECK_RC(evl_destroy(l), 0);
  }
  (void)started;
  (void)cancelled;
  CHECK_RC(gvl_destroy(g), 0);
}

/* Two tkb_stop calls at once, queued behind a busy loop thread: the first
 * one's teardown cancels the second's queued call, and both return only
 * once the teardown is done, the interp deleted (its deletion callbacks
 * run).  Marking the bridge stopped when the second call was cancelled
 * let both return midway, before Tcl_DeleteInterp. */
static atomic_int st2_deleted, st2_stoppers, st2_early;
static tkb_t *st2_tk;

static void st2_del(ClientData cd, Tcl_Interp *ip) {
  (void)cd;
  (void)ip;
  usleep(100000);
  atomic_store(&st2_deleted, 1);
}

static void st2_reg(tkb_t *tk, Tcl_Interp *ip, void *arg) {
  (void)tk;
  (void)arg;
  Tcl_CallWhenDeleted(ip, st2_del, NULL);
}

/* Holds the loop thread until both stops have begun and had time to post
 * their calls, which then queue behind this one. */
static void st2_busy(tkb_t *tk, Tcl_Interp *ip, void *arg) {
  (void)tk;
  (void)ip;
  (void)arg;
  while (atomic_load(&st2_stoppers) < 2) usleep(1000);
  usleep(50000);
}

static void *st2_runner(void *arg) {
  (void)tkb_run(st2_tk, st2_busy, NULL);
  return arg;
}

static void *st2_stopper(void *arg) {
  atomic_fetch_add(&st2_stoppers, 1);
  CHECK_RC(tkb_stop(st2_tk), 0);
  if (!atomic_load(&st2_deleted)) atomic_fetch_add(&st2_early, 1);
  return arg;
}

static void t_stop_twice(void) {
  fx_t f;
  pthread_t r, s[2];
  fx_start(&f, 1);
  st2_tk = f.tk;
  CHECK_RC(tkb_run(f.tk, st2_reg, NULL), 0);
  CHECK(pthread_create(&r, NULL, st2_runner, NULL) == 0);
  for (int i = 0; i < 2; i++) CHECK(pthread_create(&s[i], NULL, st2_stopper, NULL) == 0);
  pthread_join(r, NULL);
  for (int i = 0; i < 2; i++) pthread_join(s[i], NULL);
  CHECK(atomic_load(&st2_deleted) == 1);
  CHECK(atomic_load(&st2_early) == 0);
  fx_stop(&f);
}

static const tcase_t cases[] = {
    {"loop_interrupt", t_loop_interrupt},
    {"stats_interrupt", t_stats_interrupt},
    {"ping_boost", t_ping_boost},
    {"destroy_race", t_destroy_race},
    {"start_race", t_start_race},
    {"stop_twice", t_stop_twice},
    {"stop_busy", t_stop_busy},
    {"stop_nested_idle", t_stop_nested_idle},
    {"bind_after_finalize", t_bind_after_finalize},
    {"notifier_commands", t_notifier_commands},
    {"host_step_timer", t_host_step_timer},
    {"cb_step_timer", t_cb_step_timer},
    {"errmsg_long", t_errmsg_long},
    {"start_interrupt", t_start_interrupt},
    {"run_stop_interp", t_run_stop_interp},
    {"on_error_stop", t_on_error_stop},
    {"self_delete", t_self_delete},
    {"nested_codes", t_nested_codes},
    {"nested_evals", t_nested_evals},
    {"stop_at_once", t_stop_at_once},
    {"stats_after_stop", t_stats_after_stop},
    {"eval", t_eval},
    {"after_order", t_after_order},
    {"fileevent_pipe", t_fileevent_pipe},
    {"socket", t_socket},
    {"regular_file", t_regular_file},
    {"locks_kept", t_locks_kept},
    {"deleted_handler", t_deleted_handler},
    {"ready_unserved", t_ready_unserved},
    {"closed_first", t_closed_first},
    {"closed_reused", t_closed_reused},
    {"renamed_fd", t_renamed_fd},
    {"hangup_masks", t_hangup_masks},
    {"blocking_mode", t_blocking_mode},
    {"shared_fd", t_shared_fd},
    {"shared_fd_tcl_first", t_shared_fd_tcl_first},
    {"zero_block_time", t_zero_block_time},
    {"vwait_in_cb", t_vwait_in_cb},
    {"errors", t_errors},
    {"evals_4threads", t_evals_4threads},
    {"shutdown_pending", t_shutdown_pending},
    {"shutdown_running", t_shutdown_running},
    {"stop_from_cb", t_stop_from_cb},
    {"interrupt", t_interrupt},
    {"destroy_twice", t_destroy_twice},
    {"stop_interrupted", t_stop_interrupted},
    {"thread_alert", t_thread_alert},
    {"two_loops", t_two_loops},
    {"no_thread", t_no_thread},
    {"other_thread", t_other_thread},
    {"bad_args", t_bad_args},
    {NULL, NULL}};

int main(int argc, char **argv) {
  return run_case(cases, argc, argv);
}
