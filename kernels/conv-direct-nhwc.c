/* conv-direct-nhwc.c — the direct convolution's own NHWC kernels (see
 * conv-direct.c for the generic ones, the D_ macros they speak through and
 * the choice of kernel): depthwise, small groups and pointwise, each a task
 * of output points that reads x in place, without staging.
 */
#define G_LOG_DOMAIN "passlab"
#include "conv-direct-private.h"

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
const char pl_cd_nhwc_depthwise[] =
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
const char pl_cd_nhwc_pointwise[] =
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

/* The small-group kernel of c: its generated shuffles (emit_group_fma),
 * the blocks for each point count below p, and the kernel; vl lanes a vector. */
void
pl_cd_emit_nhwc_grouped (GString *out, const PlConvDesc *c, int64_t vl, int64_t p)
{
  emit_group_fma (out, c, vl);
  /* the block for a constant point count below D_P (so that it unrolls) */
  /* stride 1: the row's last block, tested; else a block inside */
  g_string_append (out, c->strides[1] == 1 ? "#define D_IBLOCK(pbc) D_FN (gblock) (x, wt, y, n, oy, ox, c, pbc, 1, 1)\n"
                                            : "#define D_IBLOCK(pbc) D_FN (gblock) (x, wt, y, n, oy, ox, c, pbc, 0, 0)\n");
  g_string_append (out, "#define D_IBLOCKS(pb) \\\n  switch (pb) \\\n    { \\\n");
  for (int64_t pb = 1; pb < p; pb++)
    g_string_append_printf (out, "    case %" G_GINT64_FORMAT ": D_IBLOCK (%" G_GINT64_FORMAT "); break; \\\n", pb, pb);
  g_string_append (out, "    }\n"
                        "#if defined(__clang__)\n#define D_UNROLL _Pragma (\"unroll\")\n"
                        "#else\n#define D_UNROLL _Pragma (\"GCC unroll 32\")\n#endif\n"
                        "#define D_MAX(a, b) ((a) > (b) ? (a) : (b))\n");
  g_string_append (out, nhwc_grouped);
}
