/* SPDX-License-Identifier: MIT */
/* fd watches on a pipe and on a socket pair: readable, writable, hang-up,
 * cancel from inside the callback, re-watching, bad arguments. */
#include <fcntl.h>
#include <stdint.h>
#include <sys/socket.h>
#include <unistd.h>

#include "evl_test.h"

typedef struct {
  int fd;
  evl_id_t id;
  atomic_int bytes, calls, final, eof, bad;
  unsigned last_events;
} watch_t;

/* Reads what is there; on end of file cancels its own watch. */
static void read_cb(evl_t *l, void *arg, int status, unsigned events) {
  watch_t *w = arg;
  char buf[256];
  ssize_t n;
  if (status != 0) {
    if (status != ECANCELED || events != 0) atomic_store(&w->bad, 1);
    atomic_fetch_add(&w->final, 1);
    return;
  }
  if (!t_holds(l) || !(events & EVL_READABLE)) atomic_store(&w->bad, 1);
  atomic_fetch_add(&w->calls, 1);
  n = read(w->fd, buf, sizeof buf);
  if (n > 0) atomic_fetch_add(&w->bytes, (int)n);
  if (n == 0 && !atomic_load(&w->eof)) {
    atomic_store(&w->eof, 1);
    CHECK_EQ(evl_cancel(l, w->id), 0);
  }
}

static void test_pipe(evl_t *l) {
  int p[2], i;
  static watch_t w;
  CHECK_EQ(pipe(p), 0);
  w.fd = p[0];
  CHECK_EQ(evl_fd_watch(l, p[0], EVL_READABLE, 0, read_cb, &w, &w.id), 0);
  CHECK_EQ(evl_fd_watch(l, p[0], EVL_READABLE, 0, read_cb, &w, NULL), EEXIST);
  for (i = 0; i < 100; i++) {
    CHECK_EQ(write(p[1], "abcdefghij", 10), 10);
    if (i % 10 == 0) t_sleep_ms(1);
  }
  t_wait_ge(&w.bytes, 1000);
  close(p[1]);  /* hang-up: readable, read returns 0, the watch cancels */
  t_wait_ge(&w.final, 1);
  t_sleep_ms(10);
  CHECK_EQ(atomic_load(&w.final), 1);
  CHECK_EQ(atomic_load(&w.bytes), 1000);
  CHECK_EQ(atomic_load(&w.bad), 0);
  close(p[0]);
}

/* Socket pair: one end watched for both directions, without the GVL. */
typedef struct {
  int fd;
  atomic_int writable, readable, final, bad;
  evl_id_t id;
} sock_t;

static void sock_cb(evl_t *l, void *arg, int status, unsigned events) {
  sock_t *s = arg;
  char buf[64];
  if (status != 0) {
    if (status != ECANCELED) atomic_store(&s->bad, 1);
    atomic_fetch_add(&s->final, 1);
    return;
  }
  if (t_holds(l)) atomic_store(&s->bad, 1);
  if (events & EVL_WRITABLE) {
    if (atomic_fetch_add(&s->writable, 1) == 0)
      CHECK_EQ(write(s->fd, "ping", 4), 4);
  }
  if (events & EVL_READABLE) {
    ssize_t n = read(s->fd, buf, sizeof buf);
    if (n == 4 && memcmp(buf, "pong", 4) == 0) atomic_fetch_add(&s->readable, 1);
    CHECK_EQ(evl_cancel(l, s->id), 0);
  }
}

static void test_socketpair(evl_t *l) {
  int sv[2];
  char buf[8];
  static sock_t s;
  CHECK_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
  s.fd = sv[0];
  CHECK_EQ(evl_fd_watch(l, sv[0], EVL_READABLE | EVL_WRITABLE, EVL_F_NOGVL,
                        sock_cb, &s, &s.id), 0);
  CHECK_EQ(read(sv[1], buf, 4), 4);  /* blocks until the watch wrote */
  CHECK_EQ(memcmp(buf, "ping", 4), 0);
  CHECK_EQ(write(sv[1], "pong", 4), 4);
  t_wait_ge(&s.final, 1);
  CHECK_EQ(atomic_load(&s.readable), 1);
  CHECK(atomic_load(&s.writable) >= 1);
  CHECK_EQ(atomic_load(&s.bad), 0);
  close(sv[0]);
  close(sv[1]);
}

/* Cancel and watch the same fd again at once: the old handle is closed
 * before the new one opens (cancellations are applied first). */
static atomic_int rw_final, rw_calls;
static void rw_cb(evl_t *l, void *arg, int status, unsigned events) {
  (void)l;
  (void)events;
  if (status == ECANCELED) atomic_fetch_add(&rw_final, 1);
  else if (status == 0 && arg != NULL) atomic_fetch_add(&rw_calls, 1);
}

static void test_rewatch(evl_t *l) {
  int p[2], i;
  evl_id_t id;
  CHECK_EQ(pipe(p), 0);
  for (i = 0; i < 50; i++) {
    CHECK_EQ(evl_fd_watch(l, p[1], EVL_WRITABLE, 0, rw_cb, NULL, &id), 0);
    CHECK_EQ(evl_cancel(l, id), 0);
  }
  CHECK_EQ(evl_fd_watch(l, p[1], EVL_WRITABLE, 0, rw_cb, (void *)1, &id), 0);
  t_wait_ge(&rw_calls, 1);
  CHECK_EQ(evl_cancel(l, id), 0);
  t_wait_ge(&rw_final, 51);
  close(p[0]);
  close(p[1]);
}

static void test_bad(evl_t *l) {
  int p[2], fd;
  char path[] = "/tmp/evl_fd_XXXXXX";
  evl_id_t id = 0;
  CHECK_EQ(pipe(p), 0);
  CHECK_EQ(evl_fd_watch(NULL, p[0], EVL_READABLE, 0, rw_cb, NULL, &id), EINVAL);
  CHECK_EQ(evl_fd_watch(l, -1, EVL_READABLE, 0, rw_cb, NULL, &id), EINVAL);
  CHECK_EQ(evl_fd_watch(l, p[0], 0, 0, rw_cb, NULL, &id), EINVAL);
  CHECK_EQ(evl_fd_watch(l, p[0], 0x4, 0, rw_cb, NULL, &id), EINVAL);
  CHECK_EQ(evl_fd_watch(l, p[0], EVL_READABLE, 0x80, rw_cb, NULL, &id), EINVAL);
  CHECK_EQ(evl_fd_watch(l, p[0], EVL_READABLE, 0, NULL, NULL, &id), EINVAL);
  close(p[0]);
  close(p[1]);
  CHECK_EQ(evl_fd_watch(l, p[0], EVL_READABLE, 0, rw_cb, NULL, &id), EBADF);
  fd = mkstemp(path);
  CHECK(fd >= 0);
  CHECK_EQ(evl_fd_watch(l, fd, EVL_READABLE, 0, rw_cb, NULL, &id), EVL_ENOTPOLL);
  close(fd);
  unlink(path);
  fd = open("/tmp", O_RDONLY | O_DIRECTORY);
  CHECK(fd >= 0);
  CHECK_EQ(evl_fd_watch(l, fd, EVL_READABLE, 0, rw_cb, NULL, &id), EVL_ENOTPOLL);
  close(fd);
  CHECK_EQ(id, 0);
}

/* A watch still open at stop ends with ECANCELED. */
static void test_stop_open(gvl_t *g) {
  evl_t *l = t_loop(g);
  int p[2];
  static watch_t w;
  CHECK_EQ(pipe(p), 0);
  w.fd = p[0];
  CHECK_EQ(evl_fd_watch(l, p[0], EVL_READABLE, 0, read_cb, &w, &w.id), 0);
  CHECK_EQ(evl_destroy(l), 0);
  CHECK_EQ(atomic_load(&w.final), 1);
  CHECK_EQ(atomic_load(&w.bad), 0);
  close(p[0]);
  close(p[1]);
}

int main(void) {
  gvl_t *g = t_gvl();
  evl_t *l = t_loop(g);
  test_bad(l);
  test_pipe(l);
  test_socketpair(l);
  test_rewatch(l);
  CHECK_EQ(evl_destroy(l), 0);
  test_stop_open(g);
  CHECK_EQ(gvl_destroy(g), 0);
  puts("test_fd ok");
  return 0;
}
