/* SPDX-License-Identifier: MIT */
/* Prints gvl__cpus(), the CPUs libgvl counts for its spin decision
 * (gvl_cpus_linux.c); for cpus_fake.sh. */
#include "gvl_int.h"

#include <stdio.h>

int main(void) {
  printf("%d\n", gvl__cpus());
  return 0;
}
