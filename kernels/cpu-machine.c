/* cpu-machine.c — facts about this machine (see cpu-machine.h). */
#define G_LOG_DOMAIN "passlab"
#include "cpu-machine.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

static char *
read_sysfs (const char *dir, const char *file)
{
  g_autofree char *path = g_build_filename (dir, file, NULL);
  char *text = NULL;
  if (!g_file_get_contents (path, &text, NULL, NULL))
    return NULL;
  return g_strstrip (text);
}

/* The number of CPUs in a list like "0-3,8". */
static int
cpu_list_count (const char *list)
{
  int n = 0;
  g_auto (GStrv) parts = g_strsplit (list, ",", -1);
  for (int i = 0; parts[i]; i++)
    {
      int a, b;
      if (sscanf (parts[i], "%d-%d", &a, &b) == 2 && b >= a)
        n += b - a + 1;
      else if (sscanf (parts[i], "%d", &a) == 1)
        n++;
    }
  return n;
}

/* sysfs's cache sizes: "48K", "2048K", "105M". */
static int64_t
parse_size (const char *text)
{
  char *end = NULL;
  int64_t v = g_ascii_strtoll (text, &end, 10);
  if (end && (*end == 'K' || *end == 'k'))
    v <<= 10;
  else if (end && *end == 'M')
    v <<= 20;
  return v;
}

/* A data (or unified) cache of cpu0 at `level`, from sysfs: its size divided
 * among the CPUs that share it (so two hyperthreads of a core get half each)
 * and its line size; fallback when sysfs says nothing. */
static void
read_cache (const char *level_wanted, int64_t fallback, int64_t *bytes, int64_t *line)
{
  *bytes = fallback;
  *line = 64;
  for (int i = 0; i < 8; i++)
    {
      g_autofree char *dir = g_strdup_printf ("/sys/devices/system/cpu/cpu0/cache/index%d", i);
      g_autofree char *level = read_sysfs (dir, "level");
      g_autofree char *type = read_sysfs (dir, "type");
      g_autofree char *size = read_sysfs (dir, "size");
      g_autofree char *shared = read_sysfs (dir, "shared_cpu_list");
      g_autofree char *line_size = read_sysfs (dir, "coherency_line_size");
      if (!level || !size || strcmp (level, level_wanted) != 0 || (type && strcmp (type, "Instruction") == 0))
        continue;
      int64_t v = parse_size (size);
      int sharers = shared ? cpu_list_count (shared) : 1;
      if (v > 0)
        *bytes = v / MAX (sharers, 1);
      int64_t l = line_size ? g_ascii_strtoll (line_size, NULL, 10) : 0;
      if (l >= 8 && l <= 1024)
        *line = l;
      return;
    }
}

/* The caches, read once. */
typedef struct {
  int64_t l1, l2, line, largest;
} Caches;

static const Caches *
caches (void)
{
  static Caches c;
  static gsize done;
  if (g_once_init_enter (&done))
    {
      int64_t line2;
      read_cache ("1", 32 << 10, &c.l1, &c.line);
      read_cache ("2", 1 << 20, &c.l2, &line2);
      for (int i = 0; i < 8; i++)
        {
          g_autofree char *dir = g_strdup_printf ("/sys/devices/system/cpu/cpu0/cache/index%d", i);
          g_autofree char *size = read_sysfs (dir, "size");
          if (!size)
            break;
          c.largest = MAX (c.largest, parse_size (size));
        }
      if (c.largest <= 0)
        c.largest = (int64_t) 8 << 20;
      g_once_init_leave (&done, 1);
    }
  return &c;
}

int64_t
pl_cpu_fast_memory_bytes (void)
{
  return caches ()->l2;
}

int64_t
pl_cpu_l1_bytes (void)
{
  return caches ()->l1;
}

int64_t
pl_cpu_line_bytes (void)
{
  return caches ()->line;
}

int64_t
pl_cpu_last_level_cache_bytes (void)
{
  return caches ()->largest;
}

/* OpenMP's team size: OMP_NUM_THREADS's first entry when set, else the CPUs. */
int
pl_cpu_parallel_units (void)
{
  const char *env = g_getenv ("OMP_NUM_THREADS");
  if (env && *env)
    {
      int64_t n = g_ascii_strtoll (env, NULL, 10);
      if (n > 0 && n < 65536)
        return (int) n;
    }
  return (int) g_get_num_processors ();
}


/* The first n numbers of /proc/stat's aggregate `cpu` line (USER_HZ ticks:
 * user nice system idle iowait irq softirq steal ...) in milliseconds;
 * false where procfs does not say. */
static bool
proc_stat_cpu_ms (double *ms, int n)
{
  FILE *f = fopen ("/proc/stat", "r");
  if (!f)
    return false;
  unsigned long long v[8] = { 0 };
  int got = fscanf (f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5],
                    &v[6], &v[7]);
  fclose (f);
  long hz = sysconf (_SC_CLK_TCK);
  if (got < n || hz <= 0)
    return false;
  for (int k = 0; k < n; k++)
    ms[k] = (double) v[k] * 1000.0 / (double) hz;
  return true;
}

double
pl_cpu_steal_ms (void)
{
  double ms[8];
  return proc_stat_cpu_ms (ms, 8) ? ms[7] : -1;
}

double
pl_cpu_others_ms (void)
{
  double ms[7];
  struct rusage ru;
  if (!proc_stat_cpu_ms (ms, 7) || getrusage (RUSAGE_SELF, &ru) != 0)
    return -1;
  double busy = ms[0] + ms[1] + ms[2] + ms[5] + ms[6];
  double self = (double) (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000.0 +
                (double) (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1000.0;
  return busy - self;
}
