/* SPDX-License-Identifier: MIT */
/*
 * read_all -- whole-file read with a cold page cache, plain vs with the
 * sequential-access hint (posix_fadvise(POSIX_FADV_SEQUENTIAL)), through
 * evl_read_all.
 *
 *   read_all [--quick] [--runs N] [--dir D] [--mb M]
 *
 * A file of M MB (default 256; 64 with --quick) is written to D (default
 * $TMPDIR or /var/tmp) and fsync'ed.  Before every read its cached pages are
 * dropped with POSIX_FADV_DONTNEED (no root needed); mincore shows how much
 * was still resident.  The variants alternate (plain, hinted, hinted,
 * plain, ...) so that drift in the machine's load hits both alike.
 * Wall time, and system time of the reading thread (RUSAGE_THREAD).
 * A ratio below 1 means the hint helped.  On a virtual disk the host's own
 * cache may make "cold" reads warm; the output says what it saw.
 * Output: RESULT read_all plain|hinted wall_ms|sys_ms <v>,
 *         RESULT read_all hinted wall_ratio|sys_ratio <v>, resident_pct.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "bench.h"
#include "evloop.h"

#define TMPFS_MAGIC_ 0x01021994

static char path[4096];

static void make_file(size_t size) {
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  static unsigned char buf[1 << 20];
  size_t off = 0, i;
  if (fd < 0) bench_die("open for writing", errno);
  for (i = 0; i < sizeof buf; i++) buf[i] = (unsigned char)(i * 131 + (i >> 9));
  while (off < size) {
    size_t n = size - off < sizeof buf ? size - off : sizeof buf;
    buf[0] = (unsigned char)(off >> 20);
    if (write(fd, buf, n) != (ssize_t)n) bench_die("write", errno);
    off += n;
  }
  if (fsync(fd) != 0) bench_die("fsync", errno);
  close(fd);
}

/* Drop the file's pages from the page cache; return the share still
 * resident afterwards (percent). */
static double drop_cache(size_t size) {
  int fd = open(path, O_RDONLY);
  size_t pg = (size_t)sysconf(_SC_PAGESIZE), npages = (size + pg - 1) / pg, i, res = 0;
  unsigned char *vec;
  void *map;
  if (fd < 0) bench_die("open", errno);
  fdatasync(fd);
  posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
  map = mmap(NULL, size, PROT_READ, MAP_SHARED, fd, 0);
  vec = malloc(npages);
  if (map != MAP_FAILED && vec != NULL && mincore(map, size, vec) == 0)
    for (i = 0; i < npages; i++) res += vec[i] & 1;
  if (map != MAP_FAILED) munmap(map, size);
  free(vec);
  close(fd);
  return 100.0 * (double)res / (double)npages;
}

static double tv_ms(struct timeval tv) {
  return (double)tv.tv_sec * 1e3 + (double)tv.tv_usec / 1e3;
}

/* One cold read; adds wall and system milliseconds. */
static void one_read(unsigned flags, size_t size, double *wall, double *sys) {
  struct rusage r0, r1;
  char *d;
  size_t n;
  uint64_t t0;
  int err;
  getrusage(RUSAGE_THREAD, &r0);
  t0 = bench_now_ns();
  err = evl_read_all(NULL, path, flags, 0, &d, &n);
  *wall += (double)(bench_now_ns() - t0) / 1e6;
  getrusage(RUSAGE_THREAD, &r1);
  *sys += tv_ms(r1.ru_stime) - tv_ms(r0.ru_stime);
  if (err != 0) bench_die("evl_read_all", err);
  if (n != size) bench_die("short read", EIO);
  free(d);
}

int main(int argc, char **argv) {
  const char *dir = getenv("TMPDIR");
  size_t mb = 256;
  int runs = 3, i, r, fd;
  double wall[2] = {0, 0}, sys[2] = {0, 0}, resident = 0;
  struct statfs sf;
  if (dir == NULL || dir[0] == '\0') dir = "/var/tmp";
  for (i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--quick") == 0) { mb = 64; runs = 1; }
    else if (strcmp(argv[i], "--runs") == 0 && i + 1 < argc) runs = atoi(argv[++i]);
    else if (strcmp(argv[i], "--dir") == 0 && i + 1 < argc) dir = argv[++i];
    else if (strcmp(argv[i], "--mb") == 0 && i + 1 < argc) mb = (size_t)atol(argv[++i]);
    else {
      fprintf(stderr, "usage: %s [--quick] [--runs N] [--dir D] [--mb M]\n", argv[0]);
      return 2;
    }
  }
  if (runs < 1) runs = 1;
  snprintf(path, sizeof path, "%s/evl_read_all_XXXXXX", dir);
  fd = mkstemp(path);
  if (fd < 0) bench_die("mkstemp", errno);
  close(fd);
  if (statfs(dir, &sf) == 0 && sf.f_type == TMPFS_MAGIC_)
    printf("read_all: %s is tmpfs: pages cannot be dropped, reads are warm\n", dir);
  make_file(mb << 20);
  bench_meta("read_all", "wall_ratio", "x", "lower",
             "cold whole-file read, hinted / plain (below 1: the hint helps)");
  for (r = 0; r < runs; r++) {
    for (i = 0; i < 2; i++) {
      int v = (r + i) % 2;   /* 0 plain, 1 hinted; alternate the order */
      resident += drop_cache(mb << 20);
      one_read(v ? 0 : EVL_READ_NOHINT, mb << 20, &wall[v], &sys[v]);
    }
  }
  unlink(path);
  resident /= 2.0 * runs;
  printf("read_all: %zu MB in %s, %d run(s) each, %.1f%% resident after the drop\n",
         mb, dir, runs, resident);
  printf("  plain   wall %8.1f ms  sys %8.1f ms\n", wall[0] / runs, sys[0] / runs);
  printf("  hinted  wall %8.1f ms  sys %8.1f ms\n", wall[1] / runs, sys[1] / runs);
  printf("  ratio   wall %8.3f     sys %8.3f   (hinted / plain)\n",
         wall[1] / wall[0], sys[0] > 0 ? sys[1] / sys[0] : 0.0);
  bench_result("read_all", "plain", "wall_ms", wall[0] / runs);
  bench_result("read_all", "plain", "sys_ms", sys[0] / runs);
  bench_result("read_all", "hinted", "wall_ms", wall[1] / runs);
  bench_result("read_all", "hinted", "sys_ms", sys[1] / runs);
  bench_result("read_all", "hinted", "wall_ratio", wall[1] / wall[0]);
  bench_result("read_all", "hinted", "sys_ratio", sys[0] > 0 ? sys[1] / sys[0] : 0.0);
  bench_result("read_all", "both", "resident_pct", resident);
  return 0;
}
