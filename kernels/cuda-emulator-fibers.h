/* cuda-emulator-fibers.h — the CUDA emulator's threads: a block's CUDA
 * threads as fibers on the calling thread (cuda-emulator-fibers.c), compiled
 * once into the library. A module's generated code (behind
 * cuda-emulator-device.h, compiled per module) reaches it through the table
 * below, which the emulator hands to the module's pl_emu_bind when it loads
 * it; the device header declares the same struct, field for field. Keeping
 * the machinery out of the modules is what keeps a module's compile short.
 */
#pragma once

typedef struct {
  unsigned x, y, z;
} PlEmuDim3;

/* a shuffle's operand, then its result */
typedef union {
  float     f;
  double    d;
  long long i;
  int       n;
} PlEmuValue;

enum { PL_EMU_RUNNING, PL_EMU_AT_SYNC, PL_EMU_AT_SHUFFLE, PL_EMU_AT_GRID, PL_EMU_DONE };

typedef struct {
  unsigned    size;   /* sizeof (PlEmuRuntime): a module built for another table refuses it */
  PlEmuDim3  *thread_idx, *block_idx, *block_dim, *grid_dim;
  char      **dynamic_shared;   /* the running block's dynamic shared memory */
  void      (*yield) (int state);   /* __syncthreads (PL_EMU_AT_SYNC), a grid barrier (PL_EMU_AT_GRID) */
  void      (*shuffle) (PlEmuValue *v, int lane_mask);   /* __shfl_xor_sync: v in, the partner's value out */
  /* dims: grid x, y, z, block x, y, z, cooperative; body (params) is one
   * thread. Returns 0, or -1 with err filled. */
  int       (*launch) (const unsigned *dims, unsigned shared_bytes, void **params, void (*body) (void **),
                       char *err, int err_len);
} PlEmuRuntime;

const PlEmuRuntime *pl_cuda_emulator_runtime (void);
