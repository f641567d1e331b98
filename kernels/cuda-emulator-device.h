/* cuda-emulator-device.h — CUDA's device side on the CPU, for the CUDA
 * emulator (cuda-emulator.c). Not part of the C build: it is embedded in the
 * library (kernels.gresource.xml), put in front of a module's generated
 * CUDA C, and the whole is compiled by the system C++ compiler into a shared
 * object, so the kernels passlab generates for a GPU run, unchanged, on a
 * machine without one. What it is for: checking results (the tests compare
 * them with the reference interpreter), never timing.
 *
 * A CUDA thread is a fiber; the fibers' scheduler is compiled once into the
 * library (cuda-emulator-fibers.c, which says how it runs them), and the
 * module reaches it through the table the emulator passes to pl_emu_bind
 * when it loads the module: the module itself holds only its kernels.
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
/* C's math.h, not libstdc++'s wrapper: <cmath>'s overloads and templates
 * cost each module 0.1 s of its 0.2 s compile, and the generated code names
 * each function's float form (expf) itself */
#define _GLIBCXX_INCLUDE_NEXT_C_HEADERS
#include <math.h>
#undef _GLIBCXX_INCLUDE_NEXT_C_HEADERS
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <utility>

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __shared__ static

struct dim3 { unsigned x, y, z; };

namespace pl_emu {

/* cuda-emulator-fibers.h's PlEmuRuntime and PlEmuValue, field for field */
union Value { float f; double d; long long i; int n; };
enum State { RUNNING, AT_SYNC, AT_SHUFFLE, AT_GRID, DONE };
struct Runtime {
  unsigned size;
  dim3 *thread_idx, *block_idx, *block_dim, *grid_dim;
  char **dynamic_shared;
  void (*yield) (int state);
  void (*shuffle) (Value *v, int lane_mask);
  int (*launch) (const unsigned *dims, unsigned shared_bytes, void **params, void (*body) (void **), char *err,
                 int err_len);
};

static const Runtime *rt;

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
shuffle (T v, int lane_mask, T Value::*field)
{
  Value x;
  x.*field = v;
  rt->shuffle (&x, lane_mask);
  return x.*field;
}

static inline void grid_sync (void) { rt->yield (AT_GRID); }

}   /* namespace pl_emu */

extern "C" int
pl_emu_bind (const pl_emu::Runtime *runtime)
{
  if (runtime->size != sizeof (pl_emu::Runtime))
    return -1;
  pl_emu::rt = runtime;
  return 0;
}

#define threadIdx (*pl_emu::rt->thread_idx)
#define blockIdx (*pl_emu::rt->block_idx)
#define blockDim (*pl_emu::rt->block_dim)
#define gridDim (*pl_emu::rt->grid_dim)

static inline float __int_as_float (int i) { float f; memcpy (&f, &i, 4); return f; }
static inline int __float_as_int (float f) { int i; memcpy (&i, &f, 4); return i; }
static inline double __longlong_as_double (long long i) { double d; memcpy (&d, &i, 8); return d; }
static inline long long __double_as_longlong (double d) { long long i; memcpy (&i, &d, 8); return i; }
static inline float rsqrtf (float x) { return 1.0f / sqrtf (x); }
static inline double rsqrt (double x) { return 1.0 / sqrt (x); }

static inline void __syncthreads (void) { pl_emu::rt->yield (pl_emu::AT_SYNC); }
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

/* the running block's dynamic shared memory (extern __shared__ arrays point here) */
#define PL_EMU_DYNAMIC_SHARED (*pl_emu::rt->dynamic_shared)

#define PL_EMU_ENTRY(name) \
  extern "C" int pl_emu_entry_##name (const unsigned *dims, unsigned shared, void **p, char *err, int err_len) \
  { return pl_emu::rt->launch (dims, shared, p, &pl_emu::entry<name>, err, err_len); }

/* --- the generated module follows ------------------------------------------------ */
