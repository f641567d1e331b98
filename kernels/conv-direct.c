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
 */
#define G_LOG_DOMAIN "passlab"
#include "conv-direct.h"

#include <stdio.h>
#include <string.h>

/* Packed weights are followed by this many zeros, so a vector load at the
 * very end never leaves the buffer. */
#define PACK_TAIL 64

/* --- shape helpers ------------------------------------------------------------------ */

static int64_t cg (const PlConvDesc *c) { return c->c_in / c->group; }
static int64_t kg (const PlConvDesc *c) { return c->c_out / c->group; }

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

/* The kernel's signature, its tile clamped to the output, and the tiles
 * along each dim (nx, ny, nz). */
#define KERNEL_HEAD \
  "D_ATTR void\n" \
  "D_NAME (const D_T *restrict x, const D_T *restrict wp, D_T *restrict y, int64_t tx, int64_t ty, int64_t tz)\n" \
  "{\n" \
  "  tx = tx < 1 ? 1 : tx > D_OW ? D_OW : tx;\n" \
  "  ty = ty < 1 ? 1 : ty > D_OH ? D_OH : ty;\n" \
  "  tz = tz < 1 ? 1 : tz > D_KG ? D_KG : tz;\n" \
  "  const int64_t nx = (D_OW + tx - 1) / tx, ny = (D_OH + ty - 1) / ty, nz = (D_KG + tz - 1) / tz;\n"

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

/* Staging cu channels' input windows in the thread's buffer (each D_WSZ
 * after the last; in NHWC a point's channels are read side by side, as
 * they share a cache line), zero outside the image, split by stride phase
 * so that a row of outputs reads a contiguous row of it:
 * win[s][iy][m][0..D_NA) = x(ih0 + iy, iw0 + m*SW + s)
 * for the phases and rows some tap reads (a 1x1 stride-2 conv reads a
 * quarter of its window; the rest is left unwritten),
 * D_NX elements of x (CHWN: the images) padded with zeros to D_NA.
 * An output (oy, ox) and a tap (kh, kw) read phase (kw*DW) % SW, row
 * oy*SH + kh*DH, column ox + (kw*DW) / SW. D_XOFF: where (ih, iw) of the
 * channel is in x. */
static const char stage[] =
  "static D_ATTR void\n"
  "D_FN (stage) (D_T *restrict win, const D_T *restrict xc, int64_t ih0, int64_t iw0, int64_t wy, int64_t wm,\n"
  "              const int cu)\n"
  "{\n"
  "  const int64_t wsz = D_WSZ;\n"
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
  "        D_T *wr = win + (s * wy + iy) * wm * D_NA;\n"
  "        const int64_t ih = ih0 + iy;\n"
  "        if (ih < 0 || ih >= D_H)\n"
  "          {\n"
  "            for (int u = 0; u < cu; u++)\n"
  "              memset (wr + u * wsz, 0, sizeof (D_T) * wm * D_NA);\n"
  "            continue;\n"
  "          }\n"
  "        /* columns lo .. hi read the image, those around them the padding */\n"
  "        const int64_t first = iw0 + s;\n"
  "        int64_t lo = first >= 0 ? 0 : (D_SW - 1 - first) / D_SW;\n"
  "        int64_t hi = first >= D_W ? 0 : (D_W - first + D_SW - 1) / D_SW;\n"
  "        hi = hi < wm ? hi : wm;\n"
  "        lo = lo < hi ? lo : hi;\n"
  "        for (int u = 0; u < cu; u++)\n"
  "          {\n"
  "            memset (wr + u * wsz, 0, sizeof (D_T) * lo * D_NA);\n"
  "            memset (wr + u * wsz + hi * D_NA, 0, sizeof (D_T) * (wm - hi) * D_NA);\n"
  "          }\n"
  "        if (D_SW == 1 && D_NA == D_NX && D_XOFF (0, 1) - D_XOFF (0, 0) == D_NX)\n"
  "          /* the row is contiguous in x (NCHW, and CHWN's images): one copy a channel */\n"
  "          for (int u = 0; u < cu; u++)\n"
  "            memcpy (wr + u * wsz + lo * D_NA, xc + u * D_XCH + D_XOFF (ih, first + lo),\n"
  "                    sizeof (D_T) * (hi - lo) * D_NX);\n"
  "        else\n"
  "          /* a point's channels side by side (NHWC): read together */\n"
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
  "  (((((kw) * D_DW) % D_SW * wy + (oy) * D_SH + (kh) * D_DH) * wm + (ox) + (kw) * D_DW / D_SW) * D_NA)\n\n";

/* The taps of a block: cu staged channels (u), kh, kw; xr the window at
 * the block's first point, wv the weights of the block's first channel. */
#define TAP_LOOP \
  "  for (int u = 0; u < cu; u++)\n" \
  "  for (int kh = 0; kh < D_KH; kh++)\n" \
  "    for (int kw = 0; kw < D_KW; kw++)\n" \
  "      {\n" \
  "        const D_T *xr = win + u * D_WSZ + D_WAT (oy, ox, kh, kw);\n" \
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
  "            r[p][j] += xr[p] * wvec[j];\n"
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
  "              sizeof (D_T) * tzz);\n"
  "}\n\n";

/* CHWN: acc [tz][ty][tx][D_NA] (images padded to whole vectors); a block is
 * pk output channels x px points x nv vectors of images (a weight broadcast
 * times an input's images). */
static const char chwn[] =
  "static inline __attribute__ ((always_inline)) D_ATTR void\n"
  "D_FN (vblock) (D_T *restrict a, int64_t lda, const D_T *restrict win, int64_t wy, int64_t wm, int64_t oy,\n"
  "               int64_t ox, const D_T *restrict wc, const int pk, const int px, const int nv, const int cu)\n"
  "{\n"
  "  D_V r[D_P][D_PX][D_NV];\n"
  "  for (int k = 0; k < pk; k++)\n"
  "    for (int p = 0; p < px; p++)\n"
  "      for (int j = 0; j < nv; j++)\n"
  "        r[k][p][j] = D_FN (vld) (a + k * lda + p * D_NA + j * D_VL);\n"
  TAP_LOOP
  "        for (int p = 0; p < px; p++)\n"
  "          {\n"
  "            D_V xv[D_NV];\n"
  "            for (int j = 0; j < nv; j++)\n"
  "              xv[j] = D_FN (vld) (xr + p * D_NA + j * D_VL);\n"
  "            for (int k = 0; k < pk; k++)\n"
  "              for (int j = 0; j < nv; j++)\n"
  "                r[k][p][j] += wv[k] * xv[j];\n"
  "          }\n"
  "      }\n"
  "  for (int k = 0; k < pk; k++)\n"
  "    for (int p = 0; p < px; p++)\n"
  "      for (int j = 0; j < nv; j++)\n"
  "        D_FN (vst) (a + k * lda + p * D_NA + j * D_VL, r[k][p][j]);\n"
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
  "  for (; ox + D_PX <= txx; ox += D_PX)\n"
  "    D_FN (points) (a + ox * D_NA, lda, win, wy, wm, oy, ox, wc, pk, D_PX, cu);\n"
  "  for (; ox < txx; ox++)\n"
  "    D_FN (points) (a + ox * D_NA, lda, win, wy, wm, oy, ox, wc, pk, 1, cu);\n"
  "}\n\n"
  "static D_ATTR void\n"
  "D_FN (tile) (const D_T *restrict x, const D_T *restrict wp, D_T *restrict y, D_T *restrict buf, int64_t n,\n"
  "             int64_t g, int64_t k0, int64_t oy0, int64_t ox0, int64_t tzz, int64_t tyy, int64_t txx)\n"
  "{\n"
  "  (void) n;\n"
  "  const int64_t lda = tyy * txx * D_NA, wy = D_WY (tyy), wm = D_WM (txx);\n"
  "  D_T *restrict acc = buf, *restrict win = buf + D_RUP (D_ACC (txx, tyy, tzz), 16);\n"
  "  memset (acc, 0, sizeof (D_T) * tzz * lda);\n"
  "#define D_CHANNELS(cu) \\\n"
  "  D_FN (stage) (win, x + (g * D_CG + c) * D_H * D_W * D_N, oy0 * D_SH - D_PT, ox0 * D_SW - D_PL, wy, wm, \\\n"
  "                (cu)); \\\n"
  "  const D_T *wc = wp + (g * D_CG + c) * D_KH * D_KW * D_KG + k0; \\\n"
  "  int64_t kz = 0; \\\n"
  "  for (; kz + D_P <= tzz; kz += D_P) \\\n"
  "    for (int64_t oy = 0; oy < tyy; oy++) \\\n"
  "      D_FN (row) (acc + (kz * tyy + oy) * txx * D_NA, lda, win, wy, wm, oy, txx, wc + kz, D_P, cu); \\\n"
  "  for (; kz < tzz; kz++) \\\n"
  "    for (int64_t oy = 0; oy < tyy; oy++) \\\n"
  "      D_FN (row) (acc + (kz * tyy + oy) * txx * D_NA, lda, win, wy, wm, oy, txx, wc + kz, 1, cu);\n"
  "  D_CHANNEL_LOOP\n"
  "  for (int64_t k = 0; k < tzz; k++)\n"
  "    for (int64_t oy = 0; oy < tyy; oy++)\n"
  "      for (int64_t ox = 0; ox < txx; ox++)\n"
  "        memcpy (y + (((g * D_KG + k0 + k) * D_OH + oy0 + oy) * D_OW + ox0 + ox) * D_N,\n"
  "                acc + ((k * tyy + oy) * txx + ox) * D_NA, sizeof (D_T) * D_N);\n"
  "}\n\n";

/* The entry of the kernels whose task is a block of tx x ty points of one
 * image, every channel (depthwise, small groups): the tile clamped, the
 * tasks, the channels in whole vectors, and room for the weights turned to
 * [tap][ci][channel] (D_CG: 1 for a depthwise conv). */
#define POINT_TASKS_ENTRY \
  "D_ATTR void\n" \
  "D_NAME (const D_T *restrict x, const D_T *restrict wp, D_T *restrict y, int64_t tx, int64_t ty, int64_t tz)\n" \
  "{\n" \
  "  (void) tz;\n" \
  "  tx = tx < 1 ? 1 : tx > D_OW ? D_OW : tx;\n" \
  "  ty = ty < 1 ? 1 : ty > D_OH ? D_OH : ty;\n" \
  "  const int64_t nx = (D_OW + tx - 1) / tx, ny = (D_OH + ty - 1) / ty, cv = D_C / D_VL * D_VL;\n" \
  "  D_T *wt = aligned_alloc (64, D_RUP (sizeof (D_T) * D_KH * D_KW * D_CG * D_C, 64));\n" \
  "  if (!wt)\n" \
  "    abort ();\n"

/* NHWC depthwise: a task is a block of tx x ty output points of one image,
 * every channel; per point, a vector of D_VL channels accumulates the taps
 * (input and weights both contiguous along the channels: no staging). The
 * packed weights ([channel][tap] for a depthwise conv) are turned once per
 * call into [tap][channel]; channels past the last whole vector run scalar. */
static const char nhwc_dw[] =
  POINT_TASKS_ENTRY
  "  for (int64_t c = 0; c < D_C; c++)\n"
  "    for (int64_t t = 0; t < D_KH * D_KW; t++)\n"
  "      wt[t * D_C + c] = wp[c * D_KH * D_KW + t];\n"
  "#pragma omp parallel for collapse(3) schedule(dynamic, 1)\n"
  "  for (int64_t n = 0; n < D_N; n++)\n"
  "    for (int64_t by = 0; by < ny; by++)\n"
  "      for (int64_t bx = 0; bx < nx; bx++)\n"
  "        for (int64_t oy = by * ty; oy < D_MIN (D_OH, (by + 1) * ty); oy++)\n"
  "          for (int64_t ox = bx * tx; ox < D_MIN (D_OW, (bx + 1) * tx); ox++)\n"
  "            {\n"
  "              const int64_t ih0 = oy * D_SH - D_PT, iw0 = ox * D_SW - D_PL;\n"
  "              D_T *yp = y + ((n * D_OH + oy) * D_OW + ox) * D_C;\n"
  "              for (int64_t c = 0; c < cv; c += D_VL)\n"
  "                {\n"
  "                  D_V acc = { 0 };\n"
  "                  for (int64_t kh = 0; kh < D_KH; kh++)\n"
  "                    {\n"
  "                      const int64_t ih = ih0 + kh * D_DH;\n"
  "                      if (ih < 0 || ih >= D_H)\n"
  "                        continue;\n"
  "                      for (int64_t kw = 0; kw < D_KW; kw++)\n"
  "                        {\n"
  "                          const int64_t iw = iw0 + kw * D_DW;\n"
  "                          if (iw >= 0 && iw < D_W)\n"
  "                            acc += D_FN (vld) (x + ((n * D_H + ih) * D_W + iw) * D_C + c)\n"
  "                                   * D_FN (vld) (wt + (kh * D_KW + kw) * D_C + c);\n"
  "                        }\n"
  "                    }\n"
  "                  D_FN (vst) (yp + c, acc);\n"
  "                }\n"
  "              for (int64_t c = cv; c < D_C; c++)\n"
  "                {\n"
  "                  D_T acc = 0;\n"
  "                  for (int64_t kh = 0; kh < D_KH; kh++)\n"
  "                    for (int64_t kw = 0; kw < D_KW; kw++)\n"
  "                      {\n"
  "                        const int64_t ih = ih0 + kh * D_DH, iw = iw0 + kw * D_DW;\n"
  "                        if (ih >= 0 && ih < D_H && iw >= 0 && iw < D_W)\n"
  "                          acc += x[((n * D_H + ih) * D_W + iw) * D_C + c] * wt[(kh * D_KW + kw) * D_C + c];\n"
  "                      }\n"
  "                  yp[c] = acc;\n"
  "                }\n"
  "            }\n"
  "  free (wt);\n"
  "}\n\n";

/* NHWC grouped, small groups (pl_conv_direct_nhwc_grouped): a task is a
 * block of tx x ty output points of one image, every channel; a register
 * block is up to D_P points of a row x one vector of D_VL output channels,
 * which spans D_VL / D_KG whole groups. Their inputs are the same D_VL
 * channels of x (as many input as output channels a group): a vector load
 * of x, then for each of the D_CG input channels of a group a shuffle that
 * broadcasts that channel's lane across its group's lanes and
 * multiply-adds with the weights for that channel (written out per channel
 * by the generator: D_FN (gfma), D_FN (gfan)); weights [tap][ci][k], turned
 * from the packed ones at each call, by all the threads (one thread doing
 * it showed in the time of ResNeXt's 0.2 ms convs; the packed order is
 * shared with the CUDA kernel, so it stays). No staging: x is read in place.
 *
 * A shuffle costs about what a multiply-add does here, so at stride 1 the
 * blocks are input-stationary (each input shuffled once a channel for the
 * D_KW points that read it, about 1/3 of the shuffles at 3x3), reading
 * zeros outside the image where a block reaches an edge; else
 * output-stationary (a shuffle a multiply-add), the edges' points one at a
 * time. The blocks are instantiated for each point count (D_IBLOCKS,
 * generated), so that they unroll. Channels past the last whole vector run
 * a point at a time, scalar. */
static const char nhwc_grouped[] =
  "/* pb points from ox of row oy (zeros outside the image when checked).\n"
  " * Output-stationary: per tap, a vector of x a point. Input-stationary\n"
  " * (stride 1): each input of a window row is shuffled once a channel and\n"
  " * serves the up to D_KW points whose windows hold it. */\n"
  "static inline __attribute__ ((always_inline)) D_ATTR void\n"
  "D_FN (gblock) (const D_T *restrict x, const D_T *restrict wt, D_T *restrict y, int64_t n, int64_t oy,\n"
  "               int64_t ox, int64_t c, const int pb, const int checked, const int input_stationary)\n"
  "{\n"
  "  D_V acc[D_P];\n"
  "  for (int p = 0; p < pb; p++)\n"
  "    acc[p] = (D_V) { 0 };\n"
  "  for (int64_t kh = 0; kh < D_KH; kh++)\n"
  "    {\n"
  "      const int64_t ih = oy * D_SH - D_PT + kh * D_DH;\n"
  "      if (ih < 0 || ih >= D_H)\n"
  "        continue;\n"
  "      if (input_stationary)\n"
  "        {\n"
  "          const D_T *restrict xr = x + ((n * D_H + ih) * D_W + ox - D_PL) * D_C + c;\n"
  "          const D_T *restrict wr = wt + kh * D_KW * D_CG * D_C + c;\n"
  "          D_UNROLL\n"
  "          for (int i = 0; i < pb + (D_KW - 1) * D_DW; i++)\n"
  "            {\n"
  "              const int64_t iw = ox - D_PL + i;\n"
  "              D_FN (gfan) (acc, !checked || (iw >= 0 && iw < D_W) ? D_FN (vld) (xr + i * D_C) : (D_V) { 0 }, wr, i,\n"
  "                           pb);\n"
  "            }\n"
  "          continue;\n"
  "        }\n"
  "      for (int64_t kw = 0; kw < D_KW; kw++)\n"
  "        {\n"
  "          const int64_t iw = ox * D_SW - D_PL + kw * D_DW;\n"
  "          const D_T *restrict xr = x + ((n * D_H + ih) * D_W + iw) * D_C + c;\n"
  "          const D_T *restrict wr = wt + (kh * D_KW + kw) * D_CG * D_C + c;\n"
  "          D_V wv[D_CG], xv[D_P];\n"
  "          for (int ci = 0; ci < D_CG; ci++)\n"
  "            wv[ci] = D_FN (vld) (wr + ci * D_C);\n"
  "          for (int p = 0; p < pb; p++)\n"
  "            xv[p] = !checked || (iw + p * D_SW >= 0 && iw + p * D_SW < D_W) ? D_FN (vld) (xr + p * D_SW * D_C)\n"
  "                                                                            : (D_V) { 0 };\n"
  "          D_FN (gfma) (acc, xv, wv, pb);\n"
  "        }\n"
  "    }\n"
  "  for (int p = 0; p < pb; p++)\n"
  "    D_FN (vst) (y + ((n * D_OH + oy) * D_OW + ox + p) * D_C + c, acc[p]);\n"
  "}\n"
  "\n"
  POINT_TASKS_ENTRY
  "  /* the first and last outputs of a row whose windows lie inside the image in x */\n"
  "  const int64_t in0 = (D_PL + D_SW - 1) / D_SW;\n"
  "  const int64_t in1 = D_W - 1 + D_PL - (D_KW - 1) * D_DW < 0 ? -1 : (D_W - 1 + D_PL - (D_KW - 1) * D_DW) / D_SW;\n"
  "#pragma omp parallel\n"
  "  {\n"
  "#pragma omp for\n"
  "  for (int64_t k = 0; k < D_C; k++)\n"
  "    for (int64_t ci = 0; ci < D_CG; ci++)\n"
  "      for (int64_t t = 0; t < D_KH * D_KW; t++)\n"
  "        wt[(t * D_CG + ci) * D_C + k] = wp[((k / D_KG * D_CG + ci) * D_KH * D_KW + t) * D_KG + k % D_KG];\n"
  "#pragma omp for collapse(3) schedule(dynamic, 1)\n"
  "  for (int64_t n = 0; n < D_N; n++)\n"
  "    for (int64_t by = 0; by < ny; by++)\n"
  "      for (int64_t bx = 0; bx < nx; bx++)\n"
  "        for (int64_t oy = by * ty; oy < D_MIN (D_OH, (by + 1) * ty); oy++)\n"
  "          {\n"
  "            const int64_t ox0 = bx * tx, ox1 = D_MIN (D_OW, (bx + 1) * tx);\n"
  "            const int64_t lo = D_MIN (ox1, D_MAX (ox0, in0)), hi = D_MAX (lo, D_MIN (ox1, in1 + 1));\n"
  "            for (int64_t c = 0; c < cv; c += D_VL)\n"
  "              {\n"
  "#if D_SW == 1\n"
  "                /* blocks of D_P points along the whole row, the edges' with tests */\n"
  "                (void) lo, (void) hi;\n"
  "                for (int64_t ox = ox0; ox < ox1; ox += D_P)\n"
  "                  {\n"
  "                    if (ox1 - ox < D_P)\n"
  "                      D_IBLOCKS (ox1 - ox)\n"
  "                    else if (ox < in0 || ox + D_P - 1 > in1)\n"
  "                      D_FN (gblock) (x, wt, y, n, oy, ox, c, D_P, 1, 1);\n"
  "                    else\n"
  "                      D_FN (gblock) (x, wt, y, n, oy, ox, c, D_P, 0, 1);\n"
  "                  }\n"
  "#else\n"
  "                /* the edges a point at a time, with tests; blocks inside */\n"
  "                for (int64_t ox = ox0; ox < lo; ox++)\n"
  "                  D_FN (gblock) (x, wt, y, n, oy, ox, c, 1, 1, 0);\n"
  "                int64_t ox = lo;\n"
  "                for (; ox + D_P <= hi; ox += D_P)\n"
  "                  D_FN (gblock) (x, wt, y, n, oy, ox, c, D_P, 0, 0);\n"
  "                if (ox < hi)\n"
  "                  D_IBLOCKS (hi - ox)\n"
  "                for (ox = hi; ox < ox1; ox++)\n"
  "                  D_FN (gblock) (x, wt, y, n, oy, ox, c, 1, 1, 0);\n"
  "#endif\n"
  "              }\n"
  "            for (int64_t c = cv; c < D_C; c++)\n"
  "              for (int64_t ox = ox0; ox < ox1; ox++)\n"
  "                {\n"
  "                  D_T acc = 0;\n"
  "                  for (int64_t kh = 0; kh < D_KH; kh++)\n"
  "                    for (int64_t kw = 0; kw < D_KW; kw++)\n"
  "                      {\n"
  "                        const int64_t ih = oy * D_SH - D_PT + kh * D_DH, iw = ox * D_SW - D_PL + kw * D_DW;\n"
  "                        if (ih >= 0 && ih < D_H && iw >= 0 && iw < D_W)\n"
  "                          for (int64_t ci = 0; ci < D_CG; ci++)\n"
  "                            acc += x[((n * D_H + ih) * D_W + iw) * D_C + c / D_KG * D_KG + ci]\n"
  "                                   * wt[((kh * D_KW + kw) * D_CG + ci) * D_C + c];\n"
  "                      }\n"
  "                  y[((n * D_OH + oy) * D_OW + ox) * D_C + c] = acc;\n"
  "                }\n"
  "          }\n"
  "  }\n"
  "  free (wt);\n"
  "}\n"
  "\n";

/* D_FN (gfma) for the grouped kernel: acc + sum over the group's input
 * channels ci of (x's lane ci of each group, broadcast over the group) *
 * w[ci], a shuffle with constant lanes per ci (GCC 12 and clang have
 * __builtin_shufflevector; older GCC takes __builtin_shuffle and a mask). */
static void
emit_group_fma (GString *out, const PlConvDesc *c, int64_t vl)
{
  const bool f32 = c->dtype == PL_DTYPE_F32;
  g_string_append_printf (out, "typedef %s D_FN (vi) __attribute__ ((vector_size (%" G_GINT64_FORMAT ")));\n",
                          f32 ? "int32_t" : "int64_t", vl * (int64_t) pl_dtype_size (c->dtype));
  g_string_append (out, "#if defined(__clang__) || __GNUC__ >= 12\n"
                        "#define D_SHUF(v, ...) __builtin_shufflevector (v, v, __VA_ARGS__)\n"
                        "#else\n"
                        "#define D_SHUF(v, ...) __builtin_shuffle (v, (D_FN (vi)) { __VA_ARGS__ })\n"
                        "#endif\n"
                        "static inline __attribute__ ((always_inline)) D_ATTR void\n"
                        "D_FN (gfma) (D_V *restrict acc, const D_V *restrict xv, const D_V *restrict w, const int pb)\n{\n"
                        "  D_V d[D_P];\n");
  /* A broadcast within 128 bits is one cheap in-lane shuffle; a group wider
   * than that first has its 128-bit chunk j copied over the group (one
   * shuffle of whole 128-bit lanes), then broadcasts within 128 bits from
   * it. Each channel's multiply-adds run over all the points before the
   * next channel's: one point's chain of D_CG dependent multiply-adds at a
   * time ran at the FMA's latency. */
  const int64_t KG = kg (c), q = MIN (16 / (int64_t) pl_dtype_size (c->dtype), KG);
  g_autoptr (GString) gfan = g_string_new (
    "static inline __attribute__ ((always_inline)) D_ATTR void\n"
    "D_FN (gfan) (D_V *restrict acc, const D_V xv, const D_T *restrict wr, const int i, const int pb)\n{\n"
    "  D_V d, s;\n");
  for (int64_t j = 0; j < KG / q; j++)
    {
      g_autoptr (GString) chunk = g_string_new ("");
      for (int64_t lane = 0; lane < vl; lane++)
        g_string_append_printf (chunk, ", %" G_GINT64_FORMAT, lane / KG * KG + j * q + lane % q);
      g_string_append_printf (out, "  for (int p = 0; p < pb; p++)\n    d[p] = D_SHUF (xv[p]%s);\n", chunk->str);
      g_string_append_printf (gfan, "  d = D_SHUF (xv%s);\n", chunk->str);
      for (int64_t ci = j * q; ci < (j + 1) * q; ci++)
        {
          g_autoptr (GString) bcast = g_string_new ("");
          for (int64_t lane = 0; lane < vl; lane++)
            g_string_append_printf (bcast, ", %" G_GINT64_FORMAT, lane / q * q + ci % q);
          g_string_append_printf (out, "  for (int p = 0; p < pb; p++)\n    acc[p] += D_SHUF (d[p]%s) * w[%" G_GINT64_FORMAT
                                  "];\n", bcast->str, ci);
          g_string_append_printf (gfan, "  s = D_SHUF (d%s);\n"
                                  "  for (int kw = 0; kw < D_KW; kw++)\n"
                                  "    if (i - kw * D_DW >= 0 && i - kw * D_DW < pb)\n"
                                  "      acc[i - kw * D_DW] += s * D_FN (vld) (wr + (kw * D_CG + %" G_GINT64_FORMAT
                                  ") * D_C);\n", bcast->str, ci);
        }
    }
  g_string_append (out, "}\n\n");
  g_string_append_len (out, gfan->str, (gssize) gfan->len);
  g_string_append (out, "}\n\n");
}

/* NHWC pointwise (1x1, no padding, any stride): a GEMM of the points'
 * input rows by the packed weights ([g][c][k]: W^T per group), with no
 * staging — a point's channels are contiguous in x, so a block of D_P
 * points broadcasts its inputs straight from x while D_NV vectors of
 * output channels accumulate in registers over every input channel, then
 * go straight to y. A task is a tile of tx x ty points of one image and tz
 * channels of one group; its blocks run on across the tile's rows (D_P
 * points whatever the width: 7x7 rows took blocks of 7). Of the tile's
 * weights and input points the larger is walked once, outermost, the other
 * once per block of it: ResNeXt's 1x1 convs at 7x7 (1024 -> 2048, 8 MiB of
 * weights) read every weight once per output row before: 0.92-0.99 ->
 * 0.78-0.85 ms alone, those at 14x14 (512 -> 1024) 0.78-0.82 -> 0.57-0.59
 * ms, and ResNeXt-50 in NHWC 41.7-49.9 -> 37.3-39.0 ms at batch 1
 * (alternating builds).
 * Channels past the last whole vector of a tile run
 * in a block whose padded lanes read on into the next weights (or
 * PACK_TAIL) and are stored through a buffer, never past the tile. The
 * generic NHWC kernel staged each input channel with a gather of stride C
 * and kept its accumulators in memory: MobileNetV2's 16 -> 96 expansion at
 * 112 x 112 ran at 1.8 ms, against 1.0 for the NCHW GEMM. */
static const char nhwc_pw[] =
  "static inline __attribute__ ((always_inline)) D_ATTR void\n"
  "D_FN (pblock) (const D_T *restrict x, const D_T *restrict wc, D_T *restrict y, const int64_t *xo,\n"
  "               const int64_t *yo, const int pb, const int nv, const int64_t live)\n"
  "{\n"
  "  D_V r[D_P][D_NV];\n"
  "  for (int p = 0; p < pb; p++)\n"
  "    for (int j = 0; j < nv; j++)\n"
  "      r[p][j] = (D_V) { 0 };\n"
  "  for (int64_t c = 0; c < D_CG; c++)\n"
  "    {\n"
  "      D_V wv[D_NV];\n"
  "      for (int j = 0; j < nv; j++)\n"
  "        wv[j] = D_FN (vld) (wc + c * D_KG + j * D_VL);\n"
  "      for (int p = 0; p < pb; p++)\n"
  "        {\n"
  "          const D_T xs = x[xo[p] + c];\n"
  "          for (int j = 0; j < nv; j++)\n"
  "            r[p][j] += xs * wv[j];\n"
  "        }\n"
  "    }\n"
  "  if (live == nv * D_VL)\n"
  "    for (int p = 0; p < pb; p++)\n"
  "      for (int j = 0; j < nv; j++)\n"
  "        D_FN (vst) (y + yo[p] + j * D_VL, r[p][j]);\n"
  "  else\n"
  "    for (int p = 0; p < pb; p++)\n"
  "      {\n"
  "        D_T t[D_NV * D_VL];\n"
  "        for (int j = 0; j < nv; j++)\n"
  "          D_FN (vst) (t + j * D_VL, r[p][j]);\n"
  "        memcpy (y + yo[p], t, sizeof (D_T) * live);\n"
  "      }\n"
  "}\n\n"
  "/* pb points of the tile from its i-th (row-major over its tw columns from oy0, ox0), the nv\n"
  " * vectors of channels from k (live of them) of group g */\n"
  "static inline __attribute__ ((always_inline)) D_ATTR void\n"
  "D_FN (points) (const D_T *restrict x, const D_T *restrict wg, D_T *restrict y, int64_t n, int64_t g,\n"
  "               int64_t oy0, int64_t ox0, int64_t tw, int64_t i, int64_t k, const int nv, int64_t live,\n"
  "               const int pb)\n"
  "{\n"
  "  int64_t xo[D_P], yo[D_P];\n"
  "  int64_t oy = oy0 + i / tw, ox = ox0 + i % tw;\n"
  "  for (int p = 0; p < pb; p++)\n"
  "    {\n"
  "      xo[p] = ((n * D_H + oy * D_SH) * D_W + ox * D_SW) * D_C + g * D_CG;\n"
  "      yo[p] = ((n * D_OH + oy) * D_OW + ox) * D_K + g * D_KG;\n"
  "      if (++ox == ox0 + tw)\n"
  "        ox = ox0, oy++;\n"
  "    }\n"
  "  D_FN (pblock) (x, wg + k, y + k, xo, yo, pb, nv, live);\n"
  "}\n\n"
  "/* The tile's points i .. i1 for nv vectors of channels from k: blocks of D_P points, the\n"
  " * rest in blocks of 8, 4, 2 and 1 (each count a constant, so that its block unrolls) */\n"
  "static inline __attribute__ ((always_inline)) D_ATTR void\n"
  "D_FN (span) (const D_T *restrict x, const D_T *restrict wg, D_T *restrict y, int64_t n, int64_t g,\n"
  "             int64_t oy0, int64_t ox0, int64_t tw, int64_t i, int64_t i1, int64_t k, const int nv,\n"
  "             int64_t live)\n"
  "{\n"
  "  for (; i + D_P <= i1; i += D_P)\n"
  "    D_FN (points) (x, wg, y, n, g, oy0, ox0, tw, i, k, nv, live, D_P);\n"
  "  if (D_P > 8 && i + 8 <= i1)\n"
  "    D_FN (points) (x, wg, y, n, g, oy0, ox0, tw, i, k, nv, live, D_P > 8 ? 8 : 1), i += 8;\n"
  "  if (D_P > 4 && i + 4 <= i1)\n"
  "    D_FN (points) (x, wg, y, n, g, oy0, ox0, tw, i, k, nv, live, D_P > 4 ? 4 : 1), i += 4;\n"
  "  if (D_P > 2 && i + 2 <= i1)\n"
  "    D_FN (points) (x, wg, y, n, g, oy0, ox0, tw, i, k, nv, live, D_P > 2 ? 2 : 1), i += 2;\n"
  "  if (i < i1)\n"
  "    D_FN (points) (x, wg, y, n, g, oy0, ox0, tw, i, k, nv, live, 1);\n"
  "}\n\n"
  "/* The tile's points i0 .. i1, channels k .. k1: whole blocks of D_NV vectors, then single vectors */\n"
  "static inline __attribute__ ((always_inline)) D_ATTR void\n"
  "D_FN (kblocks) (const D_T *restrict x, const D_T *restrict wg, D_T *restrict y, int64_t n, int64_t g,\n"
  "                int64_t oy0, int64_t ox0, int64_t tw, int64_t i0, int64_t i1, int64_t k, int64_t k1)\n"
  "{\n"
  "  for (; k + D_NV * D_VL <= k1; k += D_NV * D_VL)\n"
  "    D_FN (span) (x, wg, y, n, g, oy0, ox0, tw, i0, i1, k, D_NV, D_NV * D_VL);\n"
  "  for (; k < k1; k += D_VL)\n"
  "    D_FN (span) (x, wg, y, n, g, oy0, ox0, tw, i0, i1, k, 1, D_MIN (D_VL, k1 - k));\n"
  "}\n\n"
  KERNEL_HEAD
  "#pragma omp parallel for collapse(5) schedule(dynamic, 1)\n"
  "  for (int64_t n = 0; n < D_N; n++)\n"
  "    for (int64_t g = 0; g < D_G; g++)\n"
  "      for (int64_t bz = 0; bz < nz; bz++)\n"
  "        for (int64_t by = 0; by < ny; by++)\n"
  "          for (int64_t bx = 0; bx < nx; bx++)\n"
  "            {\n"
  "              const int64_t k0 = bz * tz, k1 = D_MIN (D_KG, k0 + tz);\n"
  "              const int64_t ox0 = bx * tx, tw = D_MIN (D_OW, ox0 + tx) - ox0;\n"
  "              const int64_t oy0 = by * ty, np = tw * (D_MIN (D_OH, oy0 + ty) - oy0);\n"
  "              const D_T *wg = wp + g * D_CG * D_KG;\n"
  "              /* the larger of the tile's weights and its input points is read once, the\n"
  "               * other once per block of the first, from the cache the tile fits */\n"
  "              if (k1 - k0 > np)\n"
  "                D_FN (kblocks) (x, wg, y, n, g, oy0, ox0, tw, 0, np, k0, k1);\n"
  "              else\n"
  "                for (int64_t i = 0; i < np; i += D_P)\n"
  "                  D_FN (kblocks) (x, wg, y, n, g, oy0, ox0, tw, i, D_MIN (np, i + D_P), k0, k1);\n"
  "            }\n"
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
  Blocks b = { 1, 1, 1, 1, 1 };
  /* A block loads and stores its accumulators once per pass, and a pass
   * does cu x taps multiply-adds on each: with one channel a pass (alpha =
   * 1), a 3x3 kernel's 9 were too few — the 14x14 and 7x7 convs of ResNet-18
   * ran at 45-55% of the FMA peak. ceil (32 / taps) channels a pass (4 for
   * 3x3, 1 for 7x7): ResNet-18 in NHWC 16.5 -> 14.9 ms, 64 no better. Each
   * channel's window is still read from memory once per tile; only the
   * staged part of the working set grows (pl_conv_direct_working_set). */
  const int64_t taps = c->kernel[0] * c->kernel[1];
  b.cu = MIN (cg (c), (32 + taps - 1) / taps);
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
  int64_t pmax;
  switch (c->x_layout)
    {
    case PL_LAYOUT_NHWC:   /* rows: points */
      pmax = MIN (12, budget / b.nv);
      /* the pointwise kernel's blocks run on across the rows of a tile */
      b.p = pl_conv_direct_nhwc_pointwise (c) ? pmax : divisor_in (OW, pmax / 2, pmax, pmax / 2);
      break;
    case PL_LAYOUT_CHWN:   /* rows: channels x points */
      b.p = MIN (KG, 4);
      b.p2 = MAX (1, MIN (OW, budget / b.nv / b.p));
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

/* As D_ACC, D_WIN and the weights a step reads (D_CU channels, their taps,
 * z outputs), for the tile clamped to the output as the kernel clamps it. */
int64_t
pl_conv_direct_working_set (const PlConvDesc *c, const int64_t tile[3])
{
  const Blocks b = choose_blocks (c);
  const int64_t tx = CLAMP (tile[0], 1, c->out[1]), ty = CLAMP (tile[1], 1, c->out[0]), tz = CLAMP (tile[2], 1, kg (c));
  const int64_t na = c->x_layout == PL_LAYOUT_CHWN ? rup (c->batch, b.vl) : 1;
  int64_t acc;
  switch (c->x_layout)
    {
    case PL_LAYOUT_NHWC: acc = ty * tx * rup (tz, b.vl); break;
    case PL_LAYOUT_CHWN: acc = tz * ty * tx * na; break;
    default:             acc = tz * ty * rup (tx, b.vl); break;
    }
  const int64_t wy = (ty - 1) * c->strides[0] + (c->kernel[0] - 1) * c->dilations[0] + 1;
  const int64_t wm = rup (tx, b.vl) + (c->kernel[1] - 1) * c->dilations[1] / c->strides[1] + 1;
  const int64_t window = b.cu * c->strides[1] * wy * wm * na;
  return acc + window + b.cu * c->kernel[0] * c->kernel[1] * tz;
}

/* #undef's every D_ macro that out defines from start, so the next kernel
 * of the translation unit starts clean. */
static void
undef_all (GString *out, gsize start)
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

static void
define (GString *out, const char *name, int64_t v)
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
    { "D_NA", chwn_ ? (c->batch + b.vl - 1) / b.vl * b.vl : 1 },
  };
  for (size_t i = 0; i < G_N_ELEMENTS (defs); i++)
    define (out, defs[i].name, defs[i].v);
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
                   "#define D_WM(tx) (D_RUP (tx, D_VL) + (D_KW - 1) * D_DW / D_SW + 1)\n"
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
  static const char *const acc[] = {
    [PL_LAYOUT_NCHW] = "((size_t) (tz) * (ty) * D_RUP (tx, D_VL))",
    [PL_LAYOUT_NHWC] = "((size_t) (ty) * (tx) * D_RUP (tz, D_VL))",
    [PL_LAYOUT_CHWN] = "((size_t) (tz) * (ty) * (tx) * D_NA)",
  };
  g_string_append_printf (out, "#define D_ACC(tx, ty, tz) %s\n\n", acc[c->x_layout]);
  g_string_append (out, vector_io);
  if (pl_conv_direct_nhwc_depthwise (c))
    g_string_append (out, nhwc_dw);
  else if (pl_conv_direct_nhwc_grouped (c))
    {
      emit_group_fma (out, c, b.vl);
      /* the block for a constant point count below D_P (so that it unrolls) */
      /* stride 1: the row's last block, tested; else a block inside */
      g_string_append (out, c->strides[1] == 1 ? "#define D_IBLOCK(pbc) D_FN (gblock) (x, wt, y, n, oy, ox, c, pbc, 1, 1)\n"
                                                : "#define D_IBLOCK(pbc) D_FN (gblock) (x, wt, y, n, oy, ox, c, pbc, 0, 0)\n");
      g_string_append (out, "#define D_IBLOCKS(pb) \\\n  switch (pb) \\\n    { \\\n");
      for (int64_t pb = 1; pb < b.p; pb++)
        g_string_append_printf (out, "    case %" G_GINT64_FORMAT ": D_IBLOCK (%" G_GINT64_FORMAT "); break; \\\n", pb, pb);
      g_string_append (out, "    }\n"
                            "#if defined(__clang__)\n#define D_UNROLL _Pragma (\"unroll\")\n"
                            "#else\n#define D_UNROLL _Pragma (\"GCC unroll 32\")\n#endif\n"
                            "#define D_MAX(a, b) ((a) > (b) ? (a) : (b))\n");
      g_string_append (out, nhwc_grouped);
    }
  else if (pl_conv_direct_nhwc_pointwise (c))
    g_string_append (out, nhwc_pw);
  else
    {
      g_string_append (out, scratch);
      g_string_append (out, stage);
      g_string_append (out, c->x_layout == PL_LAYOUT_NHWC ? nhwc : c->x_layout == PL_LAYOUT_CHWN ? chwn : nchw);
      g_string_append (out, driver);
    }
  undef_all (out, start);
}

/* --- CUDA emission --------------------------------------------------------------------- */

/* What one CUDA block holds: its tile, threads, points per thread, and the
 * input window (WX x WY) staged per channel. */
typedef struct {
  int64_t tx, ty, tz, wx, wy, threads, ppt, shared_bytes;
} CudaTile;

/* The static shared memory a block may use without opting in. */
#define CUDA_SHARED_BYTES (48 << 10)
/* The fast memory and parallel units the pebble rule gets for a GPU block:
 * the block's 48 KiB (its outputs live in registers of about that size) and
 * an H100's 132 SMs. */
#define CUDA_PEBBLE_UNITS 132

static void
cuda_tile_measure (const PlConvDesc *c, CudaTile *t)
{
  t->wx = (t->tx - 1) * c->strides[1] + (c->kernel[1] - 1) * c->dilations[1] + 1;
  t->wy = (t->ty - 1) * c->strides[0] + (c->kernel[0] - 1) * c->dilations[0] + 1;
  t->threads = MIN (256, (t->tx * t->ty + 31) / 32 * 32);
  t->ppt = (t->tx * t->ty + t->threads - 1) / t->threads;
  t->shared_bytes = (t->wx * t->wy + t->tz * c->kernel[0] * c->kernel[1]) * (int64_t) pl_dtype_size (c->dtype);
}

/* The tile of c->tile (the pebble tile for zeros), cut down until its
 * shared memory fits, z <= 64 and a thread holds at most 4 points (its
 * accumulators stay in registers and the unrolled loops small). */
static CudaTile
cuda_tile (const PlConvDesc *c)
{
  int64_t tile[3];
  if (c->tile[0] > 0 && c->tile[1] > 0 && c->tile[2] > 0)
    memcpy (tile, c->tile, sizeof tile);
  else
    {
      /* a block holds one image in every layout: the rule's tile is NCHW's
       * (a CHWN tile on the CPU holds the batch) */
      PlConvDesc per_image = *c;
      per_image.x_layout = per_image.y_layout = PL_LAYOUT_NCHW;
      pl_conv_pebble_tile (&per_image, CUDA_SHARED_BYTES, CUDA_PEBBLE_UNITS, 1, tile);
    }
  CudaTile t = { MIN (tile[0], c->out[1]), MIN (tile[1], c->out[0]), MIN (MIN (tile[2], kg (c)), 64) };
  for (;;)
    {
      cuda_tile_measure (c, &t);
      if (t.shared_bytes <= CUDA_SHARED_BYTES && t.ppt <= 4)
        break;
      if (t.tx == 1 && t.ty == 1 && t.tz == 1)
        break;   /* a huge kernel window: nothing smaller */
      if (t.tx >= t.ty && t.tx > 1)
        t.tx = (t.tx + 1) / 2;
      else if (t.ty > 1)
        t.ty = (t.ty + 1) / 2;
      else
        t.tz = (t.tz + 1) / 2;
    }
  return t;
}

static const char cuda_body[] =
  "extern \"C\" __global__ void __launch_bounds__ (D_THREADS)\n"
  "D_NAME (const D_T *__restrict__ x, const D_T *__restrict__ wp, D_T *__restrict__ y)\n"
  "{\n"
  "  __shared__ D_T win[D_WY * D_WX];\n"
  "  __shared__ D_T ws[D_TZ * D_KH * D_KW];\n"
  "  const int tid = threadIdx.x;\n"
  "  const long long ox0 = (blockIdx.x % D_NX) * D_TX, oy0 = (blockIdx.x / D_NX) * D_TY;\n"
  "  for (long long gz = blockIdx.y; gz < D_G * D_NZ; gz += gridDim.y)\n"
  "    for (long long n = blockIdx.z; n < D_N; n += gridDim.z)\n"
  "      {\n"
  "        const long long g = gz / D_NZ, k0 = (gz % D_NZ) * D_TZ;\n"
  "        D_T acc[D_PPT][D_TZ];\n"
  "#pragma unroll\n"
  "        for (int q = 0; q < D_PPT; q++)\n"
  "#pragma unroll\n"
  "          for (int k = 0; k < D_TZ; k++)\n"
  "            acc[q][k] = 0;\n"
  "        for (long long c = 0; c < D_CG; c++)\n"
  "          {\n"
  "            /* stage channel c: its input window and its z * Hk * Wk weights */\n"
  "            __syncthreads ();\n"
  "            for (int i = tid; i < D_WY * D_WX; i += D_THREADS)\n"
  "              {\n"
  "                const long long ih = oy0 * D_SH - D_PT + i / D_WX, iw = ox0 * D_SW - D_PL + i % D_WX;\n"
  "                win[i] = ih >= 0 && ih < D_H && iw >= 0 && iw < D_W\n"
  "                           ? x[n * D_XN + (g * D_CG + c) * D_XC + ih * D_XH + iw * D_XW] : (D_T) 0;\n"
  "              }\n"
  "            for (int i = tid; i < D_TZ * D_KH * D_KW; i += D_THREADS)\n"
  "              {\n"
  "                const long long k = k0 + i / (D_KH * D_KW), r = i % (D_KH * D_KW);\n"
  "                ws[i] = k < D_KG ? wp[((g * D_CG + c) * D_KH * D_KW + r) * D_KG + k] : (D_T) 0;\n"
  "              }\n"
  "            __syncthreads ();\n"
  "#pragma unroll\n"
  "            for (int q = 0; q < D_PPT; q++)\n"
  "              {\n"
  "                const int p = tid + q * D_THREADS;\n"
  "                if (p >= D_TX * D_TY)\n"
  "                  break;\n"
  "                const int py = p / D_TX, px = p % D_TX;\n"
  "                for (int kh = 0; kh < D_KH; kh++)\n"
  "                  for (int kw = 0; kw < D_KW; kw++)\n"
  "                    {\n"
  "                      const D_T xv = win[(py * D_SH + kh * D_DH) * D_WX + px * D_SW + kw * D_DW];\n"
  "#pragma unroll\n"
  "                      for (int k = 0; k < D_TZ; k++)\n"
  "                        acc[q][k] += xv * ws[k * D_KH * D_KW + kh * D_KW + kw];\n"
  "                    }\n"
  "              }\n"
  "          }\n"
  "#pragma unroll\n"
  "        for (int q = 0; q < D_PPT; q++)\n"
  "          {\n"
  "            const int p = tid + q * D_THREADS;\n"
  "            const long long oy = oy0 + p / D_TX, ox = ox0 + p % D_TX;\n"
  "            if (p >= D_TX * D_TY)\n"
  "              break;\n"
  "            if (oy >= D_OH || ox >= D_OW)\n"
  "              continue;\n"
  "#pragma unroll\n"
  "            for (int k = 0; k < D_TZ; k++)\n"
  "              if (k0 + k < D_KG)\n"
  "                y[n * D_YN + (g * D_KG + k0 + k) * D_YC + oy * D_YH + ox * D_YW] = acc[q][k];\n"
  "          }\n"
  "      }\n"
  "}\n";

void
pl_conv_direct_emit_cuda (GString *out, const PlConvDesc *c, const char *name, unsigned grid[3], unsigned block[3])
{
  const CudaTile t = cuda_tile (c);
  const gsize start = out->len;
  const int64_t nx = (c->out[1] + t.tx - 1) / t.tx, ny = (c->out[0] + t.ty - 1) / t.ty;
  const int64_t nz = (kg (c) + t.tz - 1) / t.tz;
  int64_t xd[4] = { c->batch, c->c_in, c->in[0], c->in[1] }, yd[4] = { c->batch, c->c_out, c->out[0], c->out[1] };
  int64_t xs[4], ys[4];
  pl_layout_strides (c->x_layout, 4, xd, xs);
  pl_layout_strides (c->y_layout, 4, yd, ys);

  g_string_append_printf (out, "/* %s: direct conv %s, tile %" G_GINT64_FORMAT "x%" G_GINT64_FORMAT "x%" G_GINT64_FORMAT
                          " per block (conv-direct.c) */\n", name, pl_layout_name (c->x_layout), t.tx, t.ty, t.tz);
  g_string_append_printf (out, "#define D_T %s\n#define D_NAME %s\n",
                          c->dtype == PL_DTYPE_F32 ? "float" : "double", name);
  const struct { const char *name; int64_t v; } defs[] = {
    { "D_N", c->batch }, { "D_H", c->in[0] }, { "D_W", c->in[1] }, { "D_OH", c->out[0] }, { "D_OW", c->out[1] },
    { "D_G", c->group }, { "D_CG", cg (c) }, { "D_KG", kg (c) }, { "D_KH", c->kernel[0] }, { "D_KW", c->kernel[1] },
    { "D_SH", c->strides[0] }, { "D_SW", c->strides[1] }, { "D_DH", c->dilations[0] }, { "D_DW", c->dilations[1] },
    { "D_PT", c->pads[0] }, { "D_PL", c->pads[1] }, { "D_TX", t.tx }, { "D_TY", t.ty }, { "D_TZ", t.tz },
    { "D_WX", t.wx }, { "D_WY", t.wy }, { "D_NX", nx }, { "D_NZ", nz }, { "D_THREADS", t.threads },
    { "D_PPT", t.ppt }, { "D_XN", xs[0] }, { "D_XC", xs[1] }, { "D_XH", xs[2] }, { "D_XW", xs[3] },
    { "D_YN", ys[0] }, { "D_YC", ys[1] }, { "D_YH", ys[2] }, { "D_YW", ys[3] },
  };
  for (size_t i = 0; i < G_N_ELEMENTS (defs); i++)
    g_string_append_printf (out, "#define %s %" G_GINT64_FORMAT "LL\n", defs[i].name, defs[i].v);
  g_string_append (out, cuda_body);
  undef_all (out, start);

  grid[0] = (unsigned) (nx * ny);
  grid[1] = (unsigned) MIN (c->group * nz, 65535);
  grid[2] = (unsigned) MIN (c->batch, 65535);
  block[0] = (unsigned) t.threads;
  block[1] = block[2] = 1;
}

guint32
pl_conv_direct_source_hash (const PlConvDesc *c)
{
  g_autoptr (GString) src = g_string_new (NULL);
  pl_conv_direct_emit_c (src, c, "k");
  return g_str_hash (src->str);
}
