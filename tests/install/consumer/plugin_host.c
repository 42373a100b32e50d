/* SPDX-License-Identifier: MIT */
/* An interpreter that links libgvl, libevloop and libtkbridge statically and
 * exports them (-rdynamic) to the extensions it loads, as an interpreter
 * built with a static runtime does: the extension (plugin.c) is linked
 * against nothing of gvloop's and must find every call in the host. */
#include <dlfcn.h>
#include <gvl.h>
#include <stdio.h>
#include <string.h>
#include <tkbridge.h>

int main(int argc, char **argv) {
  if (argc != 2) return 2;
  void *h = dlopen(argv[1], RTLD_NOW);
  if (!h) {
    printf("dlopen: %s\n", dlerror());
    return 1;
  }
  const char *(*ext)(void) = (const char *(*)(void))dlsym(h, "plugin_versions");
  if (!ext) return 1;
  const char *v = ext();
  /* The host's own copies answer the extension's calls. */
  if (strcmp(gvl_version_string(), evl_version_string()) ||
      strcmp(gvl_version_string(), tkb_version_string()))
    return 1;
  printf("host with static gvloop exports it: %s\n", v);
  return 0;
}
