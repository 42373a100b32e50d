/* SPDX-License-Identifier: MIT */
/* Whole-file reads, evl_read_all and evl_read_file: empty, small, large
 * (64 MB), missing, directory, unreadable, /proc, pipes and FIFOs, limits,
 * an allocation too large to succeed; contents compared byte for byte.
 *
 * Unreadable files: the tests run as root, for whom permission bits do not
 * stop a read.  The unreadable cases are ones root cannot read either: a
 * path through a regular file (ENOTDIR), a UNIX socket (ENXIO), a symlink
 * loop (ELOOP), and /proc/self/mem, which opens but fails to read at
 * offset 0 (EIO).  EACCES is checked too when not running as root. */
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "evl_test.h"

static char dir[64];
static char pbuf[256];

static const char *path_of(const char *name) {
  snprintf(pbuf, sizeof pbuf, "%s/%s", dir, name);
  return pbuf;
}

static unsigned char pattern(size_t i) {
  return (unsigned char)((i * 2654435761u) >> 13);
}

static void write_file(const char *name, size_t size) {
  int fd = open(path_of(name), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  static unsigned char buf[1 << 16];
  size_t off = 0;
  CHECK(fd >= 0);
  while (off < size) {
    size_t n = size - off < sizeof buf ? size - off : sizeof buf, i;
    for (i = 0; i < n; i++) buf[i] = pattern(off + i);
    CHECK_EQ(write(fd, buf, n), (long long)n);
    off += n;
  }
  close(fd);
}

static void check_pattern(const char *data, size_t len, size_t want) {
  size_t i;
  CHECK_EQ(len, want);
  CHECK(data != NULL);
  for (i = 0; i < len; i++)
    if ((unsigned char)data[i] != pattern(i)) {
      fprintf(stderr, "byte %zu differs\n", i);
      exit(1);
    }
  CHECK_EQ(data[len], 0);
}

/* Plain stdio read, to compare /proc contents against. */
static size_t slurp(const char *path, char *buf, size_t cap) {
  FILE *f = fopen(path, "rb");
  size_t n;
  CHECK(f != NULL);
  n = fread(buf, 1, cap, f);
  fclose(f);
  return n;
}

static int read_all(const char *path, unsigned flags, size_t limit,
                    char **d, size_t *n) {
  return evl_read_all(NULL, path, flags, limit, d, n);
}

static void test_sizes(void) {
  char *d;
  size_t n;
  write_file("empty", 0);
  write_file("small", 100);
  write_file("large", 64u << 20);
  CHECK_EQ(read_all(path_of("empty"), 0, 0, &d, &n), 0);
  check_pattern(d, n, 0);
  free(d);
  CHECK_EQ(read_all(path_of("small"), EVL_READ_NOHINT, 0, &d, &n), 0);
  check_pattern(d, n, 100);
  free(d);
  CHECK_EQ(read_all(path_of("large"), 0, 0, &d, &n), 0);
  check_pattern(d, n, 64u << 20);
  free(d);
  CHECK_EQ(read_all(path_of("large"), EVL_READ_NOHINT, 0, &d, &n), 0);
  check_pattern(d, n, 64u << 20);
  free(d);
  /* Limits. */
  CHECK_EQ(read_all(path_of("small"), 0, 100, &d, &n), 0);
  check_pattern(d, n, 100);
  free(d);
  CHECK_EQ(read_all(path_of("small"), 0, 99, &d, &n), EFBIG);
  CHECK(d == NULL);
  CHECK_EQ(n, 0);
}

static void test_errors(void) {
  char *d = (char *)1;
  size_t n = 1;
  struct sockaddr_un sa;
  int s;
  CHECK_EQ(read_all(path_of("missing"), 0, 0, &d, &n), ENOENT);
  CHECK(d == NULL);
  CHECK_EQ(n, 0);
  CHECK_EQ(read_all(dir, 0, 0, &d, &n), EISDIR);
  CHECK_EQ(read_all(path_of("small/x"), 0, 0, &d, &n), ENOTDIR);
  CHECK_EQ(read_all("/proc/self/mem", 0, 0, &d, &n), EIO);
  CHECK_EQ(symlink(path_of("loop"), path_of("loop")), 0);
  CHECK_EQ(read_all(path_of("loop"), 0, 0, &d, &n), ELOOP);
  s = socket(AF_UNIX, SOCK_STREAM, 0);
  memset(&sa, 0, sizeof sa);
  sa.sun_family = AF_UNIX;
  CHECK(strlen(path_of("sock")) < sizeof sa.sun_path);
  memcpy(sa.sun_path, pbuf, strlen(pbuf) + 1);
  CHECK_EQ(bind(s, (struct sockaddr *)&sa, sizeof sa), 0);
  CHECK_EQ(read_all(path_of("sock"), 0, 0, &d, &n), ENXIO);
  close(s);
  if (geteuid() != 0) {
    write_file("secret", 10);
    CHECK_EQ(chmod(path_of("secret"), 0), 0);
    CHECK_EQ(read_all(path_of("secret"), 0, 0, &d, &n), EACCES);
  }
  CHECK(d == NULL);
  /* Bad arguments. */
  CHECK_EQ(evl_read_all(NULL, NULL, 0, 0, &d, &n), EINVAL);
  CHECK_EQ(evl_read_all(NULL, path_of("small"), 0, 0, NULL, &n), EINVAL);
  CHECK_EQ(evl_read_all(NULL, path_of("small"), 0, 0, &d, NULL), EINVAL);
  CHECK_EQ(evl_read_all(NULL, path_of("small"), EVL_F_NOGVL, 0, &d, &n), EINVAL);
}

/* A sparse file far larger than memory: the buffer sized from fstat cannot
 * be allocated, and that is ENOMEM, not a crash. */
static void test_enomem(void) {
  char *d;
  size_t n;
  int fd = open(path_of("huge"), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  CHECK(fd >= 0);
  if (ftruncate(fd, (off_t)1 << 43) != 0) {  /* 8 TiB */
    close(fd);
    puts("sparse 8 TiB file not supported here; ENOMEM case skipped");
    return;
  }
  close(fd);
  CHECK_EQ(read_all(path_of("huge"), 0, 0, &d, &n), ENOMEM);
  CHECK(d == NULL);
  CHECK_EQ(read_all(path_of("huge"), 0, 1000, &d, &n), EFBIG);
  unlink(path_of("huge"));
}

static void test_proc(void) {
  static char want[1 << 16];
  const char *files[] = {"/proc/self/cmdline", "/proc/version",
                         "/proc/self/environ", "/proc/self/limits"};
  size_t i;
  for (i = 0; i < sizeof files / sizeof files[0]; i++) {
    char *d;
    size_t n, wn = slurp(files[i], want, sizeof want);
    CHECK_EQ(read_all(files[i], 0, 0, &d, &n), 0);
    CHECK_EQ(n, wn);
    CHECK(memcmp(d, want, n) == 0);
    CHECK_EQ(d[n], 0);
    free(d);
  }
}

/* A pipe reports size 0 and grows through many doublings. */
static void *pipe_writer(void *p) {
  int fd = (int)(intptr_t)p;
  static unsigned char buf[4096];
  size_t off = 0;
  while (off < (1u << 20)) {
    size_t i;
    for (i = 0; i < sizeof buf; i++) buf[i] = pattern(off + i);
    /* The over-limit case closes the read end early: EPIPE ends it. */
    if (write(fd, buf, sizeof buf) != (ssize_t)sizeof buf) break;
    off += sizeof buf;
  }
  close(fd);
  return NULL;
}

static void test_pipe_and_fifo(void) {
  int p[2];
  pthread_t th;
  char path[64], *d;
  size_t n;
  CHECK_EQ(pipe(p), 0);
  CHECK_EQ(pthread_create(&th, NULL, pipe_writer, (void *)(intptr_t)p[1]), 0);
  snprintf(path, sizeof path, "/proc/self/fd/%d", p[0]);
  CHECK_EQ(read_all(path, 0, 0, &d, &n), 0);
  pthread_join(th, NULL);
  check_pattern(d, n, 1u << 20);
  free(d);
  close(p[0]);
  /* Over the limit while growing. */
  CHECK_EQ(pipe(p), 0);
  CHECK_EQ(pthread_create(&th, NULL, pipe_writer, (void *)(intptr_t)p[1]), 0);
  snprintf(path, sizeof path, "/proc/self/fd/%d", p[0]);
  CHECK_EQ(read_all(path, 0, 5000, &d, &n), EFBIG);
  close(p[0]);  /* the writer gets EPIPE... */
  pthread_join(th, NULL);
  /* A FIFO with no writer reads as empty instead of hanging in open. */
  CHECK_EQ(mkfifo(path_of("fifo"), 0600), 0);
  CHECK_EQ(read_all(path_of("fifo"), 0, 0, &d, &n), 0);
  CHECK_EQ(n, 0);
  free(d);
}

/* With a GVL handle: the GVL is released for the read and held again. */
static void test_with_gvl(gvl_t *g) {
  gvl_thread_t *me = gvl_thread_attach(g, GVL_PRIO_NORMAL);
  char *d;
  size_t n;
  CHECK(me != NULL);
  CHECK_EQ(evl_read_all(me, path_of("small"), 0, 0, &d, &n), EPERM);
  CHECK_EQ(gvl_acquire(me), 0);
  CHECK_EQ(evl_read_all(me, path_of("small"), 0, 0, &d, &n), 0);
  CHECK(gvl_thread_holds(me));
  check_pattern(d, n, 100);
  free(d);
  /* A pending interrupt stops the read before it starts. */
  CHECK_EQ(gvl_thread_interrupt(me), 0);
  CHECK_EQ(evl_read_all(me, path_of("small"), 0, 0, &d, &n), EINTR);
  CHECK(gvl_thread_holds(me));
  CHECK(d == NULL);
  CHECK_EQ(gvl_release(me), 0);
  CHECK_EQ(gvl_thread_detach(me), 0);
}

/* evl_read_file on the thread pool. */
typedef struct {
  const char *name;
  int status;
  size_t want;
  unsigned flags;
} rcase_t;

static atomic_int rf_done, rf_bad;
static void rf_cb(evl_t *l, void *arg, int status, char *data, size_t len) {
  rcase_t *c = arg;
  if ((c->flags & EVL_F_NOGVL) ? t_holds(l) : !t_holds(l)) atomic_store(&rf_bad, 1);
  if (status != c->status) {
    fprintf(stderr, "%s: status %d, want %d\n", c->name, status, c->status);
    atomic_store(&rf_bad, 1);
  }
  if (status == 0) check_pattern(data, len, c->want);
  else if (data != NULL || len != 0) atomic_store(&rf_bad, 1);
  free(data);
  atomic_fetch_add(&rf_done, 1);
}

static void test_read_file(gvl_t *g) {
  static rcase_t cases[] = {
      {"empty", 0, 0, 0},          {"small", 0, 100, EVL_F_NOGVL},
      {"large", 0, 64u << 20, 0},  {"large", 0, 64u << 20, EVL_READ_NOHINT},
      {"missing", ENOENT, 0, 0},   {"small/x", ENOTDIR, 0, 0},
      {".", EISDIR, 0, 0},         {"sock", ENXIO, 0, 0},
  };
  char paths[8][256];
  evl_t *l = t_loop(g);
  size_t i;
  for (i = 0; i < 8; i++) {
    snprintf(paths[i], sizeof paths[i], "%s/%s", dir, cases[i].name);
    CHECK_EQ(evl_read_file(l, paths[i], cases[i].flags, 0, rf_cb, &cases[i], NULL), 0);
  }
  t_wait_ge(&rf_done, 8);
  CHECK_EQ(atomic_load(&rf_bad), 0);
  CHECK_EQ(evl_destroy(l), 0);
}

static void cleanup(void) {
  const char *names[] = {"empty", "small", "large", "loop", "sock", "secret", "fifo"};
  size_t i;
  for (i = 0; i < sizeof names / sizeof names[0]; i++) unlink(path_of(names[i]));
  rmdir(dir);
}

int main(void) {
  gvl_t *g = t_gvl();
  signal(SIGPIPE, SIG_IGN);
  snprintf(dir, sizeof dir, "/tmp/evl_read_XXXXXX");
  CHECK(mkdtemp(dir) != NULL);
  atexit(cleanup);
  test_sizes();
  test_errors();
  test_enomem();
  test_proc();
  test_pipe_and_fifo();
  test_with_gvl(g);
  test_read_file(g);
  CHECK_EQ(gvl_destroy(g), 0);
  puts("test_read ok");
  return 0;
}
