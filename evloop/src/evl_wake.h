/* SPDX-License-Identifier: MIT */
/*
 * evl_wake.h -- a loop's wake-up (evl_wake.c): an eventfd (a pipe where
 * there is none) that any thread or a signal handler writes and the loop
 * thread polls.  Private to evloop, and to tkbridge's notifier, whose
 * private per-thread loops are woken the same way (the shared libtkbridge
 * carries its own copy, as of evl_stdfd.c).
 */
#ifndef EVL_WAKE_H
#define EVL_WAKE_H

/* rfd == wfd for an eventfd. */
typedef struct {
  int rfd, wfd;
} evl__wake_t;

int evl__wake_open(evl__wake_t *w);
void evl__wake_send(const evl__wake_t *w);  /* async-signal-safe */
void evl__wake_drain(const evl__wake_t *w);
int evl__wake_fork(evl__wake_t *w);          /* async-signal-safe */
void evl__wake_close(evl__wake_t *w);

#endif /* EVL_WAKE_H */
