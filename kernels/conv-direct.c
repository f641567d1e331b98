/* conv-direct.c — the generated direct convolution (see conv-direct.h).
 *
 * The C kernel, per layout (x and y in the same layout), after the data
 * flow the seed derives from the red-blue pebble bound:
 *
 *   omp parallel for collapse over tiles (image, group, z, y, x)
 *     acc = 0                             the tile's outputs, x*y*z (*N)
 *     for each input channel c, cu at a time   (each read once per tile)
 *       stage their input windows         x' * y' elements, zeros outside
 *       for each register block of acc      the image, split by stride phase
 *         load it; for c, kh, kw: block += window * weights; store it
 *     y[tile] = acc
 *
 * A register block is P rows of one or two vectors along the dim that is
 * contiguous in the layout: NHWC the output channels (the weights are
 * packed with k innermost; a window element broadcast), NCHW the width (a
 * weight broadcast times a window row), CHWN the batch (a weight broadcast
 * times an input's images). Its accumulators are GCC vectors (D_V) so they
 * stay in registers — gcc -O3 -march=native vectorizes the plain-array
 * version too but leaves its accumulators on the stack (40 against 100
 * GFLOP/s a core here) — and P is sized to fill about 24 of AVX-512's 32
 * vector registers: per (kh, kw) P broadcasts or loads, one or two vector
 * loads, P times that many FMAs, like a GEMM micro-kernel.
 *
 * Edges cost nothing in the inner loops: the staged window holds the zero
 * padding, so no block checks bounds; the accumulators are padded to whole
 * vectors along the vector dim (padded lanes read zeros or the next
 * weights, PACK_TAIL past the end, and are never stored); tile rows that
 * do not fill a block take a one-row or one-vector block. A pass takes
 * ceil(32/taps) channels (choose_blocks), so that a block does about 32
 * multiply-adds per accumulator load and store.
 *
 * Weights are packed [g][c][kh][kw][k] (k within the group innermost) for
 * every layout: one channel's weights — what a tile needs at a time — are
 * contiguous, and a block's k values adjacent.
 *
 * The CUDA kernel: one block per output tile (one image), a thread per
 * point with z accumulators in registers; per input channel the block
 * stages the input window and the channel's z*Hk*Wk weights in shared
 * memory.
 *
 * Here: the choice of kernel and register blocks, the generic C kernels per
 * layout and the C entry point. NHWC's own kernels (depthwise, small groups,
 * pointwise) are in conv-direct-nhwc.c, CHWN's pointwise one in
 * conv-direct-chwn.c, the CUDA emission in
 * conv-direct-cuda.c.
 */
#define G_LOG_DOMAIN "passlab"
#include "conv-direct-private.h"

#include <stdio.h>
#include <string.h>

/* Packed weights are followed by this many zeros, so a vector load at the
 * very end never leaves the buffer. */
#define PACK_TAIL 64

/* What CHWN's strided pointwise kernel stages at a time (its D_STAGE). */
#define CHWN_STAGE_BYTES (2 << 20)

/* --- shape helpers ------------------------------------------------------------------ */


bool
pl_conv_direct_nhwc_depthwise (const PlConvDesc *c)
{
  return c->x_layout == PL_LAYOUT_NHWC && cg (c) == 1 && kg (c) == 1 && c->group > 1;
}

bool
pl_conv_direct_nhwc_pointwise (const PlConvDesc *c)
{
  return c->x_layout == PL_LAYOUT_NHWC && c->kernel[0] == 1 && c->kernel[1] == 1 && !c->pads[0] && !c->pads[1]
         && !c->pads[2] && !c->pads[3] && !pl_conv_direct_nhwc_depthwise (c);
}

static int vector_bytes (void);

bool
pl_conv_direct_chwn_pointwise (const PlConvDesc *c)
{
  const int64_t vmax = vector_bytes () / (int64_t) pl_dtype_size (c->dtype);
  return c->x_layout == PL_LAYOUT_CHWN && c->kernel[0] == 1 && c->kernel[1] == 1 && !c->pads[0] && !c->pads[1]
         && !c->pads[2] && !c->pads[3] && c->out[0] * c->out[1] * c->batch >= vmax;
}

bool
pl_conv_direct_nhwc_grouped (const PlConvDesc *c)
{
  const int64_t vmax = vector_bytes () / (int64_t) pl_dtype_size (c->dtype);
  return c->x_layout == PL_LAYOUT_NHWC && c->group > 1 && cg (c) == kg (c) && kg (c) >= 2 && kg (c) < vmax
         && vmax % kg (c) == 0 && !pl_conv_direct_nhwc_pointwise (c);
}

bool
pl_conv_direct_supported (const PlConvDesc *c, char **why)
{
  const char *no = NULL;
  if (c->n != 2)
    no = "direct conv: 2-d only";
  else if (c->dtype != PL_DTYPE_F32 && c->dtype != PL_DTYPE_F64)
    no = "direct conv: f32 and f64 only";
  else if (c->x_layout >= PL_LAYOUT_COUNT || c->y_layout >= PL_LAYOUT_COUNT)
    no = "direct conv: unknown layout";
  else if (c->x_layout != c->y_layout)
    no = "direct conv: X and Y must have the same layout";
  else if (c->group < 1 || c->c_in % c->group || c->c_out % c->group || c->batch < 1)
    no = "direct conv: bad group or batch";
  else
    for (int i = 0; i < 2 && !no; i++)
      if (c->kernel[i] < 1 || c->strides[i] < 1 || c->dilations[i] < 1 || c->out[i] < 1 || c->in[i] < 1
          || c->pads[i] < 0 || c->pads[2 + i] < 0 || c->tile[i] < 0)
        no = "direct conv: bad kernel, stride, dilation, padding or tile";
  if (!no && c->tile[2] < 0)
    no = "direct conv: bad tile";
  if (no && why)
    *why = g_strdup (no);
  return no == NULL;
}

int64_t
pl_conv_direct_packed_size (const PlConvDesc *c)
{
  return c->c_out * cg (c) * c->kernel[0] * c->kernel[1] + PACK_TAIL;
}

void
pl_conv_direct_pack (const PlConvDesc *c, const void *w_oihw, void *packed)
{
  const int64_t G = c->group, CG = cg (c), KG = kg (c), KHW = c->kernel[0] * c->kernel[1];
  const size_t es = pl_dtype_size (c->dtype);
  const char *src = w_oihw;
  char *dst = packed;
  for (int64_t g = 0; g < G; g++)
    for (int64_t ch = 0; ch < CG; ch++)
      for (int64_t r = 0; r < KHW; r++)
        for (int64_t k = 0; k < KG; k++)
          memcpy (dst + ((((g * CG + ch) * KHW + r) * KG + k) * es),
                  src + ((((g * KG + k) * CG + ch) * KHW + r) * es), es);
  memset (dst + (G * CG * KHW * KG) * es, 0, PACK_TAIL * es);
}

/* --- C emission ------------------------------------------------------------------------ */

/* Generated code speaks of the conv through D_ macros (#undef'd after each
 * kernel, so many kernels share a translation unit) and of its vectors
 * through D_V, a GCC vector of D_VL elements: arrays of those stay in
 * registers where gcc's auto-vectorizer leaves a scalar accumulator array
 * on the stack (measured: 100 against 40 GFLOP/s a core). */

/* The driver, common to the layouts: the tile loops and the per-thread
 * buffer (accumulators, then the staged window). D_NT: batch iterations of
 * the tile loop (1 when the tile holds the batch); D_ACC: accumulators of a
 * tile, padded to whole vectors. */
static const char driver[] =
  KERNEL_HEAD
  "  const size_t need = D_RUP (D_ACC (tx, ty, tz), 16) + D_WIN (tx, ty);\n"
  "#pragma omp parallel\n"
  "  {\n"
  "    D_T *buf = pl_conv_direct_scratch (need * sizeof (D_T));\n"
  "#pragma omp for collapse(5) schedule(dynamic, 1)\n"
  "    for (int64_t n = 0; n < D_NT; n++)\n"
  "      for (int64_t g = 0; g < D_G; g++)\n"
  "        for (int64_t bz = 0; bz < nz; bz++)\n"
  "          for (int64_t by = 0; by < ny; by++)\n"
  "            for (int64_t bx = 0; bx < nx; bx++)\n"
  "              D_FN (tile) (x, wp, y, buf, n, g, bz * tz, by * ty, bx * tx, D_MIN (tz, D_KG - bz * tz),\n"
  "                           D_MIN (ty, D_OH - by * ty), D_MIN (tx, D_OW - bx * tx));\n"
  "  }\n"
  "}\n";

/* A thread's scratch, shared by the direct kernels of a translation unit
 * (a thread runs one at a time) and kept between calls: no allocation and
 * no page faults per call. */
static const char scratch[] =
  "#ifndef PL_CONV_DIRECT_SCRATCH\n"
  "#define PL_CONV_DIRECT_SCRATCH\n"
  "static void *\n"
  "pl_conv_direct_scratch (size_t bytes)\n"
  "{\n"
  "  static __thread void *buf;\n"
  "  static __thread size_t cap;\n"
  "  if (cap < bytes)\n"
  "    {\n"
  "      free (buf);\n"
  "      cap = (bytes + 63) / 64 * 64;\n"
  "      buf = aligned_alloc (64, cap);\n"
  "      if (!buf)\n"
  "        abort ();\n"
  "    }\n"
  "  return buf;\n"
  "}\n"
  "#endif\n\n";

/* Vector loads and stores at any alignment (memcpy: the compiler emits one
 * unaligned vector move). */
static const char vector_io[] =
  "static inline __attribute__ ((always_inline)) D_V\n"
  "D_FN (vld) (const D_T *p)\n"
  "{\n"
  "  D_V v;\n"
  "  memcpy (&v, p, sizeof v);\n"
  "  return v;\n"
  "}\n\n"
  "static inline __attribute__ ((always_inline)) void\n"
  "D_FN (vst) (D_T *p, D_V v)\n"
  "{\n"
  "  memcpy (p, &v, sizeof v);\n"
  "}\n\n";

/* Staging cu channels' input windows in the thread's buffer, zero outside
 * the image, split by stride phase so that a row of outputs reads a
 * contiguous row of it, for the phases and rows some tap reads (a 1x1
 * stride-2 conv reads a quarter of its window; the rest is left
 * unwritten). NCHW and CHWN stage a window per channel, each D_WSZ after
 * the last: win[u][s][iy][m][0..D_NA) = x(u, ih0 + iy, iw0 + m*SW + s),
 * D_NX elements of x (CHWN: the images) padded with zeros to D_NA. NHWC
 * keeps a point's channels side by side as x has them, so that a point is
 * one copy: win[s][iy][m][0..D_CU) — staged a channel at a time, an
 * element a copy, it took as long as the multiply-adds of a conv with
 * groups of 16 channels. D_WPS: from one point of the window to the next;
 * D_WUS: from one channel to the next.
 * An output (oy, ox) and a tap (kh, kw) read phase (kw*DW) % SW, row
 * oy*SH + kh*DH, column ox + (kw*DW) / SW. D_XOFF: where (ih, iw) of the
 * channel is in x. */
static const char stage[] =
  "static D_ATTR void\n"
  "D_FN (stage) (D_T *restrict win, const D_T *restrict xc, int64_t ih0, int64_t iw0, int64_t wy, int64_t wm,\n"
  "              const int cu)\n"
  "{\n"
  "  const int64_t wsz = D_WSZ, nw = D_WUS == 1 ? 1 : cu;   /* windows to zero */\n"
  "  for (int64_t s = 0; s < D_SW; s++)\n"
  "    for (int64_t iy = 0; iy < wy; iy++)\n"
  "      {\n"
  "        /* a kernel smaller than its stride reads only some phases and rows: stage those */\n"
  "        int read = 0;\n"
  "        for (int64_t kw = 0; kw < D_KW; kw++)\n"
  "          read |= (kw * D_DW) % D_SW == s;\n"
  "        if (!read)\n"
  "          break;\n"
  "        read = 0;\n"
  "        for (int64_t kh = 0; kh < D_KH; kh++)\n"
  "          read |= iy >= kh * D_DH && (iy - kh * D_DH) % D_SH == 0;\n"
  "        if (!read)\n"
  "          continue;\n"
  "        D_T *wr = win + (s * wy + iy) * wm * D_WPS;\n"
  "        const int64_t ih = ih0 + iy;\n"
  "        if (ih < 0 || ih >= D_H)\n"
  "          {\n"
  "            for (int u = 0; u < nw; u++)\n"
  "              memset (wr + u * wsz, 0, sizeof (D_T) * wm * D_WPS);\n"
  "            continue;\n"
  "          }\n"
  "        /* columns lo .. hi read the image, those around them the padding */\n"
  "        const int64_t first = iw0 + s;\n"
  "        int64_t lo = first >= 0 ? 0 : (D_SW - 1 - first) / D_SW;\n"
  "        int64_t hi = first >= D_W ? 0 : (D_W - first + D_SW - 1) / D_SW;\n"
  "        hi = hi < wm ? hi : wm;\n"
  "        lo = lo < hi ? lo : hi;\n"
  "        for (int u = 0; u < nw; u++)\n"
  "          {\n"
  "            memset (wr + u * wsz, 0, sizeof (D_T) * lo * D_WPS);\n"
  "            memset (wr + u * wsz + hi * D_WPS, 0, sizeof (D_T) * (wm - hi) * D_WPS);\n"
  "          }\n"
  "        if (D_WUS == 1)\n"
  "          /* NHWC: a point's channels, one copy (of a constant size but in the last pass) */\n"
  "          for (int64_t m = lo; m < hi; m++)\n"
  "            memcpy (wr + m * D_WPS, xc + D_XOFF (ih, first + m * D_SW), sizeof (D_T) * (cu == D_CU ? D_CU : cu));\n"
  "        else if (D_SW == 1 && D_NA == D_NX && D_XOFF (0, 1) - D_XOFF (0, 0) == D_NX)\n"
  "          /* the row is contiguous in x (NCHW, and CHWN's images): one copy a channel */\n"
  "          for (int u = 0; u < cu; u++)\n"
  "            memcpy (wr + u * wsz + lo * D_NA, xc + u * D_XCH + D_XOFF (ih, first + lo),\n"
  "                    sizeof (D_T) * (hi - lo) * D_NX);\n"
  "        else\n"
  "          /* a point's images (CHWN with a stride, or padded to whole vectors) */\n"
  "          for (int64_t m = lo; m < hi; m++)\n"
  "            for (int u = 0; u < cu; u++)\n"
  "              {\n"
  "                memcpy (wr + u * wsz + m * D_NA, xc + u * D_XCH + D_XOFF (ih, first + m * D_SW), sizeof (D_T) * D_NX);\n"
  "                if (D_NA > D_NX)\n"
  "                  memset (wr + u * wsz + m * D_NA + D_NX, 0, sizeof (D_T) * (D_NA - D_NX));\n"
  "              }\n"
  "      }\n"
  "}\n\n"
  "/* the window element of output row oy, column ox, tap (kh, kw) */\n"
  "#define D_WAT(oy, ox, kh, kw) \\\n"
  "  (((((kw) * D_DW) % D_SW * wy + (oy) * D_SH + (kh) * D_DH) * wm + (ox) + (kw) * D_DW / D_SW) * D_WPS)\n\n";

/* The taps of a block: cu staged channels (u), kh, kw; xr the window at
 * the block's first point, wv the weights of the block's first channel. */
#define TAP_LOOP \
  "  for (int u = 0; u < cu; u++)\n" \
  "  for (int kh = 0; kh < D_KH; kh++)\n" \
  "    for (int kw = 0; kw < D_KW; kw++)\n" \
  "      {\n" \
  "        const D_T *xr = win + u * D_WUS + D_WAT (oy, ox, kh, kw);\n" \
  "        const D_T *wv = wc + ((u * D_KH + kh) * D_KW + kw) * D_KG;\n"

/* NCHW: acc [tz][ty][txp] (rows padded to whole vectors); a block is pk
 * output channels x nv vectors of a row (a weight broadcast times a window
 * row). */
static const char nchw[] =
  "static inline __attribute__ ((always_inline)) D_ATTR void\n"
  "D_FN (vblock) (D_T *restrict a, int64_t lda, const D_T *restrict win, int64_t wy, int64_t wm, int64_t oy,\n"
  "               int64_t ox, const D_T *restrict wc, const int pk, const int nv, const int cu)\n"
  "{\n"
  "  D_V r[D_P][D_NV];\n"
  "  for (int k = 0; k < pk; k++)\n"
  "    for (int j = 0; j < nv; j++)\n"
  "      r[k][j] = D_FN (vld) (a + k * lda + j * D_VL);\n"
  TAP_LOOP
  "        D_V xv[D_NV];\n"
  "        for (int j = 0; j < nv; j++)\n"
  "          xv[j] = D_FN (vld) (xr + j * D_VL);\n"
  "        for (int k = 0; k < pk; k++)\n"
  "          for (int j = 0; j < nv; j++)\n"
  "            r[k][j] += wv[k] * xv[j];\n"
  "      }\n"
  "  for (int k = 0; k < pk; k++)\n"
  "    for (int j = 0; j < nv; j++)\n"
  "      D_FN (vst) (a + k * lda + j * D_VL, r[k][j]);\n"
  "}\n\n"
  "static inline __attribute__ ((always_inline)) D_ATTR void\n"
  "D_FN (row) (D_T *restrict a, int64_t lda, const D_T *restrict win, int64_t wy, int64_t wm, int64_t oy,\n"
  "            int64_t txp, const D_T *restrict wc, const int pk, const int cu)\n"
  "{\n"
  "  int64_t ox = 0;\n"
  "  for (; ox + D_NV * D_VL <= txp; ox += D_NV * D_VL)\n"
  "    D_FN (vblock) (a + ox, lda, win, wy, wm, oy, ox, wc, pk, D_NV, cu);\n"
  "  for (; ox < txp; ox += D_VL)\n"
  "    D_FN (vblock) (a + ox, lda, win, wy, wm, oy, ox, wc, pk, 1, cu);\n"
  "}\n\n"
  "static D_ATTR void\n"
  "D_FN (tile) (const D_T *restrict x, const D_T *restrict wp, D_T *restrict y, D_T *restrict buf, int64_t n,\n"
  "             int64_t g, int64_t k0, int64_t oy0, int64_t ox0, int64_t tzz, int64_t tyy, int64_t txx)\n"
  "{\n"
  "  const int64_t txp = D_RUP (txx, D_VL), lda = tyy * txp, wy = D_WY (tyy), wm = D_WM (txx);\n"
  "  D_T *restrict acc = buf, *restrict win = buf + D_RUP (D_ACC (txx, tyy, tzz), 16);\n"
  "  memset (acc, 0, sizeof (D_T) * tzz * lda);\n"
  "#define D_CHANNELS(cu) \\\n"
  "  D_FN (stage) (win, x + (n * D_C + g * D_CG + c) * D_H * D_W, oy0 * D_SH - D_PT, ox0 * D_SW - D_PL, wy, wm, \\\n"
  "                (cu)); \\\n"
  "  const D_T *wc = wp + (g * D_CG + c) * D_KH * D_KW * D_KG + k0; \\\n"
  "  int64_t kz = 0; \\\n"
  "  for (; kz + D_P <= tzz; kz += D_P) \\\n"
  "    for (int64_t oy = 0; oy < tyy; oy++) \\\n"
  "      D_FN (row) (acc + (kz * tyy + oy) * txp, lda, win, wy, wm, oy, txp, wc + kz, D_P, cu); \\\n"
  "  for (; kz < tzz; kz++) \\\n"
  "    for (int64_t oy = 0; oy < tyy; oy++) \\\n"
  "      D_FN (row) (acc + (kz * tyy + oy) * txp, lda, win, wy, wm, oy, txp, wc + kz, 1, cu);\n"
  "  D_CHANNEL_LOOP\n"
  "  for (int64_t k = 0; k < tzz; k++)\n"
  "    for (int64_t oy = 0; oy < tyy; oy++)\n"
  "      memcpy (y + ((n * D_K + g * D_KG + k0 + k) * D_OH + oy0 + oy) * D_OW + ox0, acc + (k * tyy + oy) * txp,\n"
  "              sizeof (D_T) * txx);\n"
  "}\n\n";

/* NHWC: acc [ty][tx][tzp] (channels padded to whole vectors; their weights
 * run on into the next ones, or PACK_TAIL); a block is pb points of a row
 * x nv vectors of output channels (an input broadcast times the weights). */
static const char nhwc[] =
  "static inline __attribute__ ((always_inline)) D_ATTR void\n"
  "D_FN (vblock) (D_T *restrict a, int64_t lda, const D_T *restrict win, int64_t wy, int64_t wm, int64_t oy,\n"
  "               int64_t ox, const D_T *restrict wc, const int pb, const int nv, const int cu)\n"
  "{\n"
  "  D_V r[D_P][D_NV];\n"
  "  for (int p = 0; p < pb; p++)\n"
  "    for (int j = 0; j < nv; j++)\n"
  "      r[p][j] = D_FN (vld) (a + p * lda + j * D_VL);\n"
  TAP_LOOP
  "        D_V wvec[D_NV];\n"
  "        for (int j = 0; j < nv; j++)\n"
  "          wvec[j] = D_FN (vld) (wv + j * D_VL);\n"
  "        for (int p = 0; p < pb; p++)\n"
  "          for (int j = 0; j < nv; j++)\n"
  "            r[p][j] += xr[p * D_WPS] * wvec[j];\n"
  "      }\n"
  "  for (int p = 0; p < pb; p++)\n"
  "    for (int j = 0; j < nv; j++)\n"
  "      D_FN (vst) (a + p * lda + j * D_VL, r[p][j]);\n"
  "}\n\n"
  "/* pb points of row oy from ox, all the tile's channels */\n"
  "static inline __attribute__ ((always_inline)) D_ATTR void\n"
  "D_FN (points) (D_T *restrict a, const D_T *restrict win, int64_t wy, int64_t wm, int64_t oy, int64_t ox,\n"
  "               int64_t tzp, const D_T *restrict wc, const int pb, const int cu)\n"
  "{\n"
  "  int64_t kz = 0;\n"
  "  for (; kz + D_NV * D_VL <= tzp; kz += D_NV * D_VL)\n"
  "    D_FN (vblock) (a + kz, tzp, win, wy, wm, oy, ox, wc + kz, pb, D_NV, cu);\n"
  "  for (; kz < tzp; kz += D_VL)\n"
  "    D_FN (vblock) (a + kz, tzp, win, wy, wm, oy, ox, wc + kz, pb, 1, cu);\n"
  "}\n\n"
  "static D_ATTR void\n"
  "D_FN (tile) (const D_T *restrict x, const D_T *restrict wp, D_T *restrict y, D_T *restrict buf, int64_t n,\n"
  "             int64_t g, int64_t k0, int64_t oy0, int64_t ox0, int64_t tzz, int64_t tyy, int64_t txx)\n"
  "{\n"
  "  const int64_t tzp = D_RUP (tzz, D_VL), wy = D_WY (tyy), wm = D_WM (txx);\n"
  "  D_T *restrict acc = buf, *restrict win = buf + D_RUP (D_ACC (txx, tyy, tzz), 16);\n"
  "  memset (acc, 0, sizeof (D_T) * tyy * txx * tzp);\n"
  "#define D_CHANNELS(cu) \\\n"
  "  D_FN (stage) (win, x + n * D_H * D_W * D_C + g * D_CG + c, oy0 * D_SH - D_PT, ox0 * D_SW - D_PL, wy, wm, \\\n"
  "                (cu)); \\\n"
  "  const D_T *wc = wp + (g * D_CG + c) * D_KH * D_KW * D_KG + k0; \\\n"
  "  for (int64_t oy = 0; oy < tyy; oy++) \\\n"
  "    { \\\n"
  "      int64_t ox = 0; \\\n"
  "      for (; ox + D_P <= txx; ox += D_P) \\\n"
  "        D_FN (points) (acc + (oy * txx + ox) * tzp, win, wy, wm, oy, ox, tzp, wc, D_P, cu); \\\n"
  "      for (; ox < txx; ox++) \\\n"
  "        D_FN (points) (acc + (oy * txx + ox) * tzp, win, wy, wm, oy, ox, tzp, wc, 1, cu); \\\n"
  "    }\n"
  "  D_CHANNEL_LOOP\n"
  "  for (int64_t oy = 0; oy < tyy; oy++)\n"
  "    for (int64_t ox = 0; ox < txx; ox++)\n"
  "      memcpy (y + ((n * D_OH + oy0 + oy) * D_OW + ox0 + ox) * D_K + g * D_KG + k0, acc + (oy * txx + ox) * tzp,\n"
  "              sizeof (D_T) * (tzz == D_KG ? D_KG : tzz));   /* a constant size: not a call a point */\n"
  "}\n\n";

/* CHWN: acc [tz][ty][txp][D_NA] (images padded to whole vectors); a block is
 * pk output channels x px points x nv vectors of images (a weight broadcast
 * times an input's images). With D_PG > 1 (a batch that divides the vector)
 * a vector is the images of D_PG adjacent points, D_NA the batch itself, a
 * block px such vectors, and the tile's rows padded to whole vectors (txp;
 * the padding points read the window's zeros and are never stored). */
static const char chwn[] =
  "static inline __attribute__ ((always_inline)) D_ATTR void\n"
  "D_FN (vblock) (D_T *restrict a, int64_t lda, const D_T *restrict win, int64_t wy, int64_t wm, int64_t oy,\n"
  "               int64_t ox, const D_T *restrict wc, const int pk, const int px, const int nv, const int cu)\n"
  "{\n"
  "  D_V r[D_P][D_PX][D_NV];\n"
  "  for (int k = 0; k < pk; k++)\n"
  "    for (int p = 0; p < px; p++)\n"
  "      for (int j = 0; j < nv; j++)\n"
  "        r[k][p][j] = D_FN (vld) (a + k * lda + p * D_PG * D_NA + j * D_VL);\n"
  TAP_LOOP
  "        for (int p = 0; p < px; p++)\n"
  "          {\n"
  "            D_V xv[D_NV];\n"
  "            for (int j = 0; j < nv; j++)\n"
  "              xv[j] = D_FN (vld) (xr + p * D_PG * D_NA + j * D_VL);\n"
  "            for (int k = 0; k < pk; k++)\n"
  "              for (int j = 0; j < nv; j++)\n"
  "                r[k][p][j] += wv[k] * xv[j];\n"
  "          }\n"
  "      }\n"
  "  for (int k = 0; k < pk; k++)\n"
  "    for (int p = 0; p < px; p++)\n"
  "      for (int j = 0; j < nv; j++)\n"
  "        D_FN (vst) (a + k * lda + p * D_PG * D_NA + j * D_VL, r[k][p][j]);\n"
  "}\n\n"
  "/* pk channels x px points from ox of row oy, every image */\n"
  "static inline __attribute__ ((always_inline)) D_ATTR void\n"
  "D_FN (points) (D_T *restrict a, int64_t lda, const D_T *restrict win, int64_t wy, int64_t wm, int64_t oy,\n"
  "               int64_t ox, const D_T *restrict wc, const int pk, const int px, const int cu)\n"
  "{\n"
  "  int64_t nb = 0;\n"
  "  for (; nb + D_NV * D_VL <= D_NA; nb += D_NV * D_VL)\n"
  "    D_FN (vblock) (a + nb, lda, win + nb, wy, wm, oy, ox, wc, pk, px, D_NV, cu);\n"
  "  for (; nb < D_NA; nb += D_VL)\n"
  "    D_FN (vblock) (a + nb, lda, win + nb, wy, wm, oy, ox, wc, pk, px, 1, cu);\n"
  "}\n\n"
  "static inline __attribute__ ((always_inline)) D_ATTR void\n"
  "D_FN (row) (D_T *restrict a, int64_t lda, const D_T *restrict win, int64_t wy, int64_t wm, int64_t oy,\n"
  "            int64_t txx, const D_T *restrict wc, const int pk, const int cu)\n"
  "{\n"
  "  int64_t ox = 0;\n"
  "  for (; ox + D_PX * D_PG <= txx; ox += D_PX * D_PG)\n"
  "    D_FN (points) (a + ox * D_NA, lda, win, wy, wm, oy, ox, wc, pk, D_PX, cu);\n"
  "  for (; ox < txx; ox += D_PG)\n"
  "    D_FN (points) (a + ox * D_NA, lda, win, wy, wm, oy, ox, wc, pk, 1, cu);\n"
  "}\n\n"
  "/* pk channels from kz, every row of the tile */\n"
  "static inline __attribute__ ((always_inline)) D_ATTR void\n"
  "D_FN (rows) (D_T *restrict acc, int64_t lda, const D_T *restrict win, int64_t wy, int64_t wm, int64_t tyy,\n"
  "             int64_t txp, int64_t txx, const D_T *restrict wc, int64_t kz, const int pk, const int cu)\n"
  "{\n"
  "  for (int64_t oy = 0; oy < tyy; oy++)\n"
  "    D_FN (row) (acc + (kz * tyy + oy) * txp * D_NA, lda, win, wy, wm, oy, txx, wc + kz, pk, cu);\n"
  "}\n\n"
  "static D_ATTR void\n"
  "D_FN (tile) (const D_T *restrict x, const D_T *restrict wp, D_T *restrict y, D_T *restrict buf, int64_t n,\n"
  "             int64_t g, int64_t k0, int64_t oy0, int64_t ox0, int64_t tzz, int64_t tyy, int64_t txx)\n"
  "{\n"
  "  (void) n;\n"
  "  const int64_t txp = D_RUP (txx, D_PG), lda = tyy * txp * D_NA, wy = D_WY (tyy), wm = D_WM (txx);\n"
  "  D_T *restrict acc = buf, *restrict win = buf + D_RUP (D_ACC (txx, tyy, tzz), 16);\n"
  "  memset (acc, 0, sizeof (D_T) * tzz * lda);\n"
  "#define D_CHANNELS(cu) \\\n"
  "  D_FN (stage) (win, x + (g * D_CG + c) * D_H * D_W * D_N, oy0 * D_SH - D_PT, ox0 * D_SW - D_PL, wy, wm, \\\n"
  "                (cu)); \\\n"
  "  const D_T *wc = wp + (g * D_CG + c) * D_KH * D_KW * D_KG + k0; \\\n"
  "  int64_t kz = 0; \\\n"
  "  for (; kz + D_P <= tzz; kz += D_P) \\\n"
  "    D_FN (rows) (acc, lda, win, wy, wm, tyy, txp, txx, wc, kz, D_P, cu); \\\n"
  "  /* the rest in blocks of 4, 2, 1 channels (constants, so that each unrolls) */ \\\n"
  "  if (D_P > 4 && kz + 4 <= tzz) \\\n"
  "    D_FN (rows) (acc, lda, win, wy, wm, tyy, txp, txx, wc, kz, D_P > 4 ? 4 : 1, cu), kz += 4; \\\n"
  "  if (D_P > 2 && kz + 2 <= tzz) \\\n"
  "    D_FN (rows) (acc, lda, win, wy, wm, tyy, txp, txx, wc, kz, D_P > 2 ? 2 : 1, cu), kz += 2; \\\n"
  "  for (; kz < tzz; kz++) \\\n"
  "    D_FN (rows) (acc, lda, win, wy, wm, tyy, txp, txx, wc, kz, 1, cu);\n"
  "  D_CHANNEL_LOOP\n"
  "  for (int64_t k = 0; k < tzz; k++)\n"
  "    for (int64_t oy = 0; oy < tyy; oy++)\n"
  "      if (D_NA == D_N)   /* unpadded images: a row of points is one copy */\n"
  "        memcpy (y + (((g * D_KG + k0 + k) * D_OH + oy0 + oy) * D_OW + ox0) * D_N,\n"
  "                acc + (k * tyy + oy) * txp * D_NA, sizeof (D_T) * D_N * txx);\n"
  "      else\n"
  "        for (int64_t ox = 0; ox < txx; ox++)\n"
  "          memcpy (y + (((g * D_KG + k0 + k) * D_OH + oy0 + oy) * D_OW + ox0 + ox) * D_N,\n"
  "                  acc + ((k * tyy + oy) * txp + ox) * D_NA, sizeof (D_T) * D_N);\n"
  "}\n\n";

/* The vector width in bytes the compiler will use with -march=native here
 * (the machine that compiles is the one that emits). */
static int
vector_bytes (void)
{
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init ();
  if (__builtin_cpu_supports ("avx512f"))
    return 64;
  if (__builtin_cpu_supports ("avx"))
    return 32;
#endif
  return 16;
}

/* The largest divisor of n in [lo, hi], else fallback (at most n). */
static int64_t
divisor_in (int64_t n, int64_t lo, int64_t hi, int64_t fallback)
{
  for (int64_t d = MIN (hi, n); d >= MAX (lo, 1); d--)
    if (n % d == 0)
      return d;
  return MAX (1, MIN (fallback, n));
}

/* A register block: p (x p2 for CHWN) rows of nv vectors of vl elements
 * along the layout's contiguous dim. */
typedef struct {
  int64_t vl, nv, p, p2;
  int64_t cu;    /* input channels a block takes at once */
  int64_t pg;    /* CHWN: points a vector holds (batch below the vector) */
} Blocks;

/* The vector length for a contiguous dim of n elements, padded to whole
 * vectors: the power of two up to the machine's vector with the most
 * useful lanes per vector op, vl * n / RUP (n, vl) (the shorter on ties). */
static int64_t
vector_length (int64_t n, int64_t vmax)
{
  int64_t best = 1;
  double best_rate = 1;
  for (int64_t vl = 2; vl <= vmax; vl *= 2)
    {
      double rate = (double) vl * (double) n / (double) ((n + vl - 1) / vl * vl);
      if (rate > best_rate + 1e-9)
        best = vl, best_rate = rate;
    }
  return best;
}

/* Two vectors a row where the dim has them; rows so that the accumulators
 * fill about 24 of AVX-512's 32 registers (12 of 16 otherwise), preferring
 * a row count that divides the dim they run along. */
static Blocks
choose_blocks (const PlConvDesc *c)
{
  const int vb = vector_bytes ();
  const int64_t vmax = vb / (int64_t) pl_dtype_size (c->dtype), budget = vb == 64 ? 24 : 12;
  const int64_t OW = c->out[1], KG = kg (c);
  const bool grouped = pl_conv_direct_nhwc_grouped (c);
  const int64_t n = pl_conv_direct_nhwc_depthwise (c)                  ? c->group
                    : grouped                                          ? c->c_out
                    : c->x_layout == PL_LAYOUT_NHWC ? KG : c->x_layout == PL_LAYOUT_CHWN ? c->batch : OW;
  Blocks b = { 1, 1, 1, 1, 1, 1 };
  /* A block loads and stores its accumulators once per pass, and a pass
   * does cu x taps multiply-adds on each: with one channel a pass (alpha =
   * 1), a 3x3 kernel's 9 were too few — the 14x14 and 7x7 convs of ResNet-18
   * ran at 45-55% of the FMA peak. ceil (32 / taps) channels a pass (4 for
   * 3x3, 1 for 7x7): ResNet-18 in NHWC 16.5 -> 14.9 ms, 64 no better. Each
   * channel's window is still read from memory once per tile; only the
   * staged part of the working set grows (pl_conv_direct_working_set). */
  /* NHWC stages a point's channels in one copy (stage), so it takes twice
   * as many a pass, ceil (64 / taps): 8 for 3x3 (alternating builds: ResNeXt's
   * 8x1024x7x7 groups of 32 0.96 -> 0.91 ms, 8x64x56x56 5.7 -> 5.5 ms), 2
   * for 7x7 (ResNet's stem 0.94 -> 0.89 ms). */
  const int64_t taps = c->kernel[0] * c->kernel[1];
  const int64_t per_pass = c->x_layout == PL_LAYOUT_NHWC ? 64 : 32;
  b.cu = MIN (cg (c), (per_pass + taps - 1) / taps);
  b.vl = vector_length (n, vmax);
  b.nv = (n + b.vl - 1) / b.vl >= 2 ? 2 : 1;
  if (grouped)
    {
      /* whole groups a vector; the accumulators of D_P points beside a
       * group's weight vectors */
      b.vl = MAX (b.vl, KG);
      b.nv = 1;
      b.p = divisor_in (OW, 4, MIN (8, budget - cg (c)), MIN (8, budget - cg (c)));
      return b;
    }
  if (pl_conv_direct_chwn_pointwise (c))
    {
      /* 8 channels' weight broadcasts x 3 vectors of points: about 90% of
       * the FMA peak on data in L1 here, where 4 broadcasts x 6 vectors ran
       * at 75% (a micro-benchmark of the block alone) */
      b.vl = vmax;
      b.nv = 3;
      b.p = budget / 3;   /* 8 with AVX-512's 32 registers, 4 with 16 */
      return b;
    }
  int64_t pmax;
  switch (c->x_layout)
    {
    case PL_LAYOUT_NHWC:   /* rows: points */
      pmax = MIN (12, budget / b.nv);
      /* the pointwise kernel's blocks run on across the rows of a tile */
      b.p = pl_conv_direct_nhwc_pointwise (c) ? pmax : divisor_in (OW, pmax / 2, pmax, pmax / 2);
      break;
    case PL_LAYOUT_CHWN:   /* rows: channels x points (x vectors of points) */
      if (c->batch < vmax && vmax % c->batch == 0)
        {
          /* a batch that divides the vector: a vector holds the images of
           * vmax / N adjacent points, contiguous in x and in the staged
           * window, where padding each point's images to a whole vector
           * left the rest of its lanes idle (batch 8: half of them) */
          b.vl = vmax;
          b.nv = 1;
          b.pg = vmax / c->batch;
        }
      /* 8 channels' weight broadcasts x 2 vectors of points: each tap
       * loads few vectors of the window, which at a batch below the vector
       * start mid-line for every other tap. 4 x 6 before; a harness timing
       * the generated kernels side by side: 8x64x56x56 3x3 8.6 -> 5.9 ms,
       * batch 4 5.6 -> 3.0, batch 16 12.7 -> 11.6, batch 1 1.29 -> 1.07.
       * Groups of fewer channels keep all of them and fill the registers
       * with points. */
      b.p = MIN (KG, budget / 3);   /* 8 with AVX-512's 32 registers, 4 with 16 */
      b.p2 = MAX (1, MIN ((OW + b.pg - 1) / b.pg, b.p == budget / 3 ? 2 / b.nv : budget / b.nv / b.p));
      break;
    default:               /* NCHW, rows: channels */
      pmax = MIN (16, budget / b.nv);
      b.p = divisor_in (KG, pmax / 2, pmax, pmax / 2);
      break;
    }
  return b;
}

int64_t
pl_conv_direct_channels_per_pass (const PlConvDesc *c)
{
  return choose_blocks (c).cu;
}

static int64_t
rup (int64_t a, int64_t q)
{
  return (a + q - 1) / q * q;
}

/* D_WQ: the points a window row is padded to, those a row of blocks reads:
 * NCHW's blocks are vectors along the row, CHWN's vectors hold D_PG points,
 * NHWC's blocks end at the row's last point. (Padding every layout's rows
 * to whole vectors staged 19 columns where a 7-wide 3x3 tile reads 9.) */
static int64_t
window_quantum (const PlConvDesc *c, const Blocks *b)
{
  return c->x_layout == PL_LAYOUT_NCHW ? b->vl : c->x_layout == PL_LAYOUT_CHWN ? b->pg : 1;
}

/* As D_ACC, D_WIN and the weights a step reads (D_CU channels, their taps,
 * z outputs), for the tile clamped to the output as the kernel clamps it. */
int64_t
pl_conv_direct_working_set (const PlConvDesc *c, const int64_t tile[3])
{
  const Blocks b = choose_blocks (c);
  const int64_t tx = CLAMP (tile[0], 1, c->out[1]), ty = CLAMP (tile[1], 1, c->out[0]), tz = CLAMP (tile[2], 1, kg (c));
  const int64_t na = c->x_layout != PL_LAYOUT_CHWN ? 1 : b.pg > 1 ? c->batch : rup (c->batch, b.vl);
  int64_t acc;
  switch (c->x_layout)
    {
    case PL_LAYOUT_NHWC: acc = ty * tx * rup (tz, b.vl); break;
    case PL_LAYOUT_CHWN: acc = tz * ty * rup (tx, b.pg) * na; break;
    default:             acc = tz * ty * rup (tx, b.vl); break;
    }
  const int64_t wy = (ty - 1) * c->strides[0] + (c->kernel[0] - 1) * c->dilations[0] + 1;
  const int64_t wm = rup (tx, window_quantum (c, &b)) + (c->kernel[1] - 1) * c->dilations[1] / c->strides[1] + 1;
  const int64_t window = b.cu * c->strides[1] * wy * wm * na;
  return acc + window + b.cu * c->kernel[0] * c->kernel[1] * tz;
}

/* #undef's every D_ macro that out defines from start, so the next kernel
 * of the translation unit starts clean. */
void
pl_cd_undef_all (GString *out, gsize start)
{
  g_autoptr (GPtrArray) names = g_ptr_array_new_with_free_func (g_free);
  for (const char *p = strstr (out->str + start, "#define D_"); p; p = strstr (p + 1, "#define D_"))
    {
      const char *name = p + strlen ("#define "), *end = name;
      while (g_ascii_isalnum (*end) || *end == '_')
        end++;
      char *n = g_strndup (name, end - name);
      if (g_ptr_array_find_with_equal_func (names, n, g_str_equal, NULL))
        g_free (n);
      else
        g_ptr_array_add (names, n);
    }
  for (guint i = 0; i < names->len; i++)
    g_string_append_printf (out, "#undef %s\n", (const char *) names->pdata[i]);
  g_string_append_c (out, '\n');
}

void
pl_cd_define (GString *out, const char *name, int64_t v)
{
  g_string_append_printf (out, "#define %s %" G_GINT64_FORMAT "\n", name, v);
}

void
pl_conv_direct_emit_c (GString *out, const PlConvDesc *c, const char *name)
{
  const Blocks b = choose_blocks (c);
  const bool f32 = c->dtype == PL_DTYPE_F32;
  const gsize start = out->len;
  const char *T = f32 ? "float" : "double";
  const bool chwn_ = c->x_layout == PL_LAYOUT_CHWN;
  g_string_append_printf (out,
                          "/* %s: direct conv %s, %" G_GINT64_FORMAT "x%" G_GINT64_FORMAT " kernel (conv-direct.c) */\n"
                          "#include <stdint.h>\n#include <stdlib.h>\n#include <string.h>\n",
                          name, pl_layout_name (c->x_layout), c->kernel[0], c->kernel[1]);
  g_string_append_printf (out, "#define D_T %s\n", T);
  const struct { const char *name; int64_t v; } defs[] = {
    { "D_N", c->batch }, { "D_C", c->c_in }, { "D_H", c->in[0] }, { "D_W", c->in[1] }, { "D_K", c->c_out },
    { "D_OH", c->out[0] }, { "D_OW", c->out[1] }, { "D_G", c->group }, { "D_CG", cg (c) }, { "D_KG", kg (c) },
    { "D_KH", c->kernel[0] }, { "D_KW", c->kernel[1] }, { "D_SH", c->strides[0] }, { "D_SW", c->strides[1] },
    { "D_DH", c->dilations[0] }, { "D_DW", c->dilations[1] }, { "D_PT", c->pads[0] }, { "D_PL", c->pads[1] },
    { "D_VL", b.vl }, { "D_NV", b.nv }, { "D_P", b.p }, { "D_PX", b.p2 }, { "D_CU", b.cu },
    { "D_NT", chwn_ ? 1 : c->batch }, { "D_NX", chwn_ ? c->batch : 1 },
    { "D_NA", !chwn_ ? 1 : b.pg > 1 ? c->batch : (c->batch + b.vl - 1) / b.vl * b.vl }, { "D_PG", b.pg },
    { "D_WQ", window_quantum (c, &b) },
  };
  for (size_t i = 0; i < G_N_ELEMENTS (defs); i++)
    pl_cd_define (out, defs[i].name, defs[i].v);
  g_string_append_printf (out, "#define D_NAME %s\n#define D_FN(s) %s_ ## s\n", name, name);
  if (b.vl > 1)
    g_string_append_printf (out, "typedef %s %s_v __attribute__ ((vector_size (%" G_GINT64_FORMAT ")));\n", T, name,
                            b.vl * (int64_t) pl_dtype_size (c->dtype));
  else
    g_string_append_printf (out, "typedef %s %s_v;\n", T, name);
  g_string_append_printf (out, "#define D_V %s_v\n", name);
  static const char *const xoff[] = {
    [PL_LAYOUT_NCHW] = "((ih) * D_W + (iw))",
    [PL_LAYOUT_NHWC] = "(((ih) * D_W + (iw)) * D_C)",
    [PL_LAYOUT_CHWN] = "(((ih) * D_W + (iw)) * D_N)",
  };
  g_string_append_printf (out, "#define D_XOFF(ih, iw) %s\n", xoff[c->x_layout]);
  static const char *const xch[] = {   /* from one channel to the next in x */
    [PL_LAYOUT_NCHW] = "((int64_t) D_H * D_W)", [PL_LAYOUT_NHWC] = "1", [PL_LAYOUT_CHWN] = "((int64_t) D_H * D_W * D_N)",
  };
  g_string_append_printf (out, "#define D_XCH %s\n", xch[c->x_layout]);
  /* gcc prefers 256-bit vectors even where 512-bit ones exist; the blocks are sized for the widest */
  g_string_append (out,
                   "#if defined(__GNUC__) && !defined(__clang__) && defined(__AVX512F__)\n"
                   "#define D_ATTR __attribute__ ((target (\"prefer-vector-width=512\")))\n"
                   "#else\n#define D_ATTR\n#endif\n"
                   "#define D_RUP(a, q) (((a) + (q) - 1) / (q) * (q))\n"
                   "#define D_MIN(a, b) ((a) < (b) ? (a) : (b))\n"
                   "/* the staged window of a tile: rows, columns per stride phase, elements */\n"
                   "#define D_WY(ty) (((ty) - 1) * D_SH + (D_KH - 1) * D_DH + 1)\n"
                   "#define D_WM(tx) (D_RUP (tx, D_WQ) + (D_KW - 1) * D_DW / D_SW + 1)\n"
                   "#define D_WIN(tx, ty) ((size_t) D_CU * D_SW * D_WY (ty) * D_WM (tx) * D_NA)\n"
                   "#define D_WSZ (D_SW * wy * wm * D_NA)\n"
                   "/* the channels, D_CU at a time (the staged windows of D_CU channels), then the rest */\n"
                   "#define D_CHANNEL_LOOP \\\n"
                   "  int64_t c = 0; \\\n"
                   "  for (; c + D_CU <= D_CG; c += D_CU) \\\n"
                   "    { \\\n"
                   "      D_CHANNELS (D_CU) \\\n"
                   "    } \\\n"
                   "  if (D_CU > 1) \\\n"
                   "    for (; c < D_CG; c++) \\\n"
                   "      { \\\n"
                   "        D_CHANNELS (1) \\\n"
                   "      }\n");
  const bool nhwc_ = c->x_layout == PL_LAYOUT_NHWC;
  g_string_append_printf (out,
                          "/* from one point of the staged window to the next, from one channel to the next (stage) */\n"
                          "#define D_WPS %s\n#define D_WUS %s\n",
                          nhwc_ ? "D_CU" : "D_NA", nhwc_ ? "1" : "D_WSZ");
  static const char *const acc[] = {
    [PL_LAYOUT_NCHW] = "((size_t) (tz) * (ty) * D_RUP (tx, D_VL))",
    [PL_LAYOUT_NHWC] = "((size_t) (ty) * (tx) * D_RUP (tz, D_VL))",
    [PL_LAYOUT_CHWN] = "((size_t) (tz) * (ty) * D_RUP (tx, D_PG) * D_NA)",
  };
  g_string_append_printf (out, "#define D_ACC(tx, ty, tz) %s\n\n", acc[c->x_layout]);
  g_string_append (out, vector_io);
  if (pl_conv_direct_nhwc_depthwise (c))
    g_string_append (out, pl_cd_nhwc_depthwise);
  else if (pl_conv_direct_nhwc_grouped (c))
    pl_cd_emit_nhwc_grouped (out, c, b.vl, b.p);
  else if (pl_conv_direct_nhwc_pointwise (c))
    g_string_append (out, pl_cd_nhwc_pointwise);
  else if (pl_conv_direct_chwn_pointwise (c))
    {
      pl_cd_define (out, "D_PTS", c->out[0] * c->out[1] * c->batch);
      pl_cd_define (out, "D_STAGE", CHWN_STAGE_BYTES / (int64_t) pl_dtype_size (c->dtype));
      g_string_append (out, scratch);
      g_string_append (out, pl_cd_chwn_pointwise);
    }
  else
    {
      g_string_append (out, scratch);
      g_string_append (out, stage);
      g_string_append (out, c->x_layout == PL_LAYOUT_NHWC ? nhwc : c->x_layout == PL_LAYOUT_CHWN ? chwn : nchw);
      g_string_append (out, driver);
    }
  pl_cd_undef_all (out, start);
}

guint32
pl_conv_direct_source_hash (const PlConvDesc *c)
{
  g_autoptr (GString) src = g_string_new (NULL);
  pl_conv_direct_emit_c (src, c, "k");
  return g_str_hash (src->str);
}
