/* SPDX-License-Identifier: MIT */
/* Builds against an installed gvloop: runs one callback on an evloop. */
#include <evloop.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static void on_post(evl_t *l, void *arg, int status) {
  (void)l;
  if (status == 0) atomic_store((atomic_int *)arg, 1);
}

int main(void) {
  atomic_int ran = 0;
  gvl_t *g = gvl_create(NULL);
  evl_t *l = g ? evl_start(g, NULL) : NULL;
  if (l == NULL || evl_post(l, on_post, &ran, NULL)) return 1;
  for (int i = 0; i < 5000 && !atomic_load(&ran); i++) usleep(1000);
  if (evl_destroy(l) || gvl_destroy(g) || !atomic_load(&ran)) return 1;
  if (strcmp(evl_version_string(), EVL_VERSION_STRING) != 0) return 1;
  printf("evloop consumer ok (%s)\n", evl_strerror(EVL_ESTOPPED));
  return 0;
}
