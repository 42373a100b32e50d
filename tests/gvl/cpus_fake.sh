#!/bin/sh
# SPDX-License-Identifier: MIT
# The CPUs libgvl counts for its spin decision (gvl_cpus_linux.c) under
# made-up cgroup layouts: each case writes a /proc/self/cgroup, a
# /proc/self/mountinfo and a tree of quota files, shows the first two to the
# probe through bind mounts in a mount namespace of its own, runs it on two
# CPUs and compares what it prints.  Needs root, unshare(1) and two CPUs:
# else exit 77 (ctest: skipped).
#   usage: cpus_fake.sh PROBE
set -u
probe=$1
[ "$(id -u)" = 0 ] || { echo "skipped: needs root (mount namespaces)"; exit 77; }
command -v unshare > /dev/null || { echo "skipped: no unshare"; exit 77; }
cpus=$(taskset -c -p $$ | sed 's/.*: //' | tr ',' '\n' | while IFS=- read a b; do
  seq "$a" "${b:-$a}"; done | head -n 2 | paste -sd, -)
case $cpus in *,*) ;; *) echo "skipped: needs two CPUs"; exit 77 ;; esac
unshare -m true 2> /dev/null || { echo "skipped: unshare -m refused"; exit 77; }

top=$(mktemp -d)
trap 'rm -rf "$top"' EXIT
fail=0
n=0

# case NAME EXPECTED: runs the probe on the layout under $top/$n.
check() {
  got=$(unshare -m sh -c 'mount --bind "$0/cgroup" /proc/$$/cgroup &&
        mount --bind "$0/mountinfo" /proc/$$/mountinfo &&
        exec taskset -c "$1" "$2"' "$d" "$cpus" "$probe")
  if [ "$got" = "$2" ]; then echo "ok $1: $got"
  else echo "FAIL $1: counted $got CPUs, expected $2"; fail=1; fi
}
# layout: a fresh directory $d with cg/ as the hierarchy's mount point.
layout() { n=$((n + 1)); d=$top/$n; mkdir -p "$d/cg"; }
v2mount() {  # ROOT: cgroup2 mounted from ROOT at $d/cg, with optional fields
  printf '25 1 0:22 / / rw shared:1 - ext4 /dev/sda1 rw\n' > "$d/mountinfo"
  printf '30 25 0:26 %s %s rw,nosuid,nodev shared:4 master:2 - cgroup2 cgroup2 rw,nsdelegate\n' \
    "$1" "$d/cg" >> "$d/mountinfo"
}
quota2() { mkdir -p "$d/cg$1"; echo "$2" > "$d/cg$1/cpu.max"; }
quota1() { mkdir -p "$d/$1"; echo "$2" > "$d/$1/cpu.cfs_quota_us"
           echo "${3:-100000}" > "$d/$1/cpu.cfs_period_us"; }

layout; v2mount /; echo '0::/a/b' > "$d/cgroup"
quota2 /a '50000 100000'; quota2 /a/b 'max 100000'
check "v2: the parent's half CPU" 1

layout; v2mount /; echo '0::/a/b' > "$d/cgroup"
quota2 /a 'max 100000'; quota2 /a/b 'max 100000'
check "v2: no quota" 2

layout; v2mount /; echo '0::/a/b' > "$d/cgroup"
quota2 /a/b '150000 100000'
check "v2: 1.5 CPUs rounded up" 2

layout; v2mount /; echo '0::/a/b' > "$d/cgroup"
quota2 /a/b '100000 100000'
check "v2: exactly one CPU" 1

layout; v2mount /; echo '0::/a/b/' > "$d/cgroup"
quota2 /a/b '20000 100000'
check "v2: trailing slash" 1

layout; v2mount /; echo '0::/' > "$d/cgroup"
quota2 '' '50000 100000'
check "v2: the root's own file" 1

layout; v2mount /docker/c1; echo '0::/docker/c1' > "$d/cgroup"
quota2 '' '50000 100000'
check "v2: a container's view, its cgroup at the mount's root" 1

layout; v2mount /docker/c1; echo '0::/docker/c1/x' > "$d/cgroup"
quota2 '' 'max 100000'; quota2 /x '30000 100000'
check "v2: below a container's root" 1

layout; v2mount /docker/c1; echo '0::/elsewhere' > "$d/cgroup"
quota2 '' '50000 100000'
check "v2: a cgroup outside what is mounted" 2

layout; v2mount /; echo '0::/a' > "$d/cgroup"
mkdir -p "$d/cg/a"
check "v2: no cpu.max (controller off)" 2

layout; v2mount /; echo '0::/a' > "$d/cgroup"
quota2 /a 'garbage'
check "v2: unreadable cpu.max" 2

# cgroup v1: the cpu controller shares a hierarchy with cpuacct; cpuset's
# and cpuacct's alone must not be taken for it, and a cgroup2 mount with a
# quota is not read while cpu is on v1.
v1layout() {
  layout
  mkdir -p "$d/cpuset" "$d/cpuacct" "$d/v2"
  printf '25 1 0:22 / / rw shared:1 - ext4 /dev/sda1 rw\n' > "$d/mountinfo"
  printf '31 25 0:27 / %s rw shared:5 - cgroup cgroup rw,cpuset\n' "$d/cpuset" >> "$d/mountinfo"
  printf '32 25 0:28 / %s rw shared:6 - cgroup cgroup rw,cpuacct\n' "$d/cpuacct" >> "$d/mountinfo"
  printf '33 25 0:29 %s %s rw shared:7 - cgroup cgroup rw,cpu,cpuacct\n' "$1" "$d/cg" >> "$d/mountinfo"
  printf '34 25 0:30 / %s rw shared:8 - cgroup2 cgroup2 rw\n' "$d/v2" >> "$d/mountinfo"
  printf '3:cpuset:/k\n2:cpuacct:/k\n1:cpu,cpuacct:%s\n0::/k\n' "$2" > "$d/cgroup"
  for c in cpuset cpuacct; do quota1 "$c/k" 10000; done
  mkdir -p "$d/v2/k"; echo '10000 100000' > "$d/v2/k/cpu.max"
}

v1layout / /k; quota1 cg/k 50000
check "v1: half a CPU" 1

v1layout / /k; quota1 cg/k -1
check "v1: no quota (-1); cpuset, cpuacct and cgroup2 not read" 2

v1layout / /k/j; quota1 cg/k 40000 50000; quota1 cg/k/j -1
check "v1: the parent's 0.8 CPU" 1

v1layout / /k; quota1 cg/k 300000 200000
check "v1: 1.5 CPUs rounded up" 2

v1layout /docker/c1 /docker/c1; quota1 cg 50000
check "v1: a container's view" 1

v1layout / /k; mkdir -p "$d/cg/k"; echo 50000 > "$d/cg/k/cpu.cfs_quota_us"
check "v1: no period file" 2

exit $fail
