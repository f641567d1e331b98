/* pool.h — generated pooling kernels, per layout (seed 003, MACO; DESIGN.md
 * §1.4, issue #7: "kernels generated for each layout a conv or pooling op
 * supports").
 *
 * MaxPool (its Indices output unused), AveragePool, GlobalAveragePool and
 * GlobalMaxPool of f32/f64 with static shapes, 1 to 3 spatial dims (other
 * layouts than NCHW: 2-d, as layout.h allows). The semantics are those of
 * the reference (core/ops-conv.c): a max ignores padded cells (the first
 * cell inside the window starts it, so a NaN there wins as it does there; a
 * window with no cell inside is -inf), an average divides by the cells
 * inside the window, or with count_include_pad by those plus its pad cells
 * (never the cells past the end pad that ceil_mode may add). ceil_mode and
 * auto_pad are taken from the output shape already inferred and the pads
 * they resolve to.
 *
 * The C kernel runs an OpenMP-parallel loop over the output dims but the
 * one that is innermost in the layout, and a `omp simd` loop over that one:
 * NCHW the output width (split at generation time into the edges, whose
 * windows are clipped per point, and the interior, whose windows are
 * whole), NHWC the channels, CHWN the batch — so the vector lanes read
 * contiguous input. Every element is addressed through the layout's strides
 * (pl_layout_strides). Global pools in NCHW reduce each contiguous plane
 * with `omp simd reduction`. The CUDA kernel: one thread per output
 * element, threads in Y's memory order.
 * Internal to kernels/.
 */
#pragma once

#include "graph.h"

G_BEGIN_DECLS

#define PL_POOL_MAX_SPATIAL 3

typedef enum {
  PL_POOL_MAX,
  PL_POOL_AVERAGE,
} PlPoolKind;

typedef struct {
  PlPoolKind kind;
  PlDType    dtype;              /* f32 or f64 */
  bool       global;             /* GlobalAveragePool / GlobalMaxPool: the window is the whole plane */
  int        n;                  /* spatial dims, 1 to 3 */
  int64_t    batch, channels;
  int64_t    in[PL_POOL_MAX_SPATIAL], out[PL_POOL_MAX_SPATIAL];
  int64_t    kernel[PL_POOL_MAX_SPATIAL], strides[PL_POOL_MAX_SPATIAL], dilations[PL_POOL_MAX_SPATIAL];
  int64_t    pads[2 * PL_POOL_MAX_SPATIAL];   /* begins, then ends (auto_pad resolved) */
  bool       count_include_pad;  /* AveragePool */
  PlLayout   layout;             /* of X and Y (the same) */
} PlPoolDesc;

/* MaxPool, AveragePool, GlobalAveragePool or GlobalMaxPool: what this file generates. */
bool        pl_pool_is_op          (PlOp op);
/* Fills d from a pooling node with static shapes. false with *why (g_free)
 * when it cannot be generated (another op, dtype or rank, MaxPool's Indices
 * used, X and Y in different layouts). */
bool        pl_pool_desc_from_node (const PlNode *node, PlPoolDesc *d, char **why);
/* "maxpool 3x3/2 NHWC", "avgpool 2x2/2 pad-counted NCHW", "global avgpool NHWC" */
char       *pl_pool_describe       (const PlPoolDesc *d);
/* Output elements times window taps (the comparisons or additions). */
int64_t     pl_pool_flops          (const PlPoolDesc *d);
/* Bytes read and written: X once, Y once. */
int64_t     pl_pool_bytes          (const PlPoolDesc *d);
/* The ONNX op of d and the attributes that give a node d's window with
 * explicit pads (ceil_mode where d's output needs it): how the calibration
 * rebuilds a pool it measures. */
const char *pl_pool_op_type        (const PlPoolDesc *d);
void        pl_pool_set_attrs      (const PlPoolDesc *d, PlNode *node);
/* Appends  void <name> (void *const *args)  (args[0] X, args[1] Y, in d->layout). */
void        pl_pool_emit_c         (GString *out, const PlPoolDesc *d, const char *name);
/* Appends  extern "C" __global__ void <name> (const T *x, T *y, void *unused)
 * (the parameters of a loop kernel with one input and one output), one
 * thread per output element; *block and *grid receive its launch. */
void        pl_pool_emit_cuda      (GString *out, const PlPoolDesc *d, const char *name, int n_sms, int *block,
                                    int64_t *grid);

G_END_DECLS
