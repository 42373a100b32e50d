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
 * Descriptor traps handled here:
 *  - uv_poll_init() refuses a descriptor already watched by the same loop
 *    (the host may watch it too), and a second uv_poll on a number whose
 *    first is stopped silently takes its place: we poll a dup() of Tcl's
 *    fd, or at the open-file limit the fd itself (see pollbox_open).
 *  - The poll must be gone when Tcl_DeleteFileHandler returns: Tcl closes
 *    its fd right after, and a surviving dup would keep a pipe's write end
 *    (the reader never sees EOF) or a listening socket open.  uv_close()
 *    takes the fd out of the epoll set and libuv's fd table at once (only
 *    the close callback is deferred), so a dup is closed right there.
 *  - uv_poll_init() sets O_NONBLOCK on the open file description (shared by
 *    the dup): we restore the flags, since Tcl channels own blocking mode.
 *  - Regular files (and other descriptors epoll refuses: EPERM) are always
 *    ready, as select() reports them: such handlers make the wait a poll.
 *    A descriptor the kernel will not watch for want of room (the epoll
 *    watch limit, memory) is polled instead: each wait tries to watch it
 *    again, asks poll(2) meanwhile and waits at most NTF_POLLED_MS, so its
 *    handler fires when it is ready, as under select(), a little later.
 *    The watch is taken as the poll starts (pollbox_reserve), not left to
 *    libuv, which aborts the process when the kernel refuses it.
 *  - A handler deleted while its event is queued must not fire: events
 *    carry the fd only and look the handler up when serviced (as Tcl does).
 *  - A handler's poll stays started while its event is queued: usually
 *    the event is served before the next wait, and a stop and start would
 *    cost an epoll DEL and ADD per event (an ADD that libuv makes inside
 *    uv_run and aborts on if the kernel refuses it).  Reported again before
 *    the event is served, the poll is stopped until it is, so an unread
 *    level-triggered descriptor cannot make the wait spin.
 *  - Handlers that a wait finds ready are queued at its end, in the order
 *    of the handler list, newest first, as Tcl's Unix notifier does: a
 *    script sees several channels' fileevents in the same order as under
 *    tclsh (libuv reports them in the kernel's order).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#ifdef __linux__
#include <sys/epoll.h>
#endif
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <tcl.h>
#include <uv.h>

#include "tkb_notifier.h"
#include "evl_stdfd.h"

typedef struct ntf_s ntf_t;

/* One Tcl file handler.  Owned by the thread's ntf_t; loop thread only. */
typedef struct fh_s {
  int fd;                 /* Tcl's descriptor (the lookup key)            */
  int mask;               /* TCL_READABLE|TCL_WRITABLE|TCL_EXCEPTION      */
  int ready;              /* readiness seen, not yet serviced             */
  int queued;             /* its Tcl event is queued                      */
  int held;               /* ready again before the event was served: the
                             poll is stopped until it is                  */
  int always;             /* not pollable: always ready (regular file)    */
  int polled;             /* the kernel would not watch it: poll(2) at each
                             wait (check_polled)                          */
  struct pollbox_s *pb;   /* its uv_poll, NULL if always ready or polled  */
  Tcl_FileProc *proc;
  ClientData cd;
  ntf_t *n;
  struct fh_s *next;
} fh_t;

/* The uv_poll handle outlives its fh_t until libuv's close callback; its
 * descriptor does not (see pollbox_close). */
typedef struct pollbox_s {
  uv_poll_t h;            /* h.data: the fh_t, NULL once deleted          */
  int pfd;                /* the polled fd: Tcl's own, or our dup         */
  int own;                /* pfd is our dup, closed by pollbox_close      */
  int active;             /* uv_poll_start'ed, for the events below       */
  int events;             /* UV_READABLE|UV_WRITABLE while active         */
} pollbox_t;

/* The Tcl event queued for a ready descriptor. */
typedef struct {
  Tcl_Event hdr;
  int fd;
} fh_event_t;

/* Per-thread notifier state (the ClientData Tcl keeps for the thread). */
#define NTF_MAGIC 0x746b626eu /* "tkbn" */

struct ntf_s {
  uint32_t magic;         /* NTF_MAGIC: ClientData Tcl gives back is ours */
  evl_t *evl;             /* bound evloop; NULL: standalone              */
  uv_loop_t *loop;        /* evl_uv_loop(evl) or &own                    */
  uv_loop_t own;          /* standalone only                             */
  uv_async_t *own_async;  /* standalone only: Tcl_AlertNotifier target   */
  uv_timer_t *wait_tm;    /* bounds a standalone wait (standalone_wait)  */
  uv_timer_t *set_tm;     /* Tcl_SetTimer                                */
  fh_t *handlers;         /* file handlers, newest first (as Tcl's)      */
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

/* ---- small helpers ------------------------------------------------------ */

/* Ceil a Tcl_Time to milliseconds: rounding down would turn a 0.5 ms wait
 * into a string of zero-timeout polls. */
static int64_t time_to_ms(const Tcl_Time *tp) {
  if (tp == NULL) return -1;
  if (tp->sec < 0 || (tp->sec == 0 && tp->usec <= 0)) return 0;
  return (int64_t)tp->sec * 1000 + ((int64_t)tp->usec + 999) / 1000;
}

static int uv_to_tcl_mask(int ev) {
  int m = 0;
  if (ev & (UV_READABLE | UV_DISCONNECT)) m |= TCL_READABLE;
  if (ev & UV_WRITABLE) m |= TCL_WRITABLE;
  if (ev & UV_PRIORITIZED) m |= TCL_EXCEPTION;
  return m;
}

static int tcl_to_uv_mask(int m) {
  int ev = 0;
  if (m & TCL_READABLE) ev |= UV_READABLE;
  if (m & TCL_WRITABLE) ev |= UV_WRITABLE;
  if (m & TCL_EXCEPTION) ev |= UV_PRIORITIZED;
  return ev;
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
static void poll_cb(uv_poll_t *h, int status, int events);

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

static void pollbox_close(pollbox_t *pb);

/* Take the descriptor's epoll watch now, where a refusal (the watch limit,
 * no memory) can be answered: uv_poll_start takes the fd out of epoll and
 * libuv adds it back inside uv_run, aborting the process if the kernel
 * refuses then.  Made after uv_poll_start, the add here leaves libuv's
 * own to find the watch (EEXIST) and set its events.  Returns 0 or the
 * errno. */
static int pollbox_reserve(pollbox_t *pb) {
#ifdef __linux__
  struct epoll_event e;
  int saved = errno, rc = 0;
  memset(&e, 0, sizeof e);
  e.data.fd = pb->pfd;
  if (epoll_ctl(uv_backend_fd(pb->h.loop), EPOLL_CTL_ADD, pb->pfd, &e) != 0 &&
      errno != EEXIST)
    rc = errno;
  errno = saved;
  return rc;
#else
  (void)pb;
  return 0;
#endif
}

/* Start or stop the poll to match the handler's interest.  A poll whose
 * watch the kernel refuses as it starts is given up: the handler is
 * polled from then on (check_polled). */
static void fh_arm(fh_t *fh) {
  pollbox_t *pb = fh->pb;
  int want = tcl_to_uv_mask(fh->mask);
  if (pb == NULL) return;
  if (want == 0 || fh->held) {
    if (pb->active) uv_poll_stop(&pb->h);
    pb->active = 0;
    return;
  }
  /* Tcl re-states its interest after every read (UpdateInterest); a new
   * uv_poll_start would take the fd out of epoll and put it back. */
  if (pb->active && pb->events == want) return;
  pb->active = 0;
  if (uv_poll_start(&pb->h, want, poll_cb) != 0) return;
  if (pollbox_reserve(pb) != 0) {
    pollbox_close(pb);
    fh->pb = NULL;
    fh->polled = 1;
    return;
  }
  pb->active = 1;
  pb->events = want;
}

/* libuv callback: runs inside uv_run, so it only marks the handler ready;
 * the wait queues the Tcl event once evl_step has returned (queue_ready).
 * Ready already, its event not served yet: the poll waits until it is.
 * An error status (POLLERR) is reported as "ready", as select() would;
 * libuv has stopped the poll then, and it starts again once the event is
 * served. */
static void poll_cb(uv_poll_t *h, int status, int events) {
  fh_t *fh = (fh_t *)h->data;
  if (fh == NULL) return;
  int was = fh->ready;
  if (status < 0) fh->pb->active = 0;
  fh_mark_ready(fh, status < 0 ? fh->mask : uv_to_tcl_mask(events));
  if (was != 0 && !fh->held) {
    fh->held = 1;
    fh_arm(fh);
  }
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

/* Poll a dup of fd, at evl__fd_low() or above where the limit allows (never
 * a standard number, which Tcl takes for its std channels when they were
 * closed, nor one the script's next file would get under tclsh): the host
 * may watch fd itself on this loop, which has room for one uv_poll per
 * descriptor, and a watch on the same number, started or stopped, would
 * take the other's events.  At the open-file limit, where no dup can be
 * had, fd itself, as Tcl's own notifier polls it (that fails with EEXIST
 * only if the host watches it too).  The file's status flags are kept as
 * Tcl left them.
 * Returns NULL when the descriptor cannot be polled, with *always set when
 * it never can be (epoll refuses it: always ready, as select() says of a
 * regular file) and clear when the kernel or memory ran short. */
static pollbox_t *pollbox_open(ntf_t *n, int fd, int *always) {
  int fl = fcntl(fd, F_GETFL);
  *always = 1;
  if (fl < 0) return NULL;
  int pfd = fcntl(fd, F_DUPFD_CLOEXEC, evl__fd_low());
  if (pfd < 0) pfd = fcntl(fd, F_DUPFD_CLOEXEC, 3);
  int own = pfd >= 0;
  if (!own) pfd = fd;
  pollbox_t *pb = calloc(1, sizeof(*pb));
  if (pb == NULL) {
    if (own) close(pfd);
    *always = 0;
    return NULL;
  }
  int rc = uv_poll_init(n->loop, &pb->h, pfd);
  (void)fcntl(fd, F_SETFL, fl);
  if (rc != 0) {
    free(pb);
    if (own) close(pfd);
    *always = rc == UV_EPERM;
    return NULL;
  }
  pb->pfd = pfd;
  pb->own = own;
  return pb;
}

/* Give fh a poll of its own, or say why it has none: always ready (epoll
 * refuses the descriptor) or polled (the kernel or memory ran short). */
static void fh_open(fh_t *fh) {
  int always;
  fh->pb = pollbox_open(fh->n, fh->fd, &always);
  fh->always = fh->pb == NULL && always;
  fh->polled = fh->pb == NULL && !always;
  if (fh->pb) fh->pb->h.data = fh;
}

static void pollbox_close_cb(uv_handle_t *h) {
  tls_closing--;
  free(h);
}

/* uv_close of a poll handle stops its watcher, removes the fd from epoll
 * (epoll_ctl DEL) and from libuv's fd table, and drops any event of it the
 * current pass has not delivered yet, all before it returns; libuv never
 * touches the fd again.  So the dup can be closed now, and a new handler on
 * a descriptor that reuses its number is accepted by uv_poll_init. */
static void pollbox_close(pollbox_t *pb) {
  if (pb == NULL) return;
  pb->h.data = NULL;
  tls_closing++;
  uv_close((uv_handle_t *)&pb->h, pollbox_close_cb);
  if (pb->own) close(pb->pfd);
  pb->pfd = -1;
}

/* The hooks Tcl calls from its channel code keep errno: Tcl's read path
 * re-states the channel's interest (Tcl_CreateFileHandler) between the
 * driver's failed read and the error message it builds from errno, and
 * libuv's epoll_ctl calls may fail harmlessly (ENOENT) on the way. */
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
    fh_open(fh);
    fh->next = n->handlers;
    n->handlers = fh;
  }
  fh->proc = proc;
  fh->cd = cd;
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
  pollbox_close(fh->pb);
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
    fh_open(fh);
    if (!fh->polled) {
      fh_arm(fh);   /* the watch may be refused as it starts: polled again */
      if (!fh->polled) continue;
    }
    left = 1;
    struct pollfd p = {fh->fd, 0, 0};
    if (fh->mask & TCL_READABLE) p.events |= POLLIN;
    if (fh->mask & TCL_WRITABLE) p.events |= POLLOUT;
    if (fh->mask & TCL_EXCEPTION) p.events |= POLLPRI;
    if (p.events == 0 || poll(&p, 1, 0) <= 0) continue;
    int m = 0;
    if (p.revents & (POLLERR | POLLHUP | POLLNVAL)) m = fh->mask;
    if (p.revents & POLLIN) m |= TCL_READABLE;
    if (p.revents & POLLOUT) m |= TCL_WRITABLE;
    if (p.revents & POLLPRI) m |= TCL_EXCEPTION;
    fh_mark_ready(fh, m);
  }
  return left;
}

/* ---- timers, alerts, service mode ----------------------------------------- */

static void set_timer_cb(uv_timer_t *t) {
  (void)t; /* waking uv_run is all that is needed; see ntf_set_timer */
}

/* Tcl_SetTimer: only matters when something other than Tcl_DoOneEvent
 * waits on this thread (a host callback blocking in evl_step); the timer
 * then ends that wait so control returns to Tcl, which services its timers
 * itself.  Tcl_DoOneEvent passes its own timeout to Tcl_WaitForEvent. */
static void ntf_set_timer(const Tcl_Time *tp) {
  ntf_t *n = tls_ntf;
  if (n == NULL || n->set_tm == NULL) return;
  if (tp == NULL) {
    uv_timer_stop(n->set_tm);
    return;
  }
  uv_update_time(n->loop);
  uv_timer_start(n->set_tm, set_timer_cb, (uint64_t)time_to_ms(tp), 0);
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
  else uv_async_send(n->own_async);
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

static void own_async_cb(uv_async_t *a) {
  (void)a;
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
  int64_t ms = time_to_ms(tp);
  /* Readiness a step outside our waits saw (a host callback's evl_step)
   * is queued by this wait, which then does not block. */
  int polled = check_polled(n);
  if (atomic_exchange(&n->alerted, 0) || always_ready_pending(n) ||
      n->pending)
    ms = 0;
  else if (polled && (ms < 0 || ms > NTF_POLLED_MS))
    ms = NTF_POLLED_MS;
  n->st.waits++;
  if (ms != 0) n->st.blocking++;
  int outer_ran = n->tcl_ran;
  n->tcl_ran = 0;
  if (n->evl) evl_step(n->evl, ms);  /* counts ms from a fresh loop time */
  else standalone_wait(n, ms);
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
 * wait. */
static void ntf_atfork_child(void) {
  ntf_t *n = tls_ntf;
  if (n == NULL || n->evl != NULL) return;
  (void)uv_loop_fork(n->loop);
}

static void ntf_atfork_init(void) {
  (void)pthread_atfork(NULL, NULL, ntf_atfork_child);
}

/* libuv's own descriptors must not take a free low number: the free ones
 * are held while the loop and its async are created (evl_stdfd.h).
 * Returns 0 or an errno value. */
static int standalone_init(ntf_t *n) {
  static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;
  evl__fd_hold_t held;
  int rc;
  pthread_once(&atfork_once, ntf_atfork_init);
  if ((rc = evl__std_hold(&held, EVL__FD_NEED_NTF)) != 0) goto out;
  if ((rc = -uv_loop_init(&n->own)) != 0) goto out;
  evl__std_loop_made();
  n->loop = &n->own;
  n->own_async = calloc(1, sizeof(uv_async_t));
  if (n->own_async == NULL) {
    rc = ENOMEM;
    goto out;
  }
  /* The async stays referenced: it keeps a blocking uv_run(ONCE) waiting
   * when no descriptor is watched, instead of returning at once. */
  rc = -uv_async_init(n->loop, n->own_async, own_async_cb);
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
 * only free memory: any dup descriptors are closed already). */
static void ntf_finalize(ClientData cd) {
  ntf_t *n = (ntf_t *)cd;
  if (!is_ours(n)) return;
  while (n->handlers) ntf_delete_file_handler(n->handlers->fd);
  close_handle((uv_handle_t *)n->set_tm);
  close_handle((uv_handle_t *)n->wait_tm);
  if (n->evl == NULL) {
    close_handle((uv_handle_t *)n->own_async);
    uv_run(n->loop, UV_RUN_DEFAULT);
    uv_loop_close(n->loop);
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
