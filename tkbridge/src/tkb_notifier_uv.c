/* SPDX-License-Identifier: MIT */
/*
 * tkb_notifier_uv.c -- a Tcl notifier (Notifier.3) on libuv.
 *
 * Installed with Tcl_SetNotifier, so it serves every thread of the process
 * that uses Tcl.  A thread bound to an evloop (tkb__ntf_bind) waits in
 * evl_step(): host callbacks queued on the evloop are dispatched there under
 * the GVL, and Tcl never waits with the GVL held.  Any other thread that
 * happens to use Tcl gets a private uv_loop_t, so Tcl keeps working there.
 *
 * The rule that makes nested event loops (vwait, update, tkwait) safe:
 * libuv callbacks never run Tcl code.  They only note readiness and queue
 * Tcl events, which Tcl_DoOneEvent services after Tcl_WaitForEvent returns
 * (the pattern of Tcl's Xt notifier).  uv_run is therefore never re-entered.
 *
 * Descriptors: Tcl's file handlers are watched in an epoll set of the
 * thread's own (the "set"), by their own numbers, and the loop watches the
 * set's descriptor with one uv_poll.  Traps handled here:
 *  - Not a uv_poll per descriptor: uv_poll_init() refuses a descriptor the
 *    loop already watches (the host may watch it too), so that would take
 *    a dup, and closing a dup drops the process's POSIX record locks on
 *    the file (fcntl F_SETLK), which a fileevent must not do.  The set
 *    opens and closes nothing of Tcl's, and leaves the file's status flags
 *    (O_NONBLOCK: Tcl channels own blocking mode) alone.
 *  - A handler is out of the set when Tcl_DeleteFileHandler returns: Tcl
 *    closes its fd right after, and may reuse the number.
 *  - A fork()ed child shares the set with its parent until it makes its
 *    own (set_check): a handler the child deletes would otherwise leave
 *    the parent's set.
 *  - The set holds the file that was open at a number when its handler
 *    went in.  C code that closes a descriptor before deleting its handler,
 *    or dup2()s another file onto it, can leave the old file there, still
 *    reported while it is open elsewhere: the level-triggered set would
 *    stay ready for ever, or credit its events to a new handler on the
 *    number.  A DEL or MOD that fails, an ADD that finds the number taken,
 *    or an event for a number without a handler makes a new set (set_ctl).
 *    (A dup2 onto a watched number is not seen while Tcl keeps the same
 *    interest in it, where select() watches the number: make the handler
 *    again.)
 *  - Events are reported as select() reports them (events_to_tcl): a
 *    hang-up as readable, an error as readable and writable.  epoll
 *    reports both to every watch, so a handler that wants neither (one of
 *    writable or exception only, at a hang-up) leaves the set until its
 *    mask changes, instead of making the wait spin.
 *  - Regular files (and other descriptors epoll refuses: EPERM) are always
 *    ready, as select() reports them: such handlers make the wait a poll.
 *    A descriptor the kernel will not watch for want of room (the epoll
 *    watch limit, memory, descriptors for the set) is polled instead: each
 *    wait tries to watch it again, asks poll(2) meanwhile and waits at most
 *    NTF_POLLED_MS, so its handler fires when it is ready, as under
 *    select(), a little later.  The loop's watch of the set is taken as the
 *    poll starts (loop_reserve), not left to libuv, which aborts the
 *    process when the kernel refuses it.
 *  - A handler deleted while its event is queued must not fire: events
 *    carry the fd only and look the handler up when serviced (as Tcl does).
 *  - A handler stays in the set while its event is queued: usually the
 *    event is served before the next wait.  Reported again before the event
 *    is served, it leaves the set until it is, so an unread level-triggered
 *    descriptor cannot make the wait spin.
 *  - Handlers that a wait finds ready are queued at its end, in the order
 *    of the handler list, newest first, as Tcl's Unix notifier does: a
 *    script sees several channels' fileevents in the same order as under
 *    tclsh (libuv reports them in the kernel's order).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/timerfd.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <tcl.h>
#include <uv.h>

#include "tkb_notifier.h"
#include "evl_stdfd.h"
#include "evl_wake.h"

typedef struct ntf_s ntf_t;

/* One Tcl file handler.  Owned by the thread's ntf_t; loop thread only. */
typedef struct fh_s {
  int fd;                 /* Tcl's descriptor (the lookup key)            */
  int mask;               /* TCL_READABLE|TCL_WRITABLE|TCL_EXCEPTION      */
  int ready;              /* readiness seen, not yet serviced             */
  int queued;             /* its Tcl event is queued                      */
  int held;               /* ready again before the event was served: out
                             of the set until it is                       */
  int deaf;               /* reported only what it does not want (a hang-up
                             to a handler of writable or exception only):
                             out of the set until its mask changes        */
  int always;             /* not pollable: always ready (regular file)    */
  int polled;             /* the kernel would not watch it: poll(2) at each
                             wait (check_polled)                          */
  uint32_t armed;         /* the epoll events it is in the set for; 0: out */
  Tcl_FileProc *proc;
  ClientData cd;
  ntf_t *n;
  struct fh_s *next;
} fh_t;

/* The Tcl event queued for a ready descriptor. */
typedef struct {
  Tcl_Event hdr;
  int fd;
} fh_event_t;

/* Per-thread notifier state (the ClientData Tcl keeps for the thread).
 * Written only by its own thread, but for alerted and alerts_a, which
 * ntf_alert sets from any thread (atomics; it reads magic first, which
 * ntf_finalize clears). */
#define NTF_MAGIC 0x746b626eu /* "tkbn" */

struct ntf_s {
  uint32_t magic;         /* NTF_MAGIC: ClientData Tcl gives back is ours */
  evl_t *evl;             /* bound evloop; NULL: standalone              */
  uv_loop_t *loop;        /* evl_uv_loop(evl) or &own                    */
  uv_loop_t own;          /* standalone only                             */
  evl__wake_t wake;       /* standalone only: what Tcl_AlertNotifier
                             sends (evl_wake.h); -1s: none              */
  uv_poll_t *wake_poll;   /* standalone only: the loop's watch of it     */
  uv_timer_t *wait_tm;    /* bounds a standalone wait (standalone_wait)  */
  uv_timer_t *set_tm;     /* Tcl_SetTimer                                */
  uint64_t set_due;       /* uv_hrtime() set_tm is for; 0: not set       */
  int tfd;                /* timerfd ending a timed wait to the
                             microsecond (deadline_arm); -1: none yet    */
  unsigned tfd_gen;       /* fork_gen when tfd was made                  */
  int tfd_armed;          /* tfd may still fire                          */
  uv_poll_t *tfd_poll;    /* the loop's watch of tfd                     */
  fh_t *handlers;         /* file handlers, newest first (as Tcl's)      */
  int efd;                /* the set: epoll of the handlers' fds; -1: none */
  unsigned set_gen;       /* fork_gen when the set was made               */
  uv_poll_t *set_poll;    /* the loop's watch of efd (data: this ntf_t)  */
  int pending;            /* some handler is ready and not queued yet    */
  int service_mode;       /* last mode given to the service-mode hook    */
  int tcl_ran;            /* Tcl code ran during the current wait        */
  atomic_int alerted;     /* Tcl_AlertNotifier since the last wait       */
  tkb__ntf_stats_t st;    /* counters (alerts: atomic via alerts_a)      */
  atomic_ullong alerts_a;
};

/* The calling thread's notifier, and the evloop it should bind to.  Thread
 * locals are unavoidable: Tcl calls WaitForEvent etc. without ClientData. */
static _Thread_local ntf_t *tls_ntf;
static _Thread_local evl_t *tls_bind;
static _Thread_local void (*tls_on_stop)(void *);
static _Thread_local void *tls_on_stop_arg;
static _Thread_local int tls_closing;   /* uv_close'd, close cb not run yet */
/* The loop of a binding whose Tcl has finalized, for tkb__ntf_unbind to
 * run the close callbacks still pending there. */
static _Thread_local evl_t *tls_drain;

static pthread_once_t install_once = PTHREAD_ONCE_INIT;

/* Forks so far, counted in the child (ntf_atfork_child): a set made in an
 * earlier generation is shared with the parent. */
static atomic_uint fork_gen;

/* ---- small helpers ------------------------------------------------------ */

/* Ceil a Tcl_Time to milliseconds: rounding down would turn a 0.5 ms wait
 * into a string of zero-timeout polls. */
static int64_t time_to_ms(const Tcl_Time *tp) {
  if (tp == NULL) return -1;
  if (tp->sec < 0 || (tp->sec == 0 && tp->usec <= 0)) return 0;
  return (int64_t)tp->sec * 1000 + ((int64_t)tp->usec + 999) / 1000;
}

static uint32_t tcl_to_epoll(int m) {
  uint32_t ev = 0;
  if (m & TCL_READABLE) ev |= EPOLLIN;
  if (m & TCL_WRITABLE) ev |= EPOLLOUT;
  if (m & TCL_EXCEPTION) ev |= EPOLLPRI;
  return ev;
}

/* poll(2) and epoll events (the same bits on Linux) as select() reports
 * them: a hang-up as readable, an error (or, from poll, a descriptor not
 * open) as readable and writable, only urgent data as an exception. */
_Static_assert(POLLIN == EPOLLIN && POLLOUT == EPOLLOUT &&
               POLLPRI == EPOLLPRI && POLLERR == EPOLLERR &&
               POLLHUP == EPOLLHUP, "poll and epoll bits differ");
static int events_to_tcl(uint32_t ev) {
  int m = 0;
  if (ev & (POLLIN | POLLHUP | POLLERR | POLLNVAL)) m |= TCL_READABLE;
  if (ev & (POLLOUT | POLLERR | POLLNVAL)) m |= TCL_WRITABLE;
  if (ev & POLLPRI) m |= TCL_EXCEPTION;
  return m;
}

static fh_t *fh_find(ntf_t *n, int fd, fh_t ***prevp) {
  fh_t **pp = &n->handlers;
  for (; *pp != NULL; pp = &(*pp)->next)
    if ((*pp)->fd == fd) break;
  if (prevp) *prevp = pp;
  return *pp;
}

static void free_cb(uv_handle_t *h) {
  tls_closing--;
  free(h);
}

static void close_handle(uv_handle_t *h) {
  if (h == NULL) return;
  tls_closing++;
  uv_close(h, free_cb);
}

/* ---- file handlers ------------------------------------------------------- */

static int fh_event_proc(Tcl_Event *ev, int flags);
static void set_cb(uv_poll_t *h, int status, int events);
static void set_check(ntf_t *n);
static void fh_arm(fh_t *fh);

/* Note fh ready; its event is queued by queue_ready, at the wait's end. */
static void fh_mark_ready(fh_t *fh, int mask) {
  mask &= fh->mask;
  if (mask == 0) return;
  fh->ready |= mask;
  if (!fh->queued) fh->n->pending = 1;
}

/* Queue one Tcl event for each ready handler without one, in list order. */
static void queue_ready(ntf_t *n) {
  if (!n->pending) return;
  n->pending = 0;
  for (fh_t *fh = n->handlers; fh; fh = fh->next) {
    if (fh->ready == 0 || fh->queued) continue;
    fh_event_t *ev = (fh_event_t *)ckalloc(sizeof(*ev));
    ev->hdr.proc = fh_event_proc;
    ev->fd = fh->fd;
    Tcl_QueueEvent(&ev->hdr, TCL_QUEUE_TAIL);
    fh->queued = 1;
    n->st.file_events++;
  }
}

/* ---- the set ------------------------------------------------------------- */

/* Take the loop's epoll watch of fd now, where a refusal (the watch limit,
 * no memory) can be answered: uv_poll_start leaves the add to uv_run,
 * which aborts the process if the kernel refuses then.  Made after
 * uv_poll_start, the add here leaves libuv's own to find the watch
 * (EEXIST) and set its events.  Returns 0 or the errno. */
static int loop_reserve(uv_loop_t *loop, int fd) {
  struct epoll_event e;
  int saved = errno, rc = 0;
  memset(&e, 0, sizeof e);
  e.data.fd = fd;
  if (epoll_ctl(uv_backend_fd(loop), EPOLL_CTL_ADD, fd, &e) != 0 &&
      errno != EEXIST)
    rc = errno;
  errno = saved;
  return rc;
}

/* Close the set: uv_close takes efd out of the loop's epoll and drops its
 * events not yet delivered before it returns (only the close callback is
 * deferred), so efd can be closed at once.  Every handler is out of it. */
static void set_close(ntf_t *n) {
  if (n->efd < 0) return;
  n->set_poll->data = NULL;
  close_handle((uv_handle_t *)n->set_poll);
  n->set_poll = NULL;
  close(n->efd);
  n->efd = -1;
  for (fh_t *fh = n->handlers; fh; fh = fh->next) fh->armed = 0;
}

/* Watch fd, a descriptor of our own (an errno in errno if fd < 0), in the
 * loop for readable with cb; *fdp and *pp are set only if that works (fd
 * is closed if not).  It goes at evl__fd_low() or above where the limit
 * allows (never a standard number, which Tcl takes for its std channels
 * when they were closed, nor one the script's next file would get under
 * tclsh).  Returns 0 or the errno. */
static int watch_own(ntf_t *n, int fd, uv_poll_cb cb, int *fdp, uv_poll_t **pp) {
  if (fd < 0) return errno;
  int hi = fcntl(fd, F_DUPFD_CLOEXEC, evl__fd_low());
  if (hi < 0 && fd < 3) hi = fcntl(fd, F_DUPFD_CLOEXEC, 3);
  if (hi >= 0) {
    close(fd);
    fd = hi;
  }
  uv_poll_t *p = calloc(1, sizeof(*p));
  int rc = p == NULL ? ENOMEM : -uv_poll_init(n->loop, p, fd);
  if (rc != 0) {
    free(p);
    close(fd);
    return rc;
  }
  p->data = n;
  rc = -uv_poll_start(p, UV_READABLE, cb);
  if (rc == 0) rc = loop_reserve(n->loop, fd);
  if (rc != 0) {
    close_handle((uv_handle_t *)p);
    close(fd);
    return rc;
  }
  *fdp = fd;
  *pp = p;
  return 0;
}

/* Make the set and the loop's watch of it.  Returns 0 or the errno. */
static int set_open(ntf_t *n) {
  int rc = watch_own(n, epoll_create1(EPOLL_CLOEXEC), set_cb, &n->efd, &n->set_poll);
  if (rc == 0) n->set_gen = atomic_load_explicit(&fork_gen, memory_order_relaxed);
  return rc;
}

/* A new set with every handler in it. */
static void set_remake(ntf_t *n) {
  set_close(n);
  for (fh_t *fh = n->handlers; fh; fh = fh->next) fh_arm(fh);
}

/* A set made before a fork is the parent's too. */
static int set_shared(const ntf_t *n) {
  return n->efd >= 0 &&
         n->set_gen != atomic_load_explicit(&fork_gen, memory_order_relaxed);
}

/* Make one of our own then. */
static void set_check(ntf_t *n) {
  if (set_shared(n)) set_remake(n);
}

/* Put fh in the set for events, or take it out (0).  Returns 0 or the
 * errno: EPERM for a descriptor epoll refuses (a regular file), EBADF for
 * one not open.  The set holds the file open at fd's number when fh went
 * in: a MOD or DEL that fails (ENOENT, EBADF), or an ADD that finds the
 * number there (EEXIST), means the number was closed or made to name
 * another file meanwhile (by C code: Tcl deletes a handler before it
 * closes), and the kernel may go on reporting the old file while it is
 * open elsewhere: a new set then, with every handler as it wants to be. */
static int set_ctl(ntf_t *n, fh_t *fh, uint32_t events) {
  int rc;
  set_check(n);
  if (events == fh->armed) return 0;
  if (n->efd < 0 && (rc = set_open(n)) != 0) return rc;
  struct epoll_event e;
  memset(&e, 0, sizeof e);
  e.events = events;
  e.data.fd = fh->fd;
  int op = events == 0 ? EPOLL_CTL_DEL
         : fh->armed == 0 ? EPOLL_CTL_ADD : EPOLL_CTL_MOD;
  if (epoll_ctl(n->efd, op, fh->fd, &e) == 0) {
    fh->armed = events;
    return 0;
  }
  rc = errno;
  if (op == EPOLL_CTL_ADD && rc != EEXIST) return rc;
  set_remake(n);   /* puts fh in as well, through fh_arm */
  return 0;
}

/* Take fh, unlinked from the handlers already, out of the set (a new set
 * without it when the DEL fails: see set_ctl). */
static void set_drop(ntf_t *n, fh_t *fh) {
  if (n->efd < 0 || fh->armed == 0) return;
  if (set_shared(n) || epoll_ctl(n->efd, EPOLL_CTL_DEL, fh->fd, NULL) != 0)
    set_remake(n);
}

/* Put fh in the set, or take it out, to match its interest.  A descriptor
 * epoll refuses is always ready; one the kernel would not watch (no room,
 * no descriptor for the set) is polled (check_polled). */
static void fh_arm(fh_t *fh) {
  if (fh->always || fh->polled) return;
  uint32_t want = fh->held || fh->deaf ? 0 : tcl_to_epoll(fh->mask);
  int rc = set_ctl(fh->n, fh, want);
  if (rc == EPERM || rc == EBADF) fh->always = 1;
  else if (rc != 0) fh->polled = 1;
}

/* libuv callback for the set: runs inside uv_run, so it only marks
 * handlers ready; the wait queues their Tcl events once evl_step has
 * returned (queue_ready).  Ready already, its event not served yet: the
 * handler leaves the set until it is.  An error status (libuv has stopped
 * the watch) or an event of a number without a handler: a new set. */
static void set_cb(uv_poll_t *h, int status, int events) {
  ntf_t *n = (ntf_t *)h->data;
  struct epoll_event ev[64];
  int orphan = 0;
  (void)events;
  if (n == NULL) return;
  if (status < 0) {
    set_remake(n);
    return;
  }
  set_check(n);
  if (n->efd < 0) return;
  int k = epoll_wait(n->efd, ev, 64, 0);
  for (int i = 0; i < k; i++) {
    fh_t *fh = fh_find(n, ev[i].data.fd, NULL);
    if (fh == NULL || fh->armed == 0) {
      orphan = 1;
      continue;
    }
    int m = events_to_tcl(ev[i].events) & fh->mask;
    if (m == 0) {           /* epoll reports a hang-up or error always */
      fh->deaf = 1;
      fh_arm(fh);
      continue;
    }
    int was = fh->ready;
    fh_mark_ready(fh, m);
    if (was != 0 && !fh->held) {
      fh->held = 1;
      fh_arm(fh);
    }
  }
  if (orphan) set_remake(n);
}

/* Tcl event proc: looks the handler up by fd, so a handler deleted (or
 * replaced) while the event was queued does not fire. */
static int fh_event_proc(Tcl_Event *ev, int flags) {
  ntf_t *n = tls_ntf;
  if (!(flags & TCL_FILE_EVENTS)) return 0;
  if (n == NULL) return 1;
  fh_t *fh = fh_find(n, ((fh_event_t *)ev)->fd, NULL);
  if (fh == NULL) return 1;
  int mask = fh->ready & fh->mask;
  fh->ready = 0;
  fh->queued = 0;
  fh->held = 0;
  fh_arm(fh); /* before proc: proc may delete or change the handler */
  if (mask != 0) fh->proc(fh->cd, mask);
  return 1;
}

/* The hooks Tcl calls from its channel code keep errno: Tcl's read path
 * re-states the channel's interest (Tcl_CreateFileHandler) between the
 * driver's failed read and the error message it builds from errno, and
 * the set's epoll_ctl calls may fail harmlessly (ENOENT) on the way. */
static void create_file_handler(int fd, int mask, Tcl_FileProc *proc,
                                ClientData cd) {
  ntf_t *n = tls_ntf;
  if (n == NULL || fd < 0 || proc == NULL) return;
  fh_t *fh = fh_find(n, fd, NULL);
  if (fh == NULL) {
    fh = calloc(1, sizeof(*fh));
    if (fh == NULL) Tcl_Panic("tkbridge: out of memory (file handler)");
    fh->fd = fd;
    fh->n = n;
    fh->next = n->handlers;
    n->handlers = fh;
  }
  fh->proc = proc;
  fh->cd = cd;
  if (mask != fh->mask) fh->deaf = 0;
  fh->mask = mask;
  fh_arm(fh);
}

static void ntf_create_file_handler(int fd, int mask, Tcl_FileProc *proc,
                                    ClientData cd) {
  int saved = errno;
  create_file_handler(fd, mask, proc, cd);
  errno = saved;
}

static void ntf_delete_file_handler(int fd) {
  ntf_t *n = tls_ntf;
  fh_t **pp;
  if (n == NULL) return;
  fh_t *fh = fh_find(n, fd, &pp);
  if (fh == NULL) return;
  int saved = errno;
  *pp = fh->next;
  set_drop(n, fh);
  free(fh);
  errno = saved;
}

/* Always-ready handlers with nothing queued turn the next wait into a poll. */
static int always_ready_pending(ntf_t *n) {
  for (fh_t *fh = n->handlers; fh; fh = fh->next)
    if (fh->always && fh->mask != 0 && fh->ready == 0) return 1;
  return 0;
}

static void queue_always_ready(ntf_t *n) {
  for (fh_t *fh = n->handlers; fh; fh = fh->next)
    if (fh->always) fh_mark_ready(fh, fh->mask);
}

/* Handlers the kernel would not watch: try again, else ask poll(2) and
 * mark what it reports (an error or hang-up as ready, as select() does).
 * Returns 1 while some remain, so that the wait is bounded. */
#define NTF_POLLED_MS 10
static int check_polled(ntf_t *n) {
  int left = 0;
  for (fh_t *fh = n->handlers; fh; fh = fh->next) {
    if (!fh->polled) continue;
    fh->polled = 0;
    fh_arm(fh);     /* watched now, or polled again */
    if (!fh->polled) continue;
    left = 1;
    struct pollfd p = {fh->fd, (short)tcl_to_epoll(fh->mask), 0};
    if (p.events == 0 || poll(&p, 1, 0) <= 0) continue;
    fh_mark_ready(fh, events_to_tcl((uint16_t)p.revents));
  }
  return left;
}

/* ---- timers, alerts, service mode ----------------------------------------- */

static void set_timer_cb(uv_timer_t *t) {
  (void)t; /* waking uv_run is all that is needed; see ntf_set_timer */
}

static void set_timer_in(ntf_t *n, int64_t ms) {
  uv_update_time(n->loop);
  uv_timer_start(n->set_tm, set_timer_cb, (uint64_t)ms, 0);
}

/* Tcl_SetTimer: only matters when host code that Tcl runs between its
 * own waits waits on this thread (a host command blocking in evl_step);
 * the timer then ends that wait so control returns to Tcl, which services
 * its timers itself.  Tcl_DoOneEvent passes its own timeout to
 * Tcl_WaitForEvent, and the timer is stopped for that wait (below). */
static void ntf_set_timer(const Tcl_Time *tp) {
  ntf_t *n = tls_ntf;
  if (n == NULL || n->set_tm == NULL) return;
  if (tp == NULL) {
    uv_timer_stop(n->set_tm);
    n->set_due = 0;
    return;
  }
  int64_t ms = time_to_ms(tp);
  n->set_due = uv_hrtime() + (uint64_t)ms * 1000000u;
  set_timer_in(n, ms);
}

/* Tcl_SetTimer's timer is not for Tcl's own waits, which have their own
 * timeout: it would end one early (libuv rounds it to a millisecond, the
 * deadline's timer does not), a second wake-up for many a timer Tcl makes
 * (tkbridge_gvtclsh_timer_wakes counts them).  Stopped for the wait, it
 * is put back after it with what is left, unless Tcl set it anew
 * meanwhile.  Returns when it was due. */
static uint64_t set_timer_pause(ntf_t *n) {
  uint64_t due = n->set_due;
  if (due) uv_timer_stop(n->set_tm);
  return due;
}

static void set_timer_resume(ntf_t *n, uint64_t due) {
  if (due == 0 || n->set_due != due) return;
  uint64_t now = uv_hrtime();
  set_timer_in(n, due > now ? (int64_t)((due - now + 999999u) / 1000000u) : 0);
}

/* ClientData from a thread whose notifier Tcl set up before ours was
 * installed (a host that used Tcl first) is not ours: leave it alone. */
static int is_ours(const ntf_t *n) {
  return n != NULL && n->magic == NTF_MAGIC;
}

static void ntf_alert(ClientData cd) {
  ntf_t *n = (ntf_t *)cd;
  if (!is_ours(n)) return;
  int saved = errno;            /* any thread's, in any state */
  atomic_store(&n->alerted, 1);
  atomic_fetch_add(&n->alerts_a, 1);
  if (n->evl) evl_wakeup(n->evl);
  else evl__wake_send(&n->wake);
  errno = saved;
}

static void ntf_service_mode_hook(int mode) {
  ntf_t *n = tls_ntf;
  if (n) n->service_mode = mode;
}

/* ---- waiting -------------------------------------------------------------- */

/* uv_stop makes the poll of the current uv_run non-blocking even when this
 * timer fires at the top of the iteration (libuv then computes the poll
 * timeout from the remaining timers, which may be none: -1). */
static void wait_tm_cb(uv_timer_t *t) {
  uv_stop(t->loop);
}

/* The alert's wake-up is readable: empty it (the wait this ends looks at
 * what the alert was for). */
static void wake_cb(uv_poll_t *p, int status, int events) {
  (void)status;
  (void)events;
  evl__wake_drain(&((ntf_t *)p->data)->wake);
}

/* ---- a timed wait's deadline --------------------------------------------- */

/* libuv counts time in whole milliseconds, and a wait rounded up to the
 * next one wakes up to a millisecond late: two timers due 0.6 ms apart
 * then run in one pass, where tclsh, whose select() keeps microseconds,
 * runs idle handlers (a widget's redisplay, its geometry) between them.
 * A timerfd in the loop ends a timed wait at its deadline instead; the
 * wait's own millisecond timeout, one longer, only backs it up.  Made at
 * a thread's first timed wait.  A fork()ed child shares it with its
 * parent, and must neither disarm it, nor read its expirations (the
 * parent's wait would then run to the backup), nor wake for it: the
 * child's first wait, or its first sight of the timer, closes its copy
 * (deadline_stale), and its next timed wait makes one of its own.  Not in
 * the fork handler, which may run before the loop's own fork: closing
 * the watch then would take it out of the parent's epoll too. */
static void deadline_close(ntf_t *n) {
  if (n->tfd < 0) return;
  close_handle((uv_handle_t *)n->tfd_poll);
  n->tfd_poll = NULL;
  close(n->tfd);
  n->tfd = -1;
  n->tfd_armed = 0;
}

/* Close a timer made before a fork (the parent's too).  1 if it did. */
static int deadline_stale(ntf_t *n) {
  if (n->tfd < 0 || n->tfd_gen == atomic_load_explicit(&fork_gen, memory_order_relaxed))
    return 0;
  deadline_close(n);
  return 1;
}

static void deadline_cb(uv_poll_t *p, int status, int events) {
  ntf_t *n = p->data;
  uint64_t expirations;
  (void)status;
  (void)events;
  if (deadline_stale(n)) return;
  ssize_t got = read(n->tfd, &expirations, sizeof expirations);
  (void)got;  /* EAGAIN: read already */
}

/* End the coming wait tp (> 0) from now.  Returns 0, or an errno when
 * there is no timer (no descriptor for one): the wait then ends by its
 * millisecond timeout alone, as it would without. */
static int deadline_arm(ntf_t *n, const Tcl_Time *tp) {
  if (n->tfd < 0) {
    int rc = watch_own(n, timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC),
                       deadline_cb, &n->tfd, &n->tfd_poll);
    if (rc != 0) return rc;
    n->tfd_gen = atomic_load_explicit(&fork_gen, memory_order_relaxed);
  }
  struct itimerspec its;
  memset(&its, 0, sizeof its);
  its.it_value.tv_sec = tp->sec + tp->usec / 1000000;
  its.it_value.tv_nsec = (tp->usec % 1000000) * 1000L;
  if (timerfd_settime(n->tfd, 0, &its, NULL) != 0) return errno;
  n->tfd_armed = 1;
  return 0;
}

/* No timed wait: the timer of an earlier one, ended early, must not fire. */
static void deadline_disarm(ntf_t *n) {
  struct itimerspec its;
  if (!n->tfd_armed) return;
  memset(&its, 0, sizeof its);
  (void)timerfd_settime(n->tfd, 0, &its, NULL);
  n->tfd_armed = 0;
}

/* Standalone wait: one uv_run pass bounded by a timer. */
static void standalone_wait(ntf_t *n, int64_t ms) {
  if (ms == 0) {
    uv_run(n->loop, UV_RUN_NOWAIT);
    return;
  }
  if (ms > 0) {
    uv_update_time(n->loop);
    uv_timer_start(n->wait_tm, wait_tm_cb, (uint64_t)ms, 0);
  }
  uv_run(n->loop, UV_RUN_ONCE);
  uv_timer_stop(n->wait_tm);
}

/* Tcl_WaitForEvent.  Returns -1 once the evloop is stopping (Tcl_DoOneEvent
 * then returns 0 and nested vwaits unwind), 1 when Tcl code ran during the
 * wait (vwait must re-check its variable), else 0.  Ready descriptors are
 * queued as Tcl events, which Tcl_DoOneEvent services after we return. */
static int stopping(ntf_t *n) {
  if (n->evl == NULL || !evl_stopping(n->evl)) return 0;
  if (tls_on_stop) {
    void (*fn)(void *) = tls_on_stop;
    tls_on_stop = NULL; /* once */
    fn(tls_on_stop_arg);
  }
  return 1;
}

static int ntf_wait(const Tcl_Time *tp) {
  ntf_t *n = tls_ntf;
  if (n == NULL) return -1;
  if (stopping(n)) return -1;
  const int64_t tcl_ms = time_to_ms(tp);
  int64_t ms = tcl_ms;
  /* Readiness a step outside our waits saw (a host callback's evl_step)
   * is queued by this wait, which then does not block. */
  int polled = check_polled(n);
  if (atomic_exchange(&n->alerted, 0) || always_ready_pending(n) ||
      n->pending)
    ms = 0;
  else if (polled && (ms < 0 || ms > NTF_POLLED_MS))
    ms = NTF_POLLED_MS;
  (void)deadline_stale(n);
  if (ms > 0 && ms == tcl_ms && deadline_arm(n, tp) == 0)
    ms++;                     /* the deadline's timer ends the wait */
  else if (ms != 0)
    deadline_disarm(n);
  n->st.waits++;
  if (ms != 0) n->st.blocking++;
  int outer_ran = n->tcl_ran;
  n->tcl_ran = 0;
  uint64_t set_due = set_timer_pause(n);
  if (n->evl) evl_step(n->evl, ms);  /* counts ms from a fresh loop time */
  else standalone_wait(n, ms);
  set_timer_resume(n, set_due);
  if (polled && ms != 0) (void)check_polled(n);
  queue_always_ready(n);
  queue_ready(n);
  int ran = n->tcl_ran;
  n->tcl_ran = outer_ran | ran;
  if (stopping(n)) return -1;
  return ran ? 1 : 0;
}

/* ---- per-thread init and finalize ----------------------------------------- */

/* A fork()ed child keeps only the forking thread.  The standalone loop it
 * waits in (a Thread-package thread's; a bound notifier's loop is an
 * evloop's, which evloop forks itself) gets kernel state of its own: until
 * then parent and child share its epoll instance, and a handler the child
 * deletes (its exit does) would take the parent's descriptor out of it.
 * As in evloop, a few system calls (every exec from the thread pays
 * them); should the kernel refuse, libuv aborts the child at its next
 * wait.  The set, shared the same way, is made again when the child's
 * notifier next touches it (set_check), not here: the loop's own fork,
 * which re-adds the set's descriptor, may come before or after this. */
static void ntf_atfork_child(void) {
  ntf_t *n = tls_ntf;
  atomic_fetch_add_explicit(&fork_gen, 1, memory_order_relaxed);
  if (n == NULL || n->evl != NULL) return;
  /* The alert's wake-up too, before the loop's fork re-adds its number to
   * the new epoll (after, the old one, still the parent's, would stay). */
  (void)evl__wake_fork(&n->wake);
  (void)uv_loop_fork(n->loop);
}

/* libuv's own descriptors must not take a free low number: the free ones
 * are held while the loop and the alert's wake-up are created
 * (evl_stdfd.h).  The alert is not libuv's uv_async_t: its send marks the
 * handle busy, writes, then marks it sent, and the woken loop spins (with
 * sched_yield) while a send is between the two marks; on one CPU a
 * Thread-package thread woken so spun at every message from another,
 * whose send could not finish until it gave up the CPU: it is evloop's
 * wake-up (evl_wake.h).  Returns 0 or an errno value. */
static int standalone_init(ntf_t *n) {
  evl__fd_hold_t held;
  int rc;
  if ((rc = evl__std_hold(&held, EVL__FD_NEED_NTF)) != 0) goto out;
  if ((rc = -uv_loop_init(&n->own)) != 0) goto out;
  evl__std_loop_made();
  n->loop = &n->own;
  n->wake_poll = calloc(1, sizeof(uv_poll_t));
  if (n->wake_poll == NULL) {
    rc = ENOMEM;
    goto out;
  }
  if ((rc = evl__wake_open(&n->wake)) != 0) goto out;
  /* The watch stays referenced: it keeps a blocking uv_run(ONCE) waiting
   * when no descriptor is watched, instead of returning at once. */
  if ((rc = -uv_poll_init(n->loop, n->wake_poll, n->wake.rfd)) != 0) goto out;
  n->wake_poll->data = n;
  rc = -uv_poll_start(n->wake_poll, UV_READABLE, wake_cb);
out:
  evl__std_release(&held);
  return rc;
}

/* Tcl_InitNotifier: called by Tcl once per thread, before the thread's
 * first interp, with no way to fail: it panics if it cannot make the
 * thread's loop (no memory, or no descriptors for a new thread's loop,
 * which stock Tcl's threads do not need: gvtclsh(1)). */
static ClientData ntf_init(void) {
  int err;
  ntf_t *n = calloc(1, sizeof(*n));
  if (n == NULL) Tcl_Panic("tkbridge: out of memory (notifier)");
  n->magic = NTF_MAGIC;
  n->service_mode = TCL_SERVICE_NONE;
  n->efd = -1;
  n->tfd = -1;
  n->wake = (evl__wake_t){-1, -1};
  n->evl = tls_bind;
  if (n->evl) {
    n->loop = evl_uv_loop(n->evl);
  } else if ((err = standalone_init(n)) != 0) {
    Tcl_Panic("tkbridge: cannot create this thread's event loop: %s",
              strerror(err));
  }
  n->set_tm = calloc(1, sizeof(uv_timer_t));
  n->wait_tm = calloc(1, sizeof(uv_timer_t));
  if (n->set_tm == NULL || n->wait_tm == NULL)
    Tcl_Panic("tkbridge: out of memory (notifier)");
  uv_timer_init(n->loop, n->set_tm);
  uv_timer_init(n->loop, n->wait_tm);
  uv_unref((uv_handle_t *)n->set_tm);
  uv_unref((uv_handle_t *)n->wait_tm);
  tls_ntf = n;
  return n;
}

/* Tcl_FinalizeNotifier: called with Tcl's notifier list lock held, so it
 * must not call back into Tcl's notifier.  In evloop mode the loop belongs
 * to the evloop, which runs the close callbacks of our handles later (they
 * only free memory: the set's descriptor is closed already). */
static void ntf_finalize(ClientData cd) {
  ntf_t *n = (ntf_t *)cd;
  if (!is_ours(n)) return;
  set_close(n);   /* first: the handlers go without a DEL each */
  while (n->handlers) ntf_delete_file_handler(n->handlers->fd);
  close_handle((uv_handle_t *)n->set_tm);
  close_handle((uv_handle_t *)n->wait_tm);
  deadline_close(n);
  if (n->evl == NULL) {
    close_handle((uv_handle_t *)n->wake_poll);
    uv_run(n->loop, UV_RUN_DEFAULT);
    uv_loop_close(n->loop);
    evl__wake_close(&n->wake);
  }
  if (tls_ntf == n) tls_ntf = NULL;
  /* The binding lasts as long as the thread's Tcl: a later Tcl on this
   * thread gets a notifier of its own, or a new binding. */
  if (n->evl != NULL && n->evl == tls_bind) {
    tls_drain = tls_bind;
    tls_bind = NULL;
    tls_on_stop = NULL;
    tls_on_stop_arg = NULL;
  }
  n->magic = 0;
  free(n);
}

/* ---- the seam ------------------------------------------------------------- */

static void install_once_fn(void) {
  static Tcl_NotifierProcs procs;
  procs.setTimerProc = ntf_set_timer;
  procs.waitForEventProc = ntf_wait;
  procs.createFileHandlerProc = ntf_create_file_handler;
  procs.deleteFileHandlerProc = ntf_delete_file_handler;
  procs.initNotifierProc = ntf_init;
  procs.finalizeNotifierProc = ntf_finalize;
  procs.alertNotifierProc = ntf_alert;
  procs.serviceModeHookProc = ntf_service_mode_hook;
  Tcl_SetNotifier(&procs);
  (void)pthread_atfork(NULL, NULL, ntf_atfork_child);
}

/* Tcl_SetNotifier exists in Tcl 8.6 and 9.0 only; later versions panic
 * in it (the notifier cannot be replaced any more).  Refuse there, so the
 * caller gets an error instead of an abort; tkbridge/CMakeLists.txt builds
 * the stock-notifier integration (tkb_notifier_tcl.c) for such a Tcl. */
static int tcl_can_set_notifier(void) {
  int major = 0, minor = 0;
  Tcl_GetVersion(&major, &minor, NULL, NULL);
  return major < 9 || (major == 9 && minor == 0);
}

int tkb__ntf_install(void) {
  if (!tcl_can_set_notifier()) return ENOTSUP;
  return pthread_once(&install_once, install_once_fn);
}

int tkb__ntf_bind(evl_t *l, void (*on_stop)(void *), void *arg) {
  if (l == NULL) return EINVAL;
  if (tls_bind != NULL || tls_ntf != NULL) return EBUSY;
  evl__std_loop_made();   /* l's loop exists, and so does libuv's own pipe */
  tls_bind = l;
  tls_drain = NULL;
  tls_on_stop = on_stop;
  tls_on_stop_arg = arg;
  return 0;
}

void tkb__ntf_unbind(void) {
  evl_t *l = tls_bind != NULL ? tls_bind : tls_drain;
  /* Bounded: each pass runs every pending close callback. */
  for (int i = 0; i < 100 && tls_closing > 0 && l; i++)
    evl_step(l, 0);
  tls_bind = NULL;
  tls_drain = NULL;
  tls_on_stop = NULL;
  tls_on_stop_arg = NULL;
}

void tkb__ntf_note_tcl_ran(void) {
  if (tls_ntf) tls_ntf->tcl_ran = 1;
}

void tkb__ntf_stats(tkb__ntf_stats_t *out) {
  ntf_t *n = tls_ntf;
  memset(out, 0, sizeof(*out));
  if (n == NULL) return;
  *out = n->st;
  out->alerts = atomic_load(&n->alerts_a);
}

const char *tkb__ntf_name(void) {
  return "libuv-notifier";
}
