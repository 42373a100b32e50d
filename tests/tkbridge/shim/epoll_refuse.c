/* SPDX-License-Identifier: MIT */
/* LD_PRELOAD shim: epoll_ctl(EPOLL_CTL_ADD) fails with ENOSPC (the per-user
 * epoll watch limit, fs.epoll.max_user_watches) while the file named by
 * GVLOOP_TEST_EPFAIL exists, so a script can make the kernel refuse a
 * watch and then allow it again without touching the real, machine-wide
 * limit. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <errno.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <unistd.h>

int epoll_ctl(int epfd, int op, int fd, struct epoll_event *ev) {
  static int (*real)(int, int, int, struct epoll_event *);
  if (real == NULL)
    real = (int (*)(int, int, int, struct epoll_event *))dlsym(RTLD_NEXT, "epoll_ctl");
  const char *flag = getenv("GVLOOP_TEST_EPFAIL");
  if (op == EPOLL_CTL_ADD && flag != NULL && access(flag, F_OK) == 0) {
    errno = ENOSPC;
    return -1;
  }
  return real(epfd, op, fd, ev);
}
