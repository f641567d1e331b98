/* cuda-emulator-device.h — CUDA's device side on the CPU, for the CUDA
 * emulator (cuda-emulator.c). Not part of the C build: it is embedded in the
 * library (kernels.gresource.xml), put in front of a module's generated
 * CUDA C, and the whole is compiled by the system C++ compiler into a shared
 * object, so the kernels passlab generates for a GPU run, unchanged, on a
 * machine without one. What it is for: checking results (the tests compare
 * them with the reference interpreter), never timing.
 *
 * A CUDA thread is a fiber (its own stack; ucontext to start it, _setjmp /
 * _longjmp to switch, which needs no system call). A block's fibers run on
 * the calling thread, one warp at a time, each until it reaches a warp
 * shuffle, __syncthreads or its end:
 *  - when every thread of a warp waits at a shuffle, the values are
 *    exchanged and the warp goes on;
 *  - when every thread of the block waits at __syncthreads, the block goes
 *    on;
 *  - anything else (a shuffle that part of a warp skipped, a barrier some
 *    threads skipped by returning) is reported as an error of the launch:
 *    on a GPU it would be undefined behaviour.
 * Blocks run one after another, so a __shared__ variable is a static one.
 * A cooperative launch (cuLaunchCooperativeKernel: the kernel synchronizes
 * the whole grid, pl_grid_sync) keeps every block's threads alive: blocks
 * run in turn up to the grid barrier, then all go on; each block has its
 * own dynamic shared memory, while a static __shared__ variable must not
 * hold a value across a grid barrier (the generated kernels' do not).
 * The generated code's own prelude skips its fixed-width typedefs when
 * PL_CUDA_EMULATOR is defined (the C library's are used).
 */
#define PL_CUDA_EMULATOR 1
#include <math.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>
#include <utility>

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __shared__ static

struct dim3 { unsigned x, y, z; };
static dim3 threadIdx, blockIdx, blockDim, gridDim;

static inline float __int_as_float (int i) { float f; memcpy (&f, &i, 4); return f; }
static inline int __float_as_int (float f) { int i; memcpy (&i, &f, 4); return i; }
static inline double __longlong_as_double (long long i) { double d; memcpy (&d, &i, 8); return d; }
static inline long long __double_as_longlong (double d) { long long i; memcpy (&i, &d, 8); return i; }
static inline float rsqrtf (float x) { return 1.0f / sqrtf (x); }
static inline double rsqrt (double x) { return 1.0 / sqrt (x); }

namespace pl_emu {

enum State { RUNNING, AT_SYNC, AT_SHUFFLE, AT_GRID, DONE };

union Value { float f; double d; long long i; int n; };

struct Fiber {
  jmp_buf    jb;
  ucontext_t uc;
  char      *stack;
  State      state;
  bool       started;
  dim3       tid, bid;
  Value      value;     /* a shuffle's operand, then its result */
  int        offset;    /* the shuffle's lane mask */
};

static const size_t stack_bytes = 256 * 1024;
static Fiber *fibers;
static int n_fibers;
static Fiber *current;
static jmp_buf scheduler;
static ucontext_t start_template;
static void (*body) (void **);
static void **params;
static char *dynamic_shared;        /* the running block's: a kernel reads it when its threads start */
static char *shared_pool;           /* every block's dynamic shared memory */
static size_t shared_pool_bytes;
static const char *fault;

static void
trampoline (void)
{
  body (params);
  current->state = DONE;
  _longjmp (scheduler, 1);
}

/* Back to the scheduler, waiting in state s. */
static void
yield (State s)
{
  Fiber *self = current;
  self->state = s;
  if (!_setjmp (self->jb))
    _longjmp (scheduler, 1);
  current = self;
}

static void
resume (Fiber *f)
{
  current = f;
  threadIdx = f->tid;
  blockIdx = f->bid;
  f->state = RUNNING;
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
  Fiber *grown = (Fiber *) realloc (fibers, sizeof (Fiber) * (size_t) n);
  if (!grown)
    return false;
  fibers = grown;
  long page = sysconf (_SC_PAGESIZE);
  for (int t = n_fibers; t < n; t++)
    {
      char *m = (char *) mmap (NULL, stack_bytes + (size_t) page, PROT_READ | PROT_WRITE,
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
  Value v[32];
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
      ws[t].state = RUNNING;
    }
  return true;
}

/* Runs the n threads of one block (fs) up to its end or a grid barrier.
 * Odd blocks run their warps, and the threads of each warp, in reverse
 * order: a kernel that reads another thread's write without a barrier
 * between them then reads the wrong value in one of the two orders, instead
 * of passing because of the order. Returns DONE, AT_GRID, or RUNNING with
 * fault set. */
static State
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
                  if (f->state == RUNNING)
                    resume (f);
                }
              int shuffling = 0;
              for (int t = lo; t < hi; t++)
                shuffling += fs[t].state == AT_SHUFFLE;
              if (shuffling == 0)
                break;
              if (shuffling != hi - lo)
                {
                  fault = "a warp shuffle that some threads of the warp did not reach";
                  return RUNNING;
                }
              if (!exchange (fs + lo, hi - lo))
                return RUNNING;
            }
        }
      int done = 0, grid = 0;
      for (int t = 0; t < n; t++)
        {
          done += fs[t].state == DONE;
          grid += fs[t].state == AT_GRID;
        }
      if (done == n)
        return DONE;
      if (grid == n)
        return AT_GRID;
      if (done > 0 || grid > 0)
        {
          fault = done > 0 ? "__syncthreads () reached by some threads of a block after others had returned"
                           : "a grid barrier that some threads of the block did not reach";
          return RUNNING;
        }
      for (int t = 0; t < n; t++)
        fs[t].state = RUNNING;
    }
}

static void
start_block (Fiber *fs, int n, dim3 bid)
{
  for (int t = 0; t < n; t++)
    {
      fs[t].started = false;
      fs[t].state = RUNNING;
      fs[t].bid = bid;
      fs[t].tid.x = (unsigned) t % blockDim.x;
      fs[t].tid.y = (unsigned) t / blockDim.x % blockDim.y;
      fs[t].tid.z = (unsigned) t / (blockDim.x * blockDim.y);
    }
}

/* dims: grid x, y, z, block x, y, z, cooperative. Returns 0, or -1 with err filled. */
static int
launch (const unsigned *dims, unsigned shared_bytes, void **p, void (*k) (void **), char *err, int err_len)
{
  int n = (int) (dims[3] * dims[4] * dims[5]);
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
      shared_pool = (char *) aligned_alloc (256, per_block * (size_t) live);
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
  gridDim = { dims[0], dims[1], dims[2] };
  blockDim = { dims[3], dims[4], dims[5] };
  if (!cooperative)
    {
      dynamic_shared = shared_pool;
      for (unsigned z = 0; z < gridDim.z; z++)
        for (unsigned y = 0; y < gridDim.y; y++)
          for (unsigned x = 0; x < gridDim.x; x++)
            {
              start_block (fibers, n, { x, y, z });
              State s = run_block (fibers, n, (x + y + z) % 2 == 1);
              if (s != DONE)
                {
                  snprintf (err, (size_t) err_len, "block (%u, %u, %u): %s", x, y, z,
                            s == AT_GRID ? "a grid barrier in a launch that is not cooperative" : fault);
                  return -1;
                }
            }
      return 0;
    }
  for (int b = 0; b < blocks; b++)
    start_block (fibers + b * n, n, { b % dims[0], b / dims[0] % dims[1], b / (dims[0] * dims[1]) });
  for (;;)
    {
      int done = 0, grid = 0;
      for (int b = 0; b < blocks; b++)
        {
          Fiber *fs = fibers + b * n;
          if (fs[0].state == DONE)
            {
              done++;
              continue;
            }
          dynamic_shared = shared_pool + per_block * (size_t) b;
          State s = run_block (fs, n, b % 2 == 1);
          if (s == RUNNING)
            {
              snprintf (err, (size_t) err_len, "block %d: %s", b, fault);
              return -1;
            }
          done += s == DONE;
          grid += s == AT_GRID;
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
        fibers[t].state = RUNNING;
    }
}

static void
grid_sync (void)
{
  yield (AT_GRID);
}

template <typename... A, size_t... I>
static void
invoke (void (*k) (A...), void **p, std::index_sequence<I...>)
{
  k (*static_cast<A *> (p[I])...);
}

template <typename... A>
static void
invoke (void (*k) (A...), void **p)
{
  invoke (k, p, std::index_sequence_for<A...> {});
}

/* A kernel of any signature, called with its arguments from cuLaunchKernel's array. */
template <auto K>
static void
entry (void **p)
{
  invoke (K, p);
}

template <typename T>
static T
shuffle (T v, int offset, T Value::*field)
{
  Fiber *self = current;
  self->value.*field = v;
  self->offset = offset;
  yield (AT_SHUFFLE);
  return self->value.*field;
}

}   /* namespace pl_emu */

static inline void __syncthreads (void) { pl_emu::yield (pl_emu::AT_SYNC); }
static inline void __threadfence (void) {}
/* Fibers switch only at shuffles, barriers and ends: a plain read-modify-write is atomic. */
static inline unsigned long long atomicCAS (unsigned long long *a, unsigned long long cmp, unsigned long long v)
{
  unsigned long long old = *a;
  if (old == cmp)
    *a = v;
  return old;
}
static inline float __shfl_xor_sync (unsigned, float v, int o) { return pl_emu::shuffle (v, o, &pl_emu::Value::f); }
static inline double __shfl_xor_sync (unsigned, double v, int o) { return pl_emu::shuffle (v, o, &pl_emu::Value::d); }
static inline long long __shfl_xor_sync (unsigned, long long v, int o) { return pl_emu::shuffle (v, o, &pl_emu::Value::i); }
static inline int __shfl_xor_sync (unsigned, int v, int o) { return pl_emu::shuffle (v, o, &pl_emu::Value::n); }

#define PL_EMU_ENTRY(name) \
  extern "C" int pl_emu_entry_##name (const unsigned *dims, unsigned shared, void **p, char *err, int err_len) \
  { return pl_emu::launch (dims, shared, p, &pl_emu::entry<name>, err, err_len); }

/* --- the generated module follows ------------------------------------------------ */
