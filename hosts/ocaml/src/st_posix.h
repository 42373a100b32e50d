/* SPDX-License-Identifier: MIT */
/* st_posix.h -- the name OCaml's st_stubs.c includes; gvloop's threads
 * library puts this directory ahead of OCaml's own, so the master lock is
 * libgvl's (st_gvl.h). */
#include "st_gvl.h"
