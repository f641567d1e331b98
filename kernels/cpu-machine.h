/* cpu-machine.h — what the cpu backend needs to know about this machine: the
 * fast memory a core owns and the cores (for the pebble tile, seed 003), and
 * the time the hypervisor took from our CPUs (for honest benchmarks on a
 * shared virtual machine). Read from sysfs and procfs; each has a fallback.
 * Internal to kernels/ and the CLI.
 */
#pragma once

#include <glib.h>
#include <stdint.h>

G_BEGIN_DECLS

/* This machine's per-core fast memory (L2, from sysfs, divided among the
 * CPUs that share it; 1 MiB if unknown) and OpenMP's team size. */
int64_t pl_cpu_fast_memory_bytes (void);
int     pl_cpu_parallel_units    (void);
/* The level-1 data cache of a core (sysfs; 32 KiB if unknown) and the
 * cache line (64 bytes if unknown). */
int64_t pl_cpu_l1_bytes          (void);
int64_t pl_cpu_line_bytes        (void);
/* The largest cache of cpu0, whole (the last level; 8 MiB if unknown). */
int64_t pl_cpu_last_level_cache_bytes (void);
/* Steal time: milliseconds the hypervisor ran something else while one of
 * our virtual CPUs wanted to run, summed over the CPUs, since boot (the
 * `steal` column of /proc/stat; 10 ms resolution). -1 where procfs does not
 * say (not Linux, or no paravirtual clock). Two readings around a run give
 * the CPU time the run lost to other tenants: a compute-bound parallel run
 * waits for its slowest thread, so a little steal makes it much slower. */
double  pl_cpu_steal_ms          (void);
/* The CPU time other processes of this machine have used since boot, in
 * milliseconds: the busy columns of /proc/stat (user, nice, system, irq,
 * softirq; 10 ms resolution) less this process's own CPU time (getrusage,
 * all threads). -1 where procfs does not say. Two readings around a run
 * give the time a compiler or a test beside us took from our cores, which
 * steal time does not see. */
double  pl_cpu_others_ms         (void);

G_END_DECLS
