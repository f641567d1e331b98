/* cuda-emulator-fibers.c — a CUDA block's threads as fibers (see
 * cuda-emulator-device.h for the model): each thread has its own stack
 * (ucontext starts it, _setjmp / _longjmp switch, no system call); a
 * block's fibers run on the calling thread, one warp at a time, each until
 * a warp shuffle, __syncthreads or its end:
 *  - when every thread of a warp waits at a shuffle, the values are
 *    exchanged and the warp goes on;
 *  - when every thread of the block waits at __syncthreads, the block goes on;
 *  - anything else (a shuffle that part of a warp skipped, a barrier some
 *    threads skipped by returning) is an error of the launch: on a GPU it
 *    would be undefined behaviour.
 * Blocks run one after another; a cooperative launch keeps every block's
 * threads alive, runs the blocks in turn up to the grid barrier, then lets
 * all go on.
 *
 * One launch at a time in the process (the fibers, the scheduler and the
 * thread indices are shared): launches take a lock.
 */
#undef _FORTIFY_SOURCE   /* the fortified longjmp refuses to jump between stacks */
#define G_LOG_DOMAIN "passlab"
#include "cuda-emulator-fibers.h"

#include <glib.h>
#include <setjmp.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

typedef struct {
  jmp_buf    jb;
  ucontext_t uc;
  char      *stack;
  int        state;
  bool       started;
  PlEmuDim3  tid, bid;
  PlEmuValue value;    /* a shuffle's operand, then its result */
  int        offset;   /* the shuffle's lane mask */
} Fiber;

static const size_t stack_bytes = 256 * 1024;
static Fiber *fibers;
static int n_fibers;
static Fiber *current;
static jmp_buf scheduler;
static ucontext_t start_template;
static void (*body) (void **);
static void **params;
static PlEmuDim3 thread_idx, block_idx, block_dim, grid_dim;
static char *dynamic_shared;
static char *shared_pool;   /* every live block's dynamic shared memory */
static size_t shared_pool_bytes;
static const char *fault;

static void
trampoline (void)
{
  body (params);
  current->state = PL_EMU_DONE;
  _longjmp (scheduler, 1);
}

/* Back to the scheduler, waiting in state s. */
static void
yield (int s)
{
  Fiber *self = current;
  self->state = s;
  if (!_setjmp (self->jb))
    _longjmp (scheduler, 1);
  current = self;
}

static void
shuffle (PlEmuValue *v, int lane_mask)
{
  Fiber *self = current;
  self->value = *v;
  self->offset = lane_mask;
  yield (PL_EMU_AT_SHUFFLE);
  *v = self->value;
}

static void
resume (Fiber *f)
{
  current = f;
  thread_idx = f->tid;
  block_idx = f->bid;
  f->state = PL_EMU_RUNNING;
  if (_setjmp (scheduler))
    return;
  if (f->started)
    _longjmp (f->jb, 1);
  f->started = true;
  f->uc = start_template;
  f->uc.uc_stack.ss_sp = f->stack;
  f->uc.uc_stack.ss_size = stack_bytes;
  f->uc.uc_link = NULL;
  makecontext (&f->uc, trampoline, 0);
  setcontext (&f->uc);
}

/* Fibers for n threads; each stack has a guard page below it, so a thread
 * that overflows its stack stops with SIGSEGV instead of corrupting another. */
static bool
ensure_fibers (int n)
{
  if (n <= n_fibers)
    return true;
  Fiber *grown = realloc (fibers, sizeof (Fiber) * (size_t) n);
  if (!grown)
    return false;
  fibers = grown;
  long page = sysconf (_SC_PAGESIZE);
  for (int t = n_fibers; t < n; t++)
    {
      char *m = mmap (NULL, stack_bytes + (size_t) page, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0);
      if (m == MAP_FAILED)
        return false;
      mprotect (m, (size_t) page, PROT_NONE);
      fibers[t].stack = m + page;
      n_fibers = t + 1;
    }
  return true;
}

/* Exchanges the values of a warp (its n threads from ws) that all wait at a shuffle. */
static bool
exchange (Fiber *ws, int n)
{
  PlEmuValue v[32];
  for (int t = 0; t < n; t++)
    {
      if (ws[t].offset != ws[0].offset)
        {
          fault = "the threads of a warp shuffle with different lane masks";
          return false;
        }
      v[t] = ws[t].value;
    }
  for (int t = 0; t < n; t++)
    {
      int src = t ^ ws[t].offset;
      if (src < n)   /* a lane outside a partial warp: the thread keeps its own value */
        ws[t].value = v[src];
      ws[t].state = PL_EMU_RUNNING;
    }
  return true;
}

/* Runs the n threads of one block (fs) up to its end or a grid barrier.
 * Odd blocks run their warps, and the threads of each warp, in reverse
 * order: a kernel that reads another thread's write without a barrier
 * between them then reads the wrong value in one of the two orders, instead
 * of passing because of the order. Returns DONE, AT_GRID, or RUNNING with
 * fault set. */
static int
run_block (Fiber *fs, int n, bool reverse)
{
  for (;;)
    {
      for (int w = 0; w < (n + 31) / 32; w++)
        {
          int lo = (reverse ? (n + 31) / 32 - 1 - w : w) * 32, hi = lo + 32 < n ? lo + 32 : n;
          for (;;)
            {
              for (int i = 0; i < hi - lo; i++)
                {
                  Fiber *f = &fs[reverse ? hi - 1 - i : lo + i];
                  if (f->state == PL_EMU_RUNNING)
                    resume (f);
                }
              int shuffling = 0;
              for (int t = lo; t < hi; t++)
                shuffling += fs[t].state == PL_EMU_AT_SHUFFLE;
              if (shuffling == 0)
                break;
              if (shuffling != hi - lo)
                {
                  fault = "a warp shuffle that some threads of the warp did not reach";
                  return PL_EMU_RUNNING;
                }
              if (!exchange (fs + lo, hi - lo))
                return PL_EMU_RUNNING;
            }
        }
      int done = 0, grid = 0;
      for (int t = 0; t < n; t++)
        {
          done += fs[t].state == PL_EMU_DONE;
          grid += fs[t].state == PL_EMU_AT_GRID;
        }
      if (done == n)
        return PL_EMU_DONE;
      if (grid == n)
        return PL_EMU_AT_GRID;
      if (done > 0 || grid > 0)
        {
          fault = done > 0 ? "__syncthreads () reached by some threads of a block after others had returned"
                           : "a grid barrier that some threads of the block did not reach";
          return PL_EMU_RUNNING;
        }
      for (int t = 0; t < n; t++)
        fs[t].state = PL_EMU_RUNNING;
    }
}

static void
start_block (Fiber *fs, int n, PlEmuDim3 bid)
{
  for (int t = 0; t < n; t++)
    {
      fs[t].started = false;
      fs[t].state = PL_EMU_RUNNING;
      fs[t].bid = bid;
      fs[t].tid.x = (unsigned) t % block_dim.x;
      fs[t].tid.y = (unsigned) t / block_dim.x % block_dim.y;
      fs[t].tid.z = (unsigned) t / (block_dim.x * block_dim.y);
    }
}

/* The blocks one after another. */
static int
run_grid (int n, char *err, int err_len)
{
  dynamic_shared = shared_pool;
  for (unsigned z = 0; z < grid_dim.z; z++)
    for (unsigned y = 0; y < grid_dim.y; y++)
      for (unsigned x = 0; x < grid_dim.x; x++)
        {
          start_block (fibers, n, (PlEmuDim3) { x, y, z });
          int s = run_block (fibers, n, (x + y + z) % 2 == 1);
          if (s != PL_EMU_DONE)
            {
              snprintf (err, (size_t) err_len, "block (%u, %u, %u): %s", x, y, z,
                        s == PL_EMU_AT_GRID ? "a grid barrier in a launch that is not cooperative" : fault);
              return -1;
            }
        }
  return 0;
}

/* Every block alive, in turn up to each grid barrier. */
static int
run_cooperative (int n, int blocks, size_t per_block, char *err, int err_len)
{
  for (int b = 0; b < blocks; b++)
    start_block (fibers + b * n, n,
                 (PlEmuDim3) { b % grid_dim.x, b / grid_dim.x % grid_dim.y, b / (grid_dim.x * grid_dim.y) });
  for (;;)
    {
      int done = 0;
      for (int b = 0; b < blocks; b++)
        {
          Fiber *fs = fibers + b * n;
          if (fs[0].state == PL_EMU_DONE)
            {
              done++;
              continue;
            }
          dynamic_shared = shared_pool + per_block * (size_t) b;
          int s = run_block (fs, n, b % 2 == 1);
          if (s == PL_EMU_RUNNING)
            {
              snprintf (err, (size_t) err_len, "block %d: %s", b, fault);
              return -1;
            }
          done += s == PL_EMU_DONE;
        }
      if (done == blocks)
        return 0;
      if (done > 0)
        {
          snprintf (err, (size_t) err_len, "a grid barrier that %d of %d blocks returned without reaching", done,
                    blocks);
          return -1;
        }
      for (int t = 0; t < blocks * n; t++)   /* every block at the grid barrier: all go on */
        fibers[t].state = PL_EMU_RUNNING;
    }
}

static int
launch_locked (const unsigned *dims, unsigned shared_bytes, void **p, void (*k) (void **), char *err, int err_len)
{
  const int n = (int) (dims[3] * dims[4] * dims[5]);
  const bool cooperative = dims[6] != 0;
  const int blocks = (int) (dims[0] * dims[1] * dims[2]);
  if (n < 1 || n > 1024)
    {
      snprintf (err, (size_t) err_len, "a block of %d threads (1 to 1024)", n);
      return -1;
    }
  if (cooperative && (long) blocks * n > 65536)
    {
      snprintf (err, (size_t) err_len, "a cooperative grid of %d blocks of %d threads: more than the emulator keeps",
                blocks, n);
      return -1;
    }
  const int live = cooperative ? blocks : 1;   /* blocks whose threads are alive at once */
  if (!ensure_fibers (n * live))
    {
      snprintf (err, (size_t) err_len, "out of memory for %d thread stacks", n * live);
      return -1;
    }
  const size_t per_block = ((size_t) shared_bytes + 255) / 256 * 256;
  if (per_block * (size_t) live > shared_pool_bytes)
    {
      free (shared_pool);
      shared_pool = aligned_alloc (256, per_block * (size_t) live);
      shared_pool_bytes = shared_pool ? per_block * (size_t) live : 0;
      if (!shared_pool)
        {
          snprintf (err, (size_t) err_len, "out of memory for %u bytes of shared memory", shared_bytes);
          return -1;
        }
    }
  getcontext (&start_template);
  body = k;
  params = p;
  grid_dim = (PlEmuDim3) { dims[0], dims[1], dims[2] };
  block_dim = (PlEmuDim3) { dims[3], dims[4], dims[5] };
  return cooperative ? run_cooperative (n, blocks, per_block, err, err_len) : run_grid (n, err, err_len);
}

static int
launch (const unsigned *dims, unsigned shared_bytes, void **p, void (*k) (void **), char *err, int err_len)
{
  static GMutex lock;
  g_mutex_lock (&lock);
  int r = launch_locked (dims, shared_bytes, p, k, err, err_len);
  g_mutex_unlock (&lock);
  return r;
}

const PlEmuRuntime *
pl_cuda_emulator_runtime (void)
{
  static const PlEmuRuntime rt = {
    sizeof (PlEmuRuntime), &thread_idx, &block_idx, &block_dim, &grid_dim, &dynamic_shared, yield, shuffle, launch,
  };
  return &rt;
}
