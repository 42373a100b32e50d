#!/usr/bin/env ruby
# SPDX-License-Identifier: MIT
# frozen_string_literal: true
#
# Outside anchor: the bench workloads written in Ruby, so the real
# interpreter's GVL (thread_pthread.c, the design `cond-timer` follows) is
# measured on the same machine in the same run as gvloop.
#
#   ruby bench/anchors/anchor.rb [--quick] [--runs N]
#
# Prints INFO/META/RESULT lines like gvlbench, under the variant
# "ruby-<version>".  Workloads and metrics match gvlbench's of the same name:
#   thread_pass  2 threads x N Thread.pass (vm4_thread_pass); handoff_pct
#   pipe         N one-byte round trips over two pipes (vm4_pipe)
#   mutex_10/100 threads on one Thread::Mutex (vm3_thread_mutex)
#   busy_flag    `0 until flag` while another thread wants to set it
#   wakeup       a thread sleeping 10 ms while another spins: wake-up latency
#   convoy       echo round trips (echo in a forked child, outside the GVL)
#                alone and beside 1 and 2 CPU-bound threads

require 'socket'

QUICK = ARGV.include?('--quick')
RUNS = (i = ARGV.index('--runs')) ? ARGV[i + 1].to_i : (QUICK ? 1 : 5)
VARIANT = "ruby-#{RUBY_VERSION}"
SIZES = if QUICK
          { passes: 500, trips: 200, mutex_ops: 2000, wakeup: 0.1, solo: 0.05, cap: 0.3, flag_cap: 1.0 }
        else
          { passes: 20_000, trips: 10_000, mutex_ops: 200_000, wakeup: 0.6, solo: 0.15, cap: 0.4, flag_cap: 2.0 }
        end

def now
  Process.clock_gettime(Process::CLOCK_MONOTONIC)
end

def result(bench, metric, value)
  puts "RESULT #{bench} #{VARIANT} #{metric} #{format('%.6g', value)}"
  $stdout.flush
end

def percentile(sorted, pct)
  return 0.0 if sorted.empty?

  rank = (pct / 100.0 * sorted.size).ceil.clamp(1, sorted.size)
  sorted[rank - 1]
end

def thread_pass(n)
  last = nil
  switches = 0
  arrived = 0
  t0 = nil
  threads = Array.new(2) do
    Thread.new do
      arrived += 1
      Thread.pass until arrived == 2
      t0 ||= now
      n.times do
        Thread.pass
        cur = Thread.current
        unless last.equal?(cur)
          switches += 1
          last = cur
        end
      end
    end
  end
  threads.each(&:join)
  result('thread_pass', 'time_s', now - t0)
  result('thread_pass', 'handoff_pct', switches * 100.0 / (2 * n))
end

def pipe_case(n)
  r1, w1 = IO.pipe
  r2, w2 = IO.pipe
  t0 = now
  a = Thread.new { n.times { w1.syswrite('a'); r2.sysread(1) } }
  b = Thread.new { n.times { r1.sysread(1); w2.syswrite('a') } }
  [a, b].each(&:join)
  result('pipe', 'time_s', now - t0)
  [r1, w1, r2, w2].each(&:close)
end

def mutex_case(nthreads, total)
  m = Thread::Mutex.new
  r = 0
  per = total / nthreads
  t0 = now
  Array.new(nthreads) { Thread.new { per.times { m.synchronize { r += 1 } } } }.each(&:join)
  raise "lost increments: #{r}" unless r == per * nthreads

  result("mutex_#{nthreads}", 'time_s', now - t0)
end

# The setter sleeps 2 ms (the spinner takes the GVL), then must get the GVL
# back to set the flag; measured from the end of its sleep to the spinner
# seeing the flag.
def busy_flag
  flag = false
  seen = nil
  spinner = Thread.new do
    0 until flag
    seen = now
  end
  Thread.pass until spinner.status == 'run'
  wake = now + 0.002
  sleep 0.002
  flag = true
  spinner.join(SIZES[:flag_cap] + 1)
  result('busy_flag', 'time_ms', seen ? (seen - wake) * 1000 : SIZES[:flag_cap] * 1000)
  result('busy_flag', 'timeouts', seen ? 0 : 1)
end

def wakeup
  stop = false
  hog = Thread.new { x = 0; x += 1 until stop }
  sleep 0.001
  lat = []
  finish = now + SIZES[:wakeup]
  while now < finish
    target = now + 0.010
    sleep 0.010
    lat << [now - target, 0].max
  end
  stop = true
  hog.join
  lat.sort!
  result('wakeup', 'p50_us', percentile(lat, 50) * 1e6)
  result('wakeup', 'p99_us', percentile(lat, 99) * 1e6)
  result('wakeup', 'max_us', lat.last.to_f * 1e6)
  result('wakeup', 'samples', lat.size)
end

def echo_pair
  a, b = UNIXSocket.pair
  pid = fork do
    a.close
    loop { b.syswrite(b.sysread(1)) }
  rescue EOFError, Errno::EPIPE
    exit!(0)
  end
  b.close
  [a, pid]
end

# Round trips until n are done or cap seconds pass; returns [trips, seconds].
def io_trips(sock, n, cap)
  t0 = now
  done = 0
  while done < n
    sock.syswrite('x')
    sock.sysread(1)
    done += 1
    break if now - t0 > cap
  end
  [done, now - t0]
end

CHUNKS = 4 # as gvlbench: every phase is cut in chunks that alternate

# Hogs alone for a while, then the I/O loop for its share of the trips and
# of the time cap; adds to acc = [solo units, solo s, busy units, busy s,
# trips, io s].
def convoy_chunk(sock, nhogs, acc)
  stop = false
  counts = Array.new(nhogs, 0)
  hogs = Array.new(nhogs) { |i| Thread.new { counts[i] += 1 until stop } }
  sleep 0.005
  t0 = now
  c0 = counts.sum
  sleep SIZES[:solo] / CHUNKS
  t1 = now
  c1 = counts.sum
  trips, secs = io_trips(sock, SIZES[:trips] / CHUNKS, SIZES[:cap] / CHUNKS)
  t2 = now
  c2 = counts.sum
  stop = true
  hogs.each(&:join)
  [c1 - c0, t1 - t0, c2 - c1, t2 - t1, trips, secs].each_with_index { |v, k| acc[k] += v }
end

def convoy
  sock, pid = echo_pair
  alone = [0, 0.0]
  one = [0] * 6
  two = [0] * 6
  CHUNKS.times do
    trips, secs = io_trips(sock, SIZES[:trips] / CHUNKS, 60)
    alone[0] += trips
    alone[1] += secs
    convoy_chunk(sock, 1, one)
    convoy_chunk(sock, 2, two)
  end
  a = alone[1] / alone[0]
  [[1, one], [2, two]].each do |n, acc|
    solo = acc[0] / acc[1]
    busy = acc[2] / acc[3]
    result('convoy', "io_ratio_#{n}hog", acc[5] / acc[4] / a)
    result('convoy', "hog_pct_#{n}hog", solo.positive? ? busy / solo * 100 : 0)
  end
  result('convoy', 'io_us_alone', a * 1e6)
  result('convoy', 'trips_1hog', one[4])
  result('convoy', 'trips_2hog', two[4])
  sock.close
  Process.wait(pid)
end

puts "INFO variant #{VARIANT} outside anchor: #{RUBY_DESCRIPTION}"
$stdout.flush
cases = {
  'thread_pass' => -> { thread_pass(SIZES[:passes]) },
  'pipe' => -> { pipe_case(SIZES[:trips]) },
  'mutex_10' => -> { mutex_case(10, SIZES[:mutex_ops]) },
  'mutex_100' => -> { mutex_case(100, SIZES[:mutex_ops]) },
  'busy_flag' => -> { busy_flag },
  'wakeup' => -> { wakeup },
  'convoy' => -> { convoy }
}
cases.each do |name, fn|
  t0 = now
  RUNS.times { |r| fn.call; puts "DONE #{name} #{VARIANT} #{r + 1}" }
  warn format('[ruby] %-12s %d run(s) done in %.1f s', name, RUNS, now - t0)
end
