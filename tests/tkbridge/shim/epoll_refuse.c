/* SPDX-License-Identifier: MIT */
/* LD_PRELOAD shim: epoll's per-user watch limit (fs.epoll.max_user_watches)
 * made by hand, so that a script can have the kernel refuse watches and
 * allow them again without touching the real, machine-wide limit.  While
 * the file named by GVLOOP_TEST_EPFAIL exists, epoll_ctl(EPOLL_CTL_ADD)
 * fails with ENOSPC; if the file holds a number N, only once N more
 * watches than when it was first seen are in place (watches counted by the
 * adds and deletes made through here).  As in the kernel, an add of a
 * descriptor already in the set is EEXIST whatever the limit.  Each
 * refusal is noted by creating that name + ".seen", so the script can
 * tell that the shim is in place. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <unistd.h>

static int watches, base = -1;

/* Refuse this add?  The file's number, read afresh each time. */
static int refuse(const char *flag) {
  FILE *f = flag != NULL ? fopen(flag, "re") : NULL;
  if (f == NULL) {
    base = -1;
    return 0;
  }
  int room = 0;
  if (fscanf(f, "%d", &room) != 1) room = 0;
  fclose(f);
  if (base < 0) base = watches;
  return watches >= base + room;
}

/* Default visibility: the project builds with hidden visibility, and a
 * hidden epoll_ctl would not interpose on libuv's. */
__attribute__((visibility("default")))
int epoll_ctl(int epfd, int op, int fd, struct epoll_event *ev) {
  static int (*real)(int, int, int, struct epoll_event *);
  if (real == NULL)
    real = (int (*)(int, int, int, struct epoll_event *))dlsym(RTLD_NEXT, "epoll_ctl");
  const char *flag = getenv("GVLOOP_TEST_EPFAIL");
  if (op == EPOLL_CTL_ADD && refuse(flag)) {
    if (real(epfd, EPOLL_CTL_MOD, fd, ev) == 0) {
      errno = EEXIST;
      return -1;
    }
    char seen[4096];
    snprintf(seen, sizeof seen, "%s.seen", flag);
    int s = open(seen, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
    if (s >= 0) close(s);
    errno = ENOSPC;
    return -1;
  }
  int r = real(epfd, op, fd, ev);
  if (r == 0 && op == EPOLL_CTL_ADD) watches++;
  if (r == 0 && op == EPOLL_CTL_DEL) watches--;
  return r;
}
