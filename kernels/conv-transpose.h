/* conv-transpose.h — the generated half of a ConvTranspose (a CONV plan
 * with conv.transpose, kernel-plan.h): col2im, which turns the column
 * matrix a GEMM made into Y. See conv-transpose.c for the method.
 *
 * X is [N, C, D...], W [C, M/g, k...] (ONNX), Y [N, M, O...], all NCHW.
 * Per image and group g the GEMM makes
 *   cols_g[(M/g) * prod k][prod D] = W_g^T X_g
 * (W_g, X_g: the group's C/g rows of W and channels of X), and input
 * position i through kernel tap k adds cols_g[(m, k)][i] to output position
 * o = i * stride - pad_begin + k * dilation of channel g * M/g + m.
 * Bias is not added here: like the conv's, the epilogue adds it.
 * Internal to kernels/.
 */
#pragma once

#include "kernel-plan.h"

G_BEGIN_DECLS

/* Appends to out a C function
 *   void <name> (const T *col, T *y, int64_t n, int64_t g)
 * that adds the column matrix of (image n / chunks, chunk n % chunks) of
 * group g into Y — a chunk being pl_cpu_conv_nchw_rows (c) rows of the
 * outermost input dim, the matrix's columns those rows' positions — after
 * zeroing the group's channels of the image at chunk 0. OpenMP over the
 * group's output channels: no two threads add to one element. */
void    pl_conv_transpose_emit_c    (GString *out, const PlConvDesc *c, const char *name);
/* Appends a CUDA kernel
 *   extern "C" __global__ void <name> (const T *col, T *y, int64_t n)
 * writing image n of Y from that image's column matrices of every group
 * (one after the other, as the batched GEMM leaves them): one thread per
 * output element gathers its contributions, so nothing is zeroed and no
 * atomics are needed. Returns the elements (threads) to launch. */
int64_t pl_conv_transpose_emit_cuda (GString *out, const PlConvDesc *c, const char *name);
/* The column matrix's elements of one image, all groups (the CUDA workspace). */
int64_t pl_conv_transpose_image_cols (const PlConvDesc *c);

G_END_DECLS
