/* conv-transpose.c — col2im for ConvTranspose (see conv-transpose.h), the
 * GEMM + col2im method of Caffe's and PyTorch's slow_conv_transpose2d: the
 * transposed convolution is the adjoint of im2col + GEMM, so it is a GEMM
 * with W transposed followed by the adjoint of im2col, a scatter-add of
 * each column back to the output positions its kernel taps reach.
 *
 * CPU: scatter. Per output channel (the OpenMP loop: each thread owns its
 * channels' planes), per kernel tap, per input row, the taps of the
 * innermost dim that land inside the output form one range, added with a
 * vectorized loop (contiguous in the matrix, the output read with the
 * stride). The matrix comes in chunks of input rows (pl_cpu_conv_nchw_rows,
 * as the conv's im2col), so the workspace stays small; chunk 0 zeroes the
 * planes first.
 *
 * CUDA: gather. A thread per output element walks the kernel taps, finds
 * the input position each would come from (o + pad - k * dilation must be a
 * non-negative multiple of the stride, below the input size) and sums the
 * matrix entries: deterministic, no atomics, no zeroing.
 */
#define G_LOG_DOMAIN "passlab"
#include "conv-transpose.h"

#include "backend.h"
#include "codegen.h"

/* Work (matrix elements) below this runs on one thread (as codegen-c.c's PARALLEL_MIN). */
#define PARALLEL_MIN 32768

int64_t
pl_conv_transpose_image_cols (const PlConvDesc *c)
{
  return c->group * c->col_rows * c->col_cols;
}

void
pl_conv_transpose_emit_c (GString *out, const PlConvDesc *c, const char *name)
{
  const char *t = pl_plan_ctype (c->dtype);
  int n = c->n, L = n - 1, ind = 0;
  int64_t mg = c->c_out / c->group, kprod = pl_dims_product (n, c->kernel), osz = pl_dims_product (n, c->out);
  int64_t rows = pl_cpu_conv_nchw_rows (c), chunks = (c->in[0] + rows - 1) / rows, inner = c->col_cols / c->in[0];
  g_string_append_printf (out, "/* %s: col2im of a ConvTranspose (NCHW), scatter-add per output channel */\n", name);
  pl_codegen_line (out, ind, "void %s (const %s *restrict col, %s *restrict y, int64_t n, int64_t g)", name, t, t);
  pl_codegen_line (out, ind, "{");
  ind++;
  pl_codegen_line (out, ind, "const int64_t img = n / %" G_GINT64_FORMAT ", lo = n %% %" G_GINT64_FORMAT
                   " * %" G_GINT64_FORMAT ", hi = lo + %" G_GINT64_FORMAT " < %" G_GINT64_FORMAT
                   " ? lo + %" G_GINT64_FORMAT " : %" G_GINT64_FORMAT ";",
                   chunks, chunks, rows, rows, c->in[0], rows, c->in[0]);
  if (rows * inner * c->col_rows >= PARALLEL_MIN)
    pl_codegen_line (out, ind, "#pragma omp parallel for schedule(static)");
  pl_codegen_line (out, ind, "for (int64_t m = 0; m < %" G_GINT64_FORMAT "; m++)", mg);
  pl_codegen_line (out, ind, "{");
  ind++;
  pl_codegen_line (out, ind, "%s *ym = y + (img * %" G_GINT64_FORMAT " + g * %" G_GINT64_FORMAT
                   " + m) * %" G_GINT64_FORMAT ";", t, c->c_out, mg, osz);
  pl_codegen_line (out, ind, "if (lo == 0)");
  pl_codegen_line (out, ind, "  for (int64_t o = 0; o < %" G_GINT64_FORMAT "; o++)", osz);
  pl_codegen_line (out, ind, "    ym[o] = 0;");
  pl_codegen_line (out, ind, "for (int64_t r = 0; r < %" G_GINT64_FORMAT "; r++)", kprod);
  pl_codegen_line (out, ind, "{");
  ind++;
  pl_codegen_split (out, ind, "r", "k", n, c->kernel);
  pl_codegen_line (out, ind, "const %s *cr = col + (m * %" G_GINT64_FORMAT " + r) * (hi - lo) * %" G_GINT64_FORMAT
                   ";", t, kprod, inner);
  /* the outer dims: a loop over the input, skipping rows that land outside the output */
  for (int d = 0; d < L; d++)
    {
      if (d == 0)
        pl_codegen_line (out, ind, "for (int64_t i0 = lo; i0 < hi; i0++)");
      else
        pl_codegen_line (out, ind, "for (int64_t i%d = 0; i%d < %" G_GINT64_FORMAT "; i%d++)", d, d, c->in[d], d);
      pl_codegen_line (out, ind, "{");
      ind++;
      pl_codegen_line (out, ind, "const int64_t o%d = i%d * %" G_GINT64_FORMAT " - %" G_GINT64_FORMAT
                       " + k%d * %" G_GINT64_FORMAT ";", d, d, c->strides[d], c->pads[d], d, c->dilations[d]);
      pl_codegen_line (out, ind, "if (o%d < 0 || o%d >= %" G_GINT64_FORMAT ")", d, d, c->out[d]);
      pl_codegen_line (out, ind, "  continue;");
    }
  /* the innermost dim: the range of inputs that land inside the output */
  int64_t s = c->strides[L];
  pl_codegen_line (out, ind, "const int64_t off = k%d * %" G_GINT64_FORMAT " - %" G_GINT64_FORMAT ";", L,
                   c->dilations[L], c->pads[L]);
  pl_codegen_line (out, ind, "int64_t a = off >= 0 ? 0 : (%" G_GINT64_FORMAT " - off) / %" G_GINT64_FORMAT ";",
                   s - 1, s);
  pl_codegen_line (out, ind, "int64_t b = off > %" G_GINT64_FORMAT " ? 0 : (%" G_GINT64_FORMAT
                   " - off) / %" G_GINT64_FORMAT " + 1;", c->out[L] - 1, c->out[L] - 1, s);
  pl_codegen_line (out, ind, "b = b < %" G_GINT64_FORMAT " ? b : %" G_GINT64_FORMAT ";", c->in[L], c->in[L]);
  if (L == 0)
    {
      pl_codegen_line (out, ind, "a = a > lo ? a : lo;");
      pl_codegen_line (out, ind, "b = b < hi ? b : hi;");
    }
  g_autofree char *yix = pl_codegen_flat_index ("o", L, c->out);
  g_autofree char *cix = pl_codegen_flat_index ("i", L, c->in);
  pl_codegen_line (out, ind, "const int64_t yb = (%s) * %" G_GINT64_FORMAT " + off;", yix, c->out[L]);
  /* the chunk's columns start at input row lo */
  if (L == 0)
    pl_codegen_line (out, ind, "const %s *cc = cr - lo;", t);
  else
    pl_codegen_line (out, ind, "const %s *cc = cr + (%s - lo * %" G_GINT64_FORMAT ") * %" G_GINT64_FORMAT ";", t, cix,
                     pl_dims_product (L - 1, c->in + 1), c->in[L]);
  pl_codegen_line (out, ind, "#pragma omp simd");
  pl_codegen_line (out, ind, "for (int64_t i = a; i < b; i++)");
  if (s == 1)
    pl_codegen_line (out, ind, "  ym[yb + i] += cc[i];");
  else
    pl_codegen_line (out, ind, "  ym[yb + i * %" G_GINT64_FORMAT "] += cc[i];", s);
  for (int d = 0; d < L + 2; d++)
    {
      ind--;
      pl_codegen_line (out, ind, "}");
    }
  ind--;
  pl_codegen_line (out, ind, "}\n");
}

int64_t
pl_conv_transpose_emit_cuda (GString *out, const PlConvDesc *c, const char *name)
{
  const char *t = pl_plan_ctype (c->dtype);
  int n = c->n, ind = 0;
  int64_t kprod = pl_dims_product (n, c->kernel), osz = pl_dims_product (n, c->out), total = c->c_out * osz;
  g_string_append_printf (out, "/* %s: col2im of a ConvTranspose (NCHW), a thread per output gathers */\n", name);
  pl_codegen_line (out, ind, "extern \"C\" __global__ void __launch_bounds__ (256) %s (const %s *__restrict__ col, "
                   "%s *__restrict__ y, int64_t n)", name, t, t);
  pl_codegen_line (out, ind, "{");
  ind++;
  pl_codegen_cuda_grid_stride (out, ind, "i", total);
  pl_codegen_line (out, ind, "{");
  ind++;
  pl_codegen_line (out, ind, "const int64_t m = i / %" G_GINT64_FORMAT ";", osz);
  pl_codegen_split (out, ind, "i", "o", n, c->out);
  pl_codegen_line (out, ind, "%s acc = 0;", t);
  for (int d = 0; d < n; d++)
    {
      pl_codegen_line (out, ind, "for (int64_t k%d = 0; k%d < %" G_GINT64_FORMAT "; k%d++)", d, d, c->kernel[d], d);
      pl_codegen_line (out, ind, "{");
      ind++;
      pl_codegen_line (out, ind, "const int64_t t%d = o%d + %" G_GINT64_FORMAT " - k%d * %" G_GINT64_FORMAT ";", d, d,
                       c->pads[d], d, c->dilations[d]);
      if (c->strides[d] == 1)
        pl_codegen_line (out, ind, "if (t%d < 0 || t%d >= %" G_GINT64_FORMAT ")", d, d, c->in[d]);
      else
        pl_codegen_line (out, ind, "if (t%d < 0 || t%d %% %" G_GINT64_FORMAT " || t%d / %" G_GINT64_FORMAT
                         " >= %" G_GINT64_FORMAT ")", d, d, c->strides[d], d, c->strides[d], c->in[d]);
      pl_codegen_line (out, ind, "  continue;");
      pl_codegen_line (out, ind, "const int64_t i%d = t%d / %" G_GINT64_FORMAT ";", d, d, c->strides[d]);
    }
  g_autofree char *kix = pl_codegen_flat_index ("k", n, c->kernel);
  g_autofree char *iix = pl_codegen_flat_index ("i", n, c->in);
  pl_codegen_line (out, ind, "acc += col[(m * %" G_GINT64_FORMAT " + %s) * %" G_GINT64_FORMAT " + %s];", kprod, kix,
                   c->col_cols, iix);
  for (int d = 0; d < n; d++)
    {
      ind--;
      pl_codegen_line (out, ind, "}");
    }
  pl_codegen_line (out, ind, "y[n * %" G_GINT64_FORMAT " + i] = acc;", total);
  ind--;
  pl_codegen_line (out, ind, "}");
  ind--;
  pl_codegen_line (out, ind, "}\n");
  return total;
}
