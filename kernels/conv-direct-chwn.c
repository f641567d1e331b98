/* conv-direct-chwn.c — CHWN's pointwise kernel (see conv-direct.h).
 *
 * In CHWN a 1x1 stride-1 conv is one GEMM per group: y[k][p] = sum over c
 * of w[k][c] x[c][p], where p runs over (h, w, n) and is contiguous in both
 * x and y. The generic CHWN kernel staged every input channel's window and
 * kept its accumulators in memory; ResNeXt's 1x1 convs ran at a third of
 * the FMA peak in CHWN against two thirds in NHWC.
 *
 * Here a block is D_P output channels (a weight broadcast, the packed
 * weights [g][c][k] hold a channel's k side by side) times D_NV vectors of
 * points (loads from x's row of channel c), accumulated in registers over
 * every input channel of the group and then stored straight to y, like
 * NHWC's pointwise kernel with the two operands' roles swapped. A tile's
 * points are its rows' segments of (w, n), one segment when the tile spans
 * the width. A segment's last part vector is loaded a vector back from its
 * end (every load whole and inside x) and only its own lanes are stored,
 * so a segment must hold a vector: the kernel widens a tile that is
 * narrower, and pl_conv_direct_chwn_pointwise asks for an image of a
 * vector at least.
 *
 * With a stride the points a tile reads are not contiguous in x (a point's
 * images are, and every other point is skipped): the tile first copies
 * them, every input channel's, into the thread's buffer, row after row, and
 * the blocks read that instead of x (x's channel stride becomes the
 * buffer's). ResNeXt's 1x1 stride-2 projections ran in the generic
 * kernel at 7-8 ms against NHWC's 4.8 at batch 8. A step copies as many
 * rows as D_STAGE elements hold (2 MiB), so that a large tile does not
 * take a large buffer: at 512 KiB a 7x7 tile of 1024 channels took 4
 * steps, each reading the tile's weights again, 5% slower.
 */
#define G_LOG_DOMAIN "passlab"
#include "conv-direct-private.h"

const char pl_cd_chwn_pointwise[] =
  "/* pk channels x nv vectors of points; xs, ys at the block's first point (xs's channels xcs\n"
  " * apart, ys's D_PTS), wc at its first channel; the last vector's lanes from D_VL - live on\n"
  " * stored */\n"
  "static inline __attribute__ ((always_inline)) D_ATTR void\n"
  "D_FN (cblock) (const D_T *restrict xs, int64_t xcs, const D_T *restrict wc, D_T *restrict ys, const int pk,\n"
  "               const int nv, const int live)\n"
  "{\n"
  "  D_V r[D_P][D_NV];\n"
  "  for (int k = 0; k < pk; k++)\n"
  "    for (int j = 0; j < nv; j++)\n"
  "      r[k][j] = (D_V) { 0 };\n"
  "  for (int64_t c = 0; c < D_CG; c++)\n"
  "    {\n"
  "      D_V xv[D_NV];\n"
  "      for (int j = 0; j < nv; j++)\n"
  "        xv[j] = D_FN (vld) (xs + c * xcs + j * D_VL);\n"
  "      for (int k = 0; k < pk; k++)\n"
  "        {\n"
  "          const D_T wk = wc[c * D_KG + k];\n"
  "          for (int j = 0; j < nv; j++)\n"
  "            r[k][j] += wk * xv[j];\n"
  "        }\n"
  "    }\n"
  "  for (int k = 0; k < pk; k++)\n"
  "    {\n"
  "      for (int j = 0; j < nv - 1; j++)\n"
  "        D_FN (vst) (ys + k * D_PTS + j * D_VL, r[k][j]);\n"
  "      if (live == D_VL)\n"
  "        D_FN (vst) (ys + k * D_PTS + (nv - 1) * D_VL, r[k][nv - 1]);\n"
  "      else\n"
  "        {\n"
  "          D_T t[D_VL];\n"
  "          D_FN (vst) (t, r[k][nv - 1]);\n"
  "          memcpy (ys + k * D_PTS + (nv - 1) * D_VL + D_VL - live, t + D_VL - live, sizeof (D_T) * live);\n"
  "        }\n"
  "    }\n"
  "}\n\n"
  "/* channels k .. k1 of one block of points: D_P at a time, then 4, 2, 1 (each a constant, so\n"
  " * that its block unrolls) */\n"
  "static inline __attribute__ ((always_inline)) D_ATTR void\n"
  "D_FN (kspan) (const D_T *restrict xs, int64_t xcs, const D_T *restrict wg, D_T *restrict ys, int64_t k,\n"
  "              int64_t k1, const int nv, const int live)\n"
  "{\n"
  "  for (; k + D_P <= k1; k += D_P)\n"
  "    D_FN (cblock) (xs, xcs, wg + k, ys + k * D_PTS, D_P, nv, live);\n"
  "  if (D_P > 4 && k + 4 <= k1)\n"
  "    D_FN (cblock) (xs, xcs, wg + k, ys + k * D_PTS, D_P > 4 ? 4 : 1, nv, live), k += 4;\n"
  "  if (D_P > 2 && k + 2 <= k1)\n"
  "    D_FN (cblock) (xs, xcs, wg + k, ys + k * D_PTS, D_P > 2 ? 2 : 1, nv, live), k += 2;\n"
  "  if (k < k1)\n"
  "    D_FN (cblock) (xs, xcs, wg + k, ys + k * D_PTS, 1, nv, live);\n"
  "}\n\n"
  "/* a segment of n points (at least a vector) from xs (channels xcs apart) to ys, channels k .. k1:\n"
  " * blocks of D_NV vectors, single vectors, then the part vector, loaded a vector back from the\n"
  " * end */\n"
  "static inline __attribute__ ((always_inline)) D_ATTR void\n"
  "D_FN (pspan) (const D_T *restrict xs, int64_t xcs, const D_T *restrict wg, D_T *restrict ys, int64_t n,\n"
  "              int64_t k, int64_t k1)\n"
  "{\n"
  "  int64_t p = 0;\n"
  "  for (; p + D_NV * D_VL <= n; p += D_NV * D_VL)\n"
  "    D_FN (kspan) (xs + p, xcs, wg, ys + p, k, k1, D_NV, D_VL);\n"
  "  for (; p + D_VL <= n; p += D_VL)\n"
  "    D_FN (kspan) (xs + p, xcs, wg, ys + p, k, k1, 1, D_VL);\n"
  "  if (p < n)\n"
  "    D_FN (kspan) (xs + n - D_VL, xcs, wg, ys + n - D_VL, k, k1, 1, (int) (n - p));\n"
  "}\n\n"
  KERNEL_HEAD
  "  /* a segment holds a vector: widen a narrower tile */\n"
  "  if (tx < D_OW && tx * D_N < D_VL)\n"
  "    tx = D_MIN (D_OW, (D_VL + D_N - 1) / D_N);\n"
  "  if (tx == D_OW && ty * D_OW * D_N < D_VL)\n"
  "    ty = D_MIN (D_OH, (D_VL + D_OW * D_N - 1) / (D_OW * D_N));\n"
  "  const int64_t mx = (D_OW + tx - 1) / tx, my = (D_OH + ty - 1) / ty;\n"
  "  (void) nx, (void) ny;\n"
  "  const int strided = D_SH > 1 || D_SW > 1;\n"
  "  /* output rows staged a step: as many of a tile's as D_STAGE elements hold, at least one */\n"
  "  const int64_t fit = D_STAGE / (D_CG * tx * D_N), rc = !strided ? ty : D_MIN (ty, fit > 1 ? fit : 1);\n"
  "#pragma omp parallel\n"
  "  {\n"
  "    D_T *buf = strided ? pl_conv_direct_scratch (sizeof (D_T) * D_CG * tx * rc * D_N) : NULL;\n"
  "#pragma omp for collapse(4) schedule(dynamic, 1)\n"
  "    for (int64_t g = 0; g < D_G; g++)\n"
  "      for (int64_t bz = 0; bz < nz; bz++)\n"
  "        for (int64_t by = 0; by < my; by++)\n"
  "          for (int64_t bx = 0; bx < mx; bx++)\n"
  "            {\n"
  "              const int64_t k0 = bz * tz, k1 = D_MIN (D_KG, k0 + tz);\n"
  "              const int64_t ox0 = bx * tx, tw = D_MIN (D_OW, ox0 + tx) - ox0;\n"
  "              const int64_t oy0 = by * ty, th = D_MIN (D_OH, oy0 + ty) - oy0;\n"
  "              const D_T *wg = wp + g * D_CG * D_KG;\n"
  "              D_T *yg = y + g * D_KG * D_PTS;\n"
  "              for (int64_t r0 = oy0; r0 < oy0 + th; r0 += rc)\n"
  "                {\n"
  "                  const int64_t rh = D_MIN (rc, oy0 + th - r0);   /* output rows r0 .. r0 + rh */\n"
  "                  const D_T *xs = x + g * D_CG * D_H * D_W * D_N;\n"
  "                  int64_t xcs = (int64_t) D_H * D_W * D_N;\n"
  "                  if (strided)\n"
  "                    {\n"
  "                      /* their points, row after row, every channel's: buf[c][(s tw + i) N + n] */\n"
  "                      for (int64_t c = 0; c < D_CG; c++)\n"
  "                        for (int64_t s = 0; s < rh; s++)\n"
  "                          for (int64_t i = 0; i < tw; i++)\n"
  "                            memcpy (buf + ((c * rh + s) * tw + i) * D_N,\n"
  "                                    xs + c * xcs + ((r0 + s) * D_SH * D_W + (ox0 + i) * D_SW) * D_N,\n"
  "                                    sizeof (D_T) * D_N);\n"
  "                      xs = buf, xcs = rh * tw * D_N;\n"
  "                    }\n"
  "                  /* where x's and y's row s of the step start */\n"
  "#define D_XROW(s) (strided ? (s) * tw * D_N : ((r0 + (s)) * D_OW + ox0) * D_N)\n"
  "#define D_YROW(s) (((r0 + (s)) * D_OW + ox0) * D_N)\n"
  "                  /* the segments: the rows, or one when the tile spans the width */\n"
  "                  const int64_t nseg = tw == D_OW ? 1 : rh, seg = (tw == D_OW ? rh * D_OW : tw) * D_N;\n"
  "                  /* of the tile's weights and points the larger is walked once, outermost */\n"
  "                  if (k1 - k0 > nseg * seg)\n"
  "                    for (int64_t k = k0; k < k1; k += D_P)\n"
  "                      for (int64_t s = 0; s < nseg; s++)\n"
  "                        D_FN (pspan) (xs + D_XROW (s), xcs, wg, yg + D_YROW (s), seg, k, D_MIN (k1, k + D_P));\n"
  "                  else\n"
  "                    for (int64_t s = 0; s < nseg; s++)\n"
  "                      D_FN (pspan) (xs + D_XROW (s), xcs, wg, yg + D_YROW (s), seg, k0, k1);\n"
  "                }\n"
  "            }\n"
  "  }\n"
  "}\n\n";
