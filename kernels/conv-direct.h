/* conv-direct.h — the generated direct convolution, per layout, tiled by the
 * red-blue pebble I/O bound (seed 003, MACO; DESIGN.md §1.4).
 *
 * The output is cut into tiles of x (width) * y (height) * z (output
 * channels) elements. For a tile the kernel walks the input channels one by
 * one (alpha = 1 in the seed) and accumulates, so a tile's working set is
 * its outputs plus one channel's input window plus z * Hk * Wk weights. The
 * pebble bound says the I/O is least when xy ~= R z (R = Hk*Wk/stride^2, the
 * reuse of one input element) and xyz ~= S / Np (S the fast memory, Np the
 * parallel units sharing it); pl_conv_pebble_tile solves the two.
 *
 * The C kernel takes the tile as run-time arguments (so the tuner compiles
 * once per layout and tries many tiles); the CUDA kernel bakes it in.
 * Bias is not added here: like the GEMM path, the conv's epilogue adds it.
 * Internal to kernels/.
 */
#pragma once

#include "cpu-machine.h"
#include "kernel-plan.h"

G_BEGIN_DECLS

/* 2-d convs of f32/f64, any stride, dilation, padding and group; the layouts
 * of c->x_layout / c->y_layout, which must be the same. false with *why
 * (g_free) otherwise. */
bool    pl_conv_direct_supported   (const PlConvDesc *c, char **why);
/* The weights in the order the direct kernel reads them: elements needed
 * (with a few zeros after them) and the packing from ONNX's
 * [C_out, C_in/group, Hk, Wk] into [group][C_in/group][Hk][Wk][C_out/group]. */
int64_t pl_conv_direct_packed_size (const PlConvDesc *c);
void    pl_conv_direct_pack        (const PlConvDesc *c, const void *w_oihw, void *packed);
/* Appends to out a C function
 *   void <name> (const T *x, const T *wp, T *y, int64_t tx, int64_t ty, int64_t tz)
 * (T float or double; wp packed; x and y in their layouts; OpenMP over tiles). */
void    pl_conv_direct_emit_c      (GString *out, const PlConvDesc *c, const char *name);
/* Appends a CUDA kernel  extern "C" __global__ void <name> (const T *x, const T *wp, T *y)
 * for the tile in c->tile (0s: the pebble tile for a block), cut down where
 * needed to 48 KiB of shared memory, z <= 64 and 4 points a thread; grid
 * (x: tiles of the image, y: group x z tiles, z: images) and block (1-d)
 * receive its launch dimensions. */
void    pl_conv_direct_emit_cuda   (GString *out, const PlConvDesc *c, const char *name,
                                    unsigned grid[3], unsigned block[3]);
/* conv-tile.c: the tile from the pebble rule for fast memory of fast_mem_bytes per parallel
 * unit, n_parallel units and cache lines of line_elems elements (1: words
 * cost alike; see pebble_r in conv-direct.c), clamped to the output (each
 * entry >= 1). */
void    pl_conv_pebble_tile        (const PlConvDesc *c, int64_t fast_mem_bytes, int n_parallel, int64_t line_elems,
                                    int64_t tile[3]);
/* The rule's two terms: *S, the fast memory of one parallel unit in tile
 * elements (the seed's S/Np; see conv-direct.c), and *R, the reuse of one
 * input element, Hk*Wk/(sh*sw), over an NHWC input element's cost in lines.
 * The tuner prunes its space with them. */
void    pl_conv_pebble_terms       (const PlConvDesc *c, int64_t fast_mem_bytes, int n_parallel, int64_t line_elems,
                                    double *S, double *R);
/* The same for this CPU (its L2 per core, its cache line) and n_parallel
 * threads (<= 0: OpenMP's team). */
void    pl_conv_cpu_pebble_tile    (const PlConvDesc *c, int n_parallel, int64_t tile[3]);
void    pl_conv_cpu_pebble_terms   (const PlConvDesc *c, int n_parallel, double *S, double *R);
/* A hash of the C source pl_conv_direct_emit_c writes for c: which kernel
 * a measurement timed (a changed generator or vector width changes it). */
guint32 pl_conv_direct_source_hash (const PlConvDesc *c);
/* A depthwise conv in NHWC (one input and one output channel a group): its
 * own C kernel, with vectors along the channels (the generic one would run
 * along the one output channel of a group, a vector of one), and its own
 * tile (conv-tile.c). */
bool    pl_conv_direct_nhwc_depthwise (const PlConvDesc *c);
/* A grouped conv in NHWC with small groups (as many output as input
 * channels a group, 2 or more, fewer than a vector holds and dividing it;
 * ResNeXt's 4 and 8): its own C kernel, with vectors along the channels of
 * several groups, each input lane broadcast within its group by a shuffle
 * (the generic one would run along a group's 4 or 8 output channels,
 * three quarters or half of each vector idle), and the depthwise kernel's
 * tile. Not 1x1 ones (the pointwise kernel's). */
bool    pl_conv_direct_nhwc_grouped (const PlConvDesc *c);
/* A pointwise conv in NHWC (1x1, no padding, any stride and group): its
 * own C kernel, a GEMM of the points' input rows read in place (the
 * generic one stages every input channel with a gather). */
bool    pl_conv_direct_nhwc_pointwise (const PlConvDesc *c);
/* A pointwise conv in CHWN (1x1, no padding, any stride and group, an
 * output image of at least a vector's elements: OH OW N): its own C kernel,
 * a GEMM of the weights by x's rows of (h, w, n), read in place at stride 1
 * and staged a tile at a time otherwise (the generic one stages each
 * channel's window and keeps its accumulators in memory). */
bool    pl_conv_direct_chwn_pointwise (const PlConvDesc *c);
/* Input channels the generic C kernel stages and accumulates in one pass
 * over a tile (ceil (32 / taps), at most the group's). */
int64_t pl_conv_direct_channels_per_pass (const PlConvDesc *c);
/* Elements a tile of the C kernel keeps in use while it takes one step of
 * input channels: its accumulators, the staged windows and the weights of
 * the step (as the generated code sizes them). */
int64_t pl_conv_direct_working_set (const PlConvDesc *c, const int64_t tile[3]);

G_END_DECLS
