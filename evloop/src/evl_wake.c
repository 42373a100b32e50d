/* SPDX-License-Identifier: MIT */
/*
 * The loop's wake-up: an eventfd (a pipe where there is none) that any
 * thread, or a signal handler, writes, and the loop thread polls with a
 * uv_poll_t.
 *
 * Not libuv's uv_async_t: its send marks the handle busy, writes, then
 * marks it sent, and the loop thread spins (with sched_yield) while a send
 * is between the two marks.  A loop thread in SCHED_FIFO that the write
 * woke on the sender's own CPU preempted the sender there and spun until
 * the kernel's real-time throttling stopped it, about a second per wake.
 * Here a send is one write(2), and a wake-up that finds nothing is free.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/eventfd.h>
#endif

#include "evl_wake.h"

int evl__wake_open(evl__wake_t *w) {
#ifdef __linux__
  int fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (fd < 0) return errno;
  w->rfd = w->wfd = fd;
#else
  int p[2];
  if (pipe(p) != 0) return errno;
  for (int i = 0; i < 2; i++) {
    (void)fcntl(p[i], F_SETFL, fcntl(p[i], F_GETFL) | O_NONBLOCK);
    (void)fcntl(p[i], F_SETFD, FD_CLOEXEC);
  }
  w->rfd = p[0];
  w->wfd = p[1];
#endif
  return 0;
}

/* Async-signal-safe.  A full pipe (or an eventfd at its maximum) already
 * says "wake up": EAGAIN loses nothing. */
void evl__wake_send(const evl__wake_t *w) {
  uint64_t one = 1;
  int saved = errno;
  while (write(w->wfd, &one, w->rfd == w->wfd ? sizeof one : 1) < 0 &&
         errno == EINTR) {
  }
  errno = saved;
}

/* [loop thread] Before looking at what the senders left: a send made
 * after this wakes the next poll. */
void evl__wake_drain(const evl__wake_t *w) {
  char buf[64];
  ssize_t n;
  do {
    n = read(w->rfd, buf, w->rfd == w->wfd ? sizeof(uint64_t) : sizeof buf);
  } while ((n > 0 && w->rfd != w->wfd) || (n < 0 && errno == EINTR));
}

/* In a fork()ed child: the same descriptors now name a wake-up of the
 * child's own.  Until then parent and child share one, and the child's
 * drain would take the parent's wake-ups.  Async-signal-safe. */
int evl__wake_fork(evl__wake_t *w) {
  evl__wake_t n = {-1, -1};
  int rc = evl__wake_open(&n);
  if (rc) return rc;
  if (dup3(n.rfd, w->rfd, O_CLOEXEC) < 0 ||
      (w->wfd != w->rfd && dup3(n.wfd, w->wfd, O_CLOEXEC) < 0))
    rc = errno;
  evl__wake_close(&n);
  return rc;
}

void evl__wake_close(evl__wake_t *w) {
  if (w->wfd >= 0 && w->wfd != w->rfd) close(w->wfd);
  if (w->rfd >= 0) close(w->rfd);
  w->rfd = w->wfd = -1;
}
