/* SPDX-License-Identifier: MIT */
/*
 * evl_stdfd.h -- keep libuv's own descriptors out of the numbers a program
 * expects for its own files.
 *
 * A process started with a standard descriptor closed (`prog <&-`) would
 * give libuv's epoll or eventfd descriptor the number 0, 1 or 2: libuv
 * asserts that its own descriptors are above 2 when it closes them, and
 * the program's stdin would be libuv's.  And a shell standing in for
 * tclsh or wish must give a script's files the numbers they get there
 * (its first `open` is file3), so libuv's seven descriptors (epoll, two eventfds,
 * two signal pipes) must not take 3 to 8 either.  So while libuv opens
 * them, the free numbers below evl__fd_low() are held by /dev/null, and
 * given back after (not one another thread dup2()'d a file onto meanwhile;
 * a file another thread opens meanwhile gets a number at or above it).
 * A number another thread closes meanwhile is free again, unheld, and
 * libuv may take it: not prevented (only the thread that closes could).
 * Private to gvloop: compiled into libevloop and into libtkbridge (whose
 * notifier makes libuv loops of its own, and puts its own descriptors, the
 * epoll set and the timerfd, at evl__fd_low() or above).
 */
#ifndef EVL_STDFD_H
#define EVL_STDFD_H

#define EVL__FD_LOW_MAX 64
/* Descriptors a loop's start needs (libuv 1.44, Linux): an evloop loop 5
 * (libuv's epoll descriptor, its per-loop signal pipe, its async eventfd,
 * the loop's own wake-up), a notifier's loop 5 (the same: its wake-up is
 * the alert's eventfd, tkb_notifier_uv.c),
 * and the first loop of the process 2 more: libuv's process-wide signal
 * pipe, which it abort()s without.  (Later libuv versions also open
 * io_uring descriptors, whose failure they survive.) */
#define EVL__FD_NEED_EVL 5
#define EVL__FD_NEED_NTF 5
#define EVL__FD_FIRST_EXTRA 2
#define EVL__FD_NEED_MAX (EVL__FD_NEED_EVL + EVL__FD_FIRST_EXTRA)

/* The lowest number for descriptors of gvloop's own: 64, or less under a
 * low RLIMIT_NOFILE (a quarter of it, at least 3). */
int evl__fd_low(void);

typedef struct {
  int n;
  int fd[EVL__FD_LOW_MAX];
} evl__fd_hold_t;

/* Take every free number below evl__fd_low(), then check that need more
 * numbers are free (EVL__FD_FIRST_EXTRA more until evl__std_loop_made):
 * libuv abort()s when the first loop of a process cannot make its signal
 * pipe, so a loop is not started without room for all of its descriptors.
 * Returns 0, or EMFILE (the numbers taken are held either way: release
 * them).  Without /dev/null nothing is held or checked. */
int evl__std_hold(evl__fd_hold_t *h, int need);
/* A uv_loop_init has succeeded (in this library's copy of this file). */
void evl__std_loop_made(void);
/* Close the numbers evl__std_hold took. */
void evl__std_release(const evl__fd_hold_t *h);

#endif
