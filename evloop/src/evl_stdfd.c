/* SPDX-License-Identifier: MIT */
/*
 * evl_stdfd.c -- keep libuv's own descriptors out of the numbers a program
 * expects for its own files (evl_stdfd.h).
 */
#include "evl_stdfd.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

int evl__fd_low(void) {
  struct rlimit rl;
  if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY ||
      rl.rlim_cur / 4 >= EVL__FD_LOW_MAX)
    return EVL__FD_LOW_MAX;
  return rl.rlim_cur / 4 > 3 ? (int)(rl.rlim_cur / 4) : 3;
}

/* Set once a loop of this copy of the code has been made: libuv's
 * process-wide signal pipe exists from then on. */
static atomic_int loop_made;

void evl__std_loop_made(void) {
  atomic_store_explicit(&loop_made, 1, memory_order_relaxed);
}

int evl__std_hold(evl__fd_hold_t *h, int need) {
  int low = evl__fd_low(), probe[EVL__FD_NEED_MAX], got = 0, err = 0;
  h->n = 0;
  /* open() and F_DUPFD from 0 take the lowest free number: stop at the
   * first at or above low (or when nothing is left to open), which is the
   * first free one there: keep it to count from.  One open, then dups of
   * it: a dup looks no path up. */
  int null_fd = -1;
  for (;;) {
    int fd = null_fd < 0 ? open("/dev/null", O_RDWR | O_CLOEXEC)
                         : fcntl(null_fd, F_DUPFD_CLOEXEC, 0);
    if (null_fd < 0 && fd >= 0) null_fd = fd;
    if (fd < 0) {
      err = errno;
      break;
    }
    if (fd >= low || h->n == EVL__FD_LOW_MAX) {
      probe[got++] = fd;
      break;
    }
    h->fd[h->n++] = fd;
  }
  /* No /dev/null to count with (a bare chroot): leave it to libuv. */
  if (got == 0 && err != EMFILE && err != ENFILE) return 0;
  if (!atomic_load_explicit(&loop_made, memory_order_relaxed))
    need += EVL__FD_FIRST_EXTRA;
  if (need > EVL__FD_NEED_MAX) need = EVL__FD_NEED_MAX;
  while (got > 0 && got < need) {
    int fd = fcntl(probe[0], F_DUPFD_CLOEXEC, low);
    if (fd < 0) break;
    probe[got++] = fd;
  }
  for (int i = 0; i < got; i++) close(probe[i]);
  return got >= need ? 0 : EMFILE;
}

/* Close only what is still ours: another thread may have dup2()'d a file
 * of its own onto a held number meanwhile (that clears close-on-exec, and
 * is rarely /dev/null). */
void evl__std_release(const evl__fd_hold_t *h) {
  struct stat null_st, st;
  int check = stat("/dev/null", &null_st) == 0;
  for (int i = 0; i < h->n; i++) {
    int fl = fcntl(h->fd[i], F_GETFD);
    if (check && (fl < 0 || !(fl & FD_CLOEXEC) || fstat(h->fd[i], &st) != 0 ||
                  st.st_rdev != null_st.st_rdev || st.st_ino != null_st.st_ino))
      continue;
    close(h->fd[i]);
  }
}
