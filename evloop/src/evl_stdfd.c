/* SPDX-License-Identifier: MIT */
/*
 * evl_stdfd.c -- keep libuv's own descriptors off 0, 1 and 2 (evl_stdfd.h).
 */
#include "evl_stdfd.h"

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

void evl__std_hold(int held[3]) {
  for (int fd = 0; fd < 3; fd++) {
    held[fd] = 0;
    if (fcntl(fd, F_GETFD) >= 0 || errno != EBADF) continue;
    int n = open("/dev/null", O_RDWR | O_CLOEXEC);
    if (n == fd) held[fd] = 1;
    else if (n >= 0) close(n);
  }
}

void evl__std_release(const int held[3]) {
  for (int fd = 0; fd < 3; fd++)
    if (held[fd]) close(fd);
}
