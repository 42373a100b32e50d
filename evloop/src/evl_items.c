/* SPDX-License-Identifier: MIT */
/*
 * evl_items.c -- registrations: the id map, the incoming lists, and the
 * public calls that create or cancel a registration from any thread.
 *
 * A registration is published under mu in three places at once: the id map
 * (for evl_cancel), the incoming "start" list (for the loop thread) and,
 * for fd watches, the fd list (to refuse a second watch of the same fd).
 * The first push onto an empty incoming list sends the wake-up; pushes onto
 * a non-empty list need none, because the send of the first push has not
 * been drained yet (a drain empties the list under the same lock).
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "evl_int.h"

#define EVL__MAP_MIN 64u

static size_t evl__hash(evl_id_t id, size_t size) {
  /* Ids are sequential; Fibonacci hashing spreads them over the buckets. */
  return (size_t)((id * 0x9E3779B97F4A7C15ull) >> 32) & (size - 1);
}

int evl__map_init(evl_t *l) {
  l->map = calloc(EVL__MAP_MIN, sizeof *l->map);
  if (l->map == NULL) return ENOMEM;
  l->map_size = EVL__MAP_MIN;
  return 0;
}

/* [mu] Double the bucket array.  A failed allocation keeps the old one:
 * chains get longer, nothing breaks. */
static void evl__map_grow(evl_t *l) {
  size_t nsize = l->map_size * 2, i;
  evl__item_t **nmap = calloc(nsize, sizeof *nmap);
  if (nmap == NULL) return;
  for (i = 0; i < l->map_size; i++) {
    evl__item_t *it = l->map[i], *next;
    for (; it != NULL; it = next) {
      size_t b = evl__hash(it->id, nsize);
      next = it->hnext;
      it->hnext = nmap[b];
      nmap[b] = it;
    }
  }
  free(l->map);
  l->map = nmap;
  l->map_size = nsize;
}

/* [mu] */
static void evl__map_insert(evl_t *l, evl__item_t *it) {
  size_t b;
  if (l->map_count >= l->map_size) evl__map_grow(l);
  b = evl__hash(it->id, l->map_size);
  it->hnext = l->map[b];
  l->map[b] = it;
  it->in_map = 1;
  l->map_count++;
}

/* [mu] */
static evl__item_t *evl__map_find(evl_t *l, evl_id_t id) {
  evl__item_t *it = l->map[evl__hash(id, l->map_size)];
  while (it != NULL && it->id != id) it = it->hnext;
  return it;
}

/* [mu] */
void evl__map_remove(evl_t *l, evl__item_t *it) {
  evl__item_t **pp;
  if (!it->in_map) return;
  pp = &l->map[evl__hash(it->id, l->map_size)];
  while (*pp != it) pp = &(*pp)->hnext;
  *pp = it->hnext;
  it->hnext = NULL;
  it->in_map = 0;
  l->map_count--;
}

/* [mu] */
void evl__flist_remove(evl_t *l, evl__item_t *it) {
  evl__item_t **pp = &l->fds;
  if (!it->in_flist) return;
  while (*pp != it) pp = &(*pp)->fnext;
  *pp = it->fnext;
  it->fnext = NULL;
  it->in_flist = 0;
}

/* [mu] */
static int evl__fd_taken(evl_t *l, int fd) {
  evl__item_t *it;
  for (it = l->fds; it != NULL; it = it->fnext)
    if (it->fd == fd) return 1;
  return 0;
}

/* [mu] Wake the loop thread unless its wake-up is closing. */
void evl__wake_locked(evl_t *l) {
  if (!l->wake_closed) evl__wake_send(&l->wake);
}

/* [mu] Queue a cancellation for the loop thread. */
static void evl__clist_push(evl_t *l, evl__item_t *it) {
  int was_empty = l->c_head == NULL && l->in_head == NULL;
  if (it->in_clist) return;
  it->in_clist = 1;
  it->cnext = NULL;
  if (l->c_tail != NULL) l->c_tail->cnext = it; else l->c_head = it;
  l->c_tail = it;
  if (was_empty) evl__wake_locked(l);
}

/* [mu, at shutdown] Cancel everything still registered: every item leaves
 * the map and is queued for cancellation on the loop thread. */
void evl__mark_all_cancelled(evl_t *l) {
  size_t i;
  for (i = 0; i < l->map_size; i++) {
    evl__item_t *it = l->map[i], *next;
    for (; it != NULL; it = next) {
      next = it->hnext;
      it->hnext = NULL;
      it->in_map = 0;
      it->cancelled = 1;
      evl__flist_remove(l, it);
      evl__clist_push(l, it);
    }
    l->map[i] = NULL;
  }
  l->map_count = 0;
}

evl__item_t *evl__item_new(evl_t *l, int kind, unsigned flags, void *arg) {
  evl__item_t *it = calloc(1, sizeof *it);
  if (it == NULL) return NULL;
  it->l = l;
  it->kind = kind;
  it->flags = flags;
  it->arg = arg;
  it->refs = 1;          /* the delivery of the last call */
  it->fd = -1;
  it->sig_slot = -1;
  return it;
}

void evl__item_free(evl__item_t *it) {
  free(it->path);
  free(it->data);
  free(it);
}

/* [loop] Drop a reference; the last one frees the item, unless the item
 * still sits in the cancel list (evl_cancel raced with its last call): then
 * the drain that unlinks it frees it. */
void evl__item_unref(evl_t *l, evl__item_t *it) {
  int keep;
  if (--it->refs > 0) return;
  pthread_mutex_lock(&l->mu);
  keep = it->in_clist;
  if (keep) it->zombie = 1;
  pthread_mutex_unlock(&l->mu);
  if (!keep) {
    EVL__STAT_ADD(l, live, (uint64_t)-1);
    evl__item_free(it);
  }
}

/* [any] Publish a new registration.  On error the item is freed and its
 * callback will never be called. */
int evl__submit(evl_t *l, evl__item_t *it, evl_id_t *id_out) {
  int was_empty;
  pthread_mutex_lock(&l->mu);
  if (l->closed || atomic_load(&l->stopping)) {
    pthread_mutex_unlock(&l->mu);
    evl__item_free(it);
    return EVL_ESTOPPED;
  }
  if (it->kind == EVL__FD && evl__fd_taken(l, it->fd)) {
    pthread_mutex_unlock(&l->mu);
    evl__item_free(it);
    return EEXIST;
  }
  it->id = ++l->next_id;
  /* Set before the item is published: a callback that reads the id its
   * registration stored (to cancel itself) must find it there. */
  if (id_out != NULL) *id_out = it->id;
  evl__map_insert(l, it);
  if (it->kind == EVL__FD) {
    it->fnext = l->fds;
    l->fds = it;
    it->in_flist = 1;
  }
  was_empty = l->in_head == NULL && l->c_head == NULL;
  it->inext = NULL;
  if (l->in_tail != NULL) l->in_tail->inext = it; else l->in_head = it;
  l->in_tail = it;
  EVL__STAT_ADD(l, live, 1);
  if (was_empty) evl__wake_locked(l);
  pthread_mutex_unlock(&l->mu);
  return 0;
}

/* ---- public registration calls -------------------------------------------- */

int evl_post(evl_t *l, evl_cb cb, void *arg, evl_id_t *id_out) {
  return evl_post_flags(l, cb, arg, 0, id_out);
}

int evl_post_flags(evl_t *l, evl_cb cb, void *arg, unsigned flags,
                   evl_id_t *id_out) {
  evl__item_t *it;
  if (l == NULL || cb == NULL || (flags & ~EVL_F_NOGVL) != 0) return EINVAL;
  it = evl__item_new(l, EVL__POST, flags, arg);
  if (it == NULL) return ENOMEM;
  it->cb = cb;
  return evl__submit(l, it, id_out);
}

int evl_timer(evl_t *l, uint64_t timeout_ms, uint64_t repeat_ms,
              unsigned flags, evl_cb cb, void *arg, evl_id_t *id_out) {
  evl__item_t *it;
  if (l == NULL || cb == NULL || (flags & ~EVL_F_NOGVL) != 0) return EINVAL;
  it = evl__item_new(l, EVL__TIMER, flags, arg);
  if (it == NULL) return ENOMEM;
  it->cb = cb;
  it->timeout_ms = timeout_ms;
  it->call_ns = uv_hrtime();
  it->repeat_ms = repeat_ms;
  return evl__submit(l, it, id_out);
}

/* Checks that can be made on the calling thread, so that the common
 * mistakes are reported by the call itself rather than by a last call. */
static int evl__check_fd(int fd) {
  struct stat sb;
  if (fcntl(fd, F_GETFD) == -1) return EBADF;
  if (fstat(fd, &sb) != 0) return errno;
  /* epoll refuses regular files and directories (with EPERM, which would
   * read as a wrong-thread error here). */
  if (S_ISREG(sb.st_mode) || S_ISDIR(sb.st_mode)) return EVL_ENOTPOLL;
  return 0;
}

int evl_fd_watch(evl_t *l, int fd, unsigned events, unsigned flags,
                 evl_io_cb cb, void *arg, evl_id_t *id_out) {
  evl__item_t *it;
  int err;
  if (l == NULL || cb == NULL || fd < 0 || events == 0 ||
      (events & ~(EVL_READABLE | EVL_WRITABLE)) != 0 ||
      (flags & ~EVL_F_NOGVL) != 0)
    return EINVAL;
  if ((err = evl__check_fd(fd)) != 0) return err;
  it = evl__item_new(l, EVL__FD, flags, arg);
  if (it == NULL) return ENOMEM;
  it->io_cb = cb;
  it->fd = fd;
  it->want = events;
  return evl__submit(l, it, id_out);
}

int evl_signal_watch(evl_t *l, int signum, unsigned flags, evl_cb cb,
                     void *arg, evl_id_t *id_out) {
  evl__item_t *it;
  if (l == NULL || cb == NULL || signum <= 0 || signum >= NSIG ||
      signum == SIGKILL || signum == SIGSTOP || (flags & ~EVL_F_NOGVL) != 0)
    return EINVAL;
  it = evl__item_new(l, EVL__SIGNAL, flags, arg);
  if (it == NULL) return ENOMEM;
  it->cb = cb;
  it->signum = signum;
  /* The slot before the submit, the handler after: see evl_signal.c.
   * it may be gone once submitted; the slot's names are kept. */
  evl__sig_reserve(it);
  int slot = it->sig_slot;
  unsigned gen = it->sig_gen, seq = it->sig_seq;
  int err = evl__submit(l, it, id_out);
  if (err != 0) evl__sig_release(slot, gen, seq);
  else evl__sig_install(l, slot, gen, seq);
  return err;
}

int evl_work(evl_t *l, evl_work_fn fn, unsigned flags, evl_cb done, void *arg,
             evl_id_t *id_out) {
  evl__item_t *it;
  if (l == NULL || fn == NULL || (flags & ~EVL_F_NOGVL) != 0) return EINVAL;
  it = evl__item_new(l, EVL__WORK, flags, arg);
  if (it == NULL) return ENOMEM;
  it->cb = done;
  it->work_fn = fn;
  return evl__submit(l, it, id_out);
}

int evl_read_file(evl_t *l, const char *path, unsigned flags, size_t limit,
                  evl_read_cb cb, void *arg, evl_id_t *id_out) {
  evl__item_t *it;
  if (l == NULL || path == NULL || cb == NULL ||
      (flags & ~(EVL_F_NOGVL | EVL_READ_NOHINT)) != 0)
    return EINVAL;
  it = evl__item_new(l, EVL__READ, flags, arg);
  if (it == NULL) return ENOMEM;
  it->path = strdup(path);
  if (it->path == NULL) {
    evl__item_free(it);
    return ENOMEM;
  }
  it->read_cb = cb;
  it->limit = limit;
  return evl__submit(l, it, id_out);
}

int evl_cancel(evl_t *l, evl_id_t id) {
  evl__item_t *it;
  if (l == NULL || id == 0) return EINVAL;
  pthread_mutex_lock(&l->mu);
  it = evl__map_find(l, id);
  if (it == NULL) {
    pthread_mutex_unlock(&l->mu);
    return EVL_ENOREG;
  }
  if ((it->kind == EVL__WORK || it->kind == EVL__READ) && it->started) {
    pthread_mutex_unlock(&l->mu);
    return EBUSY;
  }
  it->cancelled = 1;
  evl__map_remove(l, it);
  evl__flist_remove(l, it);
  /* A signal watch its loop thread has not started gives its slot back
   * now (after mu: the table's lock is never taken inside it), not when
   * that thread gets to it, which may be long after; the ids stay valid
   * to the table whatever happens to the item. */
  int sig_free = 0, slot = -1;
  unsigned gen = 0, seq = 0;
  if (it->kind == EVL__SIGNAL && !it->started) {   /* else the loop's */
    slot = it->sig_slot;
    gen = it->sig_gen;
    seq = it->sig_seq;
    sig_free = slot >= 0;
  }
  /* A post needs nothing from libuv: the dispatcher sees the flag. */
  if (it->kind != EVL__POST) evl__clist_push(l, it);
  pthread_mutex_unlock(&l->mu);
  if (sig_free) evl__sig_release(slot, gen, seq);
  return 0;
}
