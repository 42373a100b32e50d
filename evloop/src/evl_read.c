/* SPDX-License-Identifier: MIT */
/*
 * evl_read.c -- whole-file reads with the sequential-access hint.
 *
 * The buffer is sized from fstat (one extra byte, so that a file of the
 * reported size ends with a read of 0 and a file that grew is noticed) and
 * doubles when a file grows or reports size 0 (pipes, /proc, sysfs).  Reads
 * go in chunks so that an interrupt can stop a long read between two of
 * them.  posix_fadvise(POSIX_FADV_SEQUENTIAL) doubles Linux's readahead
 * window for the file; its failure (ESPIPE on a pipe) does not matter.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "evl_int.h"

#define EVL__READ_CHUNK   (8u << 20)   /* bytes per read(2)                */
#define EVL__READ_INITIAL 4096u        /* first buffer when size is unknown */

typedef struct {
  char *buf;
  size_t len;     /* bytes read                          */
  size_t cap;     /* bytes allocated                     */
  size_t limit;   /* 0: none                             */
} evl__rbuf_t;

/* Open without blocking (a FIFO with no writer would block in open), then
 * switch to blocking reads. */
static int evl__open_read(const char *path, int *fd_out, struct stat *sb) {
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK), fl;
  if (fd < 0) return errno;
  if (fstat(fd, sb) != 0 || (fl = fcntl(fd, F_GETFL)) == -1 ||
      fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) == -1) {
    int err = errno;
    close(fd);
    return err;
  }
  if (S_ISDIR(sb->st_mode)) {
    close(fd);
    return EISDIR;
  }
  *fd_out = fd;
  return 0;
}

/* First capacity: the reported size plus one, or a small block. */
static int evl__rbuf_init(evl__rbuf_t *rb, const struct stat *sb,
                          size_t limit) {
  size_t cap = EVL__READ_INITIAL;
  rb->limit = limit;
  rb->len = 0;
  if (S_ISREG(sb->st_mode) && sb->st_size > 0) {
    if ((uint64_t)sb->st_size >= SIZE_MAX) return ENOMEM;
    if (limit != 0 && (uint64_t)sb->st_size > limit) return EFBIG;
    cap = (size_t)sb->st_size + 1;
  }
  if (limit != 0 && limit < SIZE_MAX && cap > limit + 1) cap = limit + 1;
  rb->buf = malloc(cap);
  if (rb->buf == NULL) return ENOMEM;
  rb->cap = cap;
  return 0;
}

/* The buffer is full: past the limit that is EFBIG, else double it. */
static int evl__rbuf_grow(evl__rbuf_t *rb) {
  size_t ncap;
  char *nbuf;
  if (rb->limit != 0 && rb->len > rb->limit) return EFBIG;
  if (rb->cap > SIZE_MAX / 2) return ENOMEM;
  ncap = rb->cap * 2;
  if (rb->limit != 0 && rb->limit < SIZE_MAX && ncap > rb->limit + 1)
    ncap = rb->limit + 1;
  nbuf = realloc(rb->buf, ncap);
  if (nbuf == NULL) return ENOMEM;
  rb->buf = nbuf;
  rb->cap = ncap;
  return 0;
}

static int evl__read_loop(int fd, evl__rbuf_t *rb, atomic_int *stop) {
  for (;;) {
    size_t room;
    ssize_t n;
    int err;
    if (rb->len == rb->cap && (err = evl__rbuf_grow(rb)) != 0) return err;
    if (stop != NULL && atomic_load(stop)) return EINTR;
    room = rb->cap - rb->len;
    n = read(fd, rb->buf + rb->len, room < EVL__READ_CHUNK ? room
                                                           : EVL__READ_CHUNK);
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    if (n == 0) break;
    rb->len += (size_t)n;
  }
  if (rb->limit != 0 && rb->len > rb->limit) return EFBIG;
  return 0;
}

/* Give back a buffer much larger than its contents (a file that shrank, or
 * the last doubling); a failed realloc keeps the larger one. */
static void evl__rbuf_fit(evl__rbuf_t *rb) {
  char *nbuf;
  if (rb->cap - rb->len <= 65536 || rb->cap - rb->len <= rb->len / 8) return;
  nbuf = realloc(rb->buf, rb->len + 1);
  if (nbuf != NULL) {
    rb->buf = nbuf;
    rb->cap = rb->len + 1;
  }
}

int evl__read_path(const char *path, unsigned flags, size_t limit,
                   atomic_int *stop, char **data_out, size_t *len_out) {
  evl__rbuf_t rb = {NULL, 0, 0, 0};
  struct stat sb;
  int fd = -1, err;
  *data_out = NULL;
  *len_out = 0;
  if ((err = evl__open_read(path, &fd, &sb)) != 0) return err;
  if (!(flags & EVL_READ_NOHINT))
    (void)posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
  if ((err = evl__rbuf_init(&rb, &sb, limit)) == 0)
    err = evl__read_loop(fd, &rb, stop);
  close(fd);
  if (err != 0) {
    free(rb.buf);
    return err;
  }
  /* Room for the NUL: the loop only stops at a read of 0, which needs
   * room, so len < cap here. */
  rb.buf[rb.len] = '\0';
  evl__rbuf_fit(&rb);
  *data_out = rb.buf;
  *len_out = rb.len;
  return 0;
}

/* ---- evl_read_all: the synchronous read, outside the GVL ------------------- */

typedef struct {
  const char *path;
  unsigned flags;
  size_t limit;
  atomic_int stop;
  char *data;
  size_t len;
  int err;
} evl__read_job_t;

static void *evl__read_job(void *p) {
  evl__read_job_t *j = p;
  j->err = evl__read_path(j->path, j->flags, j->limit, &j->stop, &j->data,
                          &j->len);
  return p;
}

/* Unblocking function: stop between two chunks. */
static void evl__read_ubf(void *p) {
  evl__read_job_t *j = p;
  atomic_store(&j->stop, 1);
}

int evl_read_all(gvl_thread_t *t, const char *path, unsigned flags,
                 size_t limit, char **data_out, size_t *len_out) {
  evl__read_job_t j;
  if (data_out != NULL) *data_out = NULL;
  if (len_out != NULL) *len_out = 0;
  if (path == NULL || data_out == NULL || len_out == NULL ||
      (flags & ~EVL_READ_NOHINT) != 0)
    return EINVAL;
  j.path = path;
  j.flags = flags;
  j.limit = limit;
  atomic_init(&j.stop, 0);
  j.data = NULL;
  j.len = 0;
  j.err = 0;
  if (t == NULL) {
    evl__read_job(&j);
  } else if (gvl_call_without(t, evl__read_job, &j, evl__read_ubf, &j) ==
             NULL) {
    return errno != 0 ? errno : EINVAL;
  }
  *data_out = j.data;
  *len_out = j.len;
  return j.err;
}
