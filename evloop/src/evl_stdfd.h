/* SPDX-License-Identifier: MIT */
/*
 * evl_stdfd.h -- keep libuv's own descriptors off 0, 1 and 2.
 *
 * A process started with a standard descriptor closed (`prog <&-`) would
 * give libuv's epoll or eventfd descriptor the number 0, 1 or 2: libuv
 * asserts that its own descriptors are above 2 when it closes them, and
 * the program's stdin would be libuv's.  So while libuv opens them the
 * free standard numbers are held by /dev/null, and given back after.
 * Private to gvloop: compiled into libevloop and into libtkbridge (whose
 * notifier makes libuv loops of its own).
 */
#ifndef EVL_STDFD_H
#define EVL_STDFD_H

/* held[fd] is set for each standard number this call took. */
void evl__std_hold(int held[3]);
/* Close the numbers evl__std_hold took. */
void evl__std_release(const int held[3]);

#endif
