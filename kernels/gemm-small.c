/* gemm-small.c — a generated GEMM for a few rows (see gemm-small.h).
 *
 * C (M x N) = alpha A op (B), f32, A row-major and not transposed, M from 2
 * to 32: a classifier at a small batch, a transformer's projections at a few
 * tokens. OpenBLAS's sgemm packs B for a large M and ran such a product far
 * from the machine's speed (8 x 1000 x 2048, B transposed: 0.78 ms, 42
 * GFLOP/s, where streaming B once takes a quarter of that; 32 rows: 1.12
 * ms, here 0.86-0.94; at 48 rows the two were even, so 32 is the limit);
 * single rows go to gemv (cpu-backend.c). Here B is streamed once and every row of A is
 * applied to what is loaded:
 *  - B not transposed (K x N): a block is G_R rows of C x 3 vectors of
 *    columns; per k, 3 vector loads of B's row k, one broadcast of A[m][k]
 *    per row, 3 multiply-adds a row;
 *  - B transposed (N x K): a block is G_R rows of C x 3 columns, each a dot
 *    product of A's row and B's row along k in vectors, summed across the
 *    lanes at the end.
 * Rows go 8 at a time (24 accumulators of AVX-512's 32 registers), the
 * last block the rest; blocks of fewer columns take the tails, and columns
 * or k past the last whole vector run scalar. Blocks of columns are the
 * parallel loop. The generated constants let each block unroll.
 */
#define G_LOG_DOMAIN "passlab"
#include "gemm-small.h"

#include "codegen.h"

bool
pl_gemm_small_applies (const PlGemmDesc *g)
{
  return g->dtype == PL_DTYPE_F32 && !g->trans_a && g->M >= 2 && g->M <= 32 && g->N >= 16 && g->K >= 16;
}

/* Multiply-adds from which the column blocks run in parallel: below, the
 * parallel region cost more than the product (8 x 128 x 128: 27 us on 2
 * threads, against 5 us through OpenBLAS). */
#define PARALLEL_MACS (1 << 21)

/* The kernel: G_M, G_N, G_K, G_TB, G_ALPHA, G_PAR defined before it. */
static const char kernel[] =
  "#define G_VL 16\n"
  "static inline __attribute__ ((always_inline)) G_V\n"
  "G_FN (ld) (const float *p)\n{\n  G_V v;\n  memcpy (&v, p, sizeof v);\n  return v;\n}\n\n"
  "/* rows m0 .. m0 + R of C; B K x N: columns n0 .. n0 + 16 NV, B N x K:\n"
  " * columns n0 .. n0 + NV, dot products along k */\n"
  "static inline __attribute__ ((always_inline)) G_ATTR void\n"
  "G_FN (blk) (const float *restrict a, const float *restrict b, float *restrict c, int64_t m0, int64_t n0,\n"
  "            const int R, const int NV)\n"
  "{\n"
  "  G_V acc[8][3];\n"
  "  for (int m = 0; m < R; m++)\n"
  "    for (int j = 0; j < NV; j++)\n"
  "      acc[m][j] = (G_V) { 0 };\n"
  "#if !G_TB\n"
  "  for (int64_t k = 0; k < G_K; k++)\n"
  "    {\n"
  "      G_V bv[3];\n"
  "      for (int j = 0; j < NV; j++)\n"
  "        bv[j] = G_FN (ld) (b + k * G_N + n0 + j * G_VL);\n"
  "      for (int m = 0; m < R; m++)\n"
  "        for (int j = 0; j < NV; j++)\n"
  "          acc[m][j] += a[(m0 + m) * G_K + k] * bv[j];\n"
  "    }\n"
  "  for (int m = 0; m < R; m++)\n"
  "    for (int j = 0; j < NV; j++)\n"
  "      {\n"
  "        G_V r = acc[m][j] * (float) G_ALPHA;\n"
  "        memcpy (c + (m0 + m) * G_N + n0 + j * G_VL, &r, sizeof r);\n"
  "      }\n"
  "#else\n"
  "  int64_t k = 0;\n"
  "  for (; k + G_VL <= G_K; k += G_VL)\n"
  "    {\n"
  "      G_V bv[3];\n"
  "      for (int j = 0; j < NV; j++)\n"
  "        bv[j] = G_FN (ld) (b + (n0 + j) * G_K + k);\n"
  "      for (int m = 0; m < R; m++)\n"
  "        {\n"
  "          const G_V av = G_FN (ld) (a + (m0 + m) * G_K + k);\n"
  "          for (int j = 0; j < NV; j++)\n"
  "            acc[m][j] += av * bv[j];\n"
  "        }\n"
  "    }\n"
  "  for (int m = 0; m < R; m++)\n"
  "    for (int j = 0; j < NV; j++)\n"
  "      {\n"
  "        float s = 0;\n"
  "        for (int l = 0; l < G_VL; l++)\n"
  "          s += acc[m][j][l];\n"
  "        for (int64_t t = k; t < G_K; t++)\n"
  "          s += a[(m0 + m) * G_K + t] * b[(n0 + j) * G_K + t];\n"
  "        c[(m0 + m) * G_N + n0 + j] = s * (float) G_ALPHA;\n"
  "      }\n"
  "#endif\n"
  "}\n\n"
  "#if !G_TB\n"
  "#define G_COLS (3 * G_VL)   /* columns a block */\n"
  "#define G_TAIL(n0, n1) \\\n"
  "  do { \\\n"
  "    for (int64_t m = 0; m < G_M; m++) \\\n"
  "      for (int64_t n = n0; n < n1; n++) \\\n"
  "        { \\\n"
  "          float s = 0; \\\n"
  "          for (int64_t k = 0; k < G_K; k++) \\\n"
  "            s += a[m * G_K + k] * b[k * G_N + n]; \\\n"
  "          c[m * G_N + n] = s * (float) G_ALPHA; \\\n"
  "        } \\\n"
  "  } while (0)\n"
  "#else\n"
  "#define G_COLS 3   /* columns a block */\n"
  "#define G_TAIL(n0, n1) ((void) 0)\n"
  "#endif\n\n"
  "/* every row block for the columns from n0: NV vectors (B K x N) or NV columns (B N x K) */\n"
  "#define G_ROWS(n0, NV) \\\n"
  "  do { \\\n"
  "    int64_t m0 = 0; \\\n"
  "    for (; m0 + 8 <= G_M; m0 += 8) \\\n"
  "      G_FN (blk) (a, b, c, m0, n0, 8, NV); \\\n"
  "    if (G_M % 8) \\\n"
  "      G_FN (blk) (a, b, c, m0, n0, G_M % 8, NV); \\\n"
  "  } while (0)\n\n"
  "G_ATTR void\n"
  "G_NAME (const float *restrict a, const float *restrict b, float *restrict c)\n"
  "{\n"
  "  const int64_t per = G_TB ? 1 : G_VL;   /* columns an NV counts */\n"
  "  const int64_t whole = G_N / G_COLS, rest = (G_N - whole * G_COLS) / per;\n"
  "#if G_PAR\n"
  "#pragma omp parallel for schedule(static)\n"
  "#endif\n"
  "  for (int64_t nb = 0; nb < whole; nb++)\n"
  "    G_ROWS (nb * G_COLS, 3);\n"
  "  const int64_t n0 = whole * G_COLS;\n"
  "  if (rest == 2)\n"
  "    G_ROWS (n0, 2);\n"
  "  else if (rest == 1)\n"
  "    G_ROWS (n0, 1);\n"
  "  G_TAIL (n0 + rest * per, G_N);\n"
  "}\n";

void
pl_gemm_small_emit_c (GString *out, const PlGemmDesc *g, const char *name)
{
  g_return_if_fail (pl_gemm_small_applies (g));
  g_autofree char *alpha = pl_codegen_literal (PL_DTYPE_F64, g->alpha, 0);
  g_string_append_printf (out,
                          "/* %s: %" G_GINT64_FORMAT " x %" G_GINT64_FORMAT " x %" G_GINT64_FORMAT
                          " GEMM%s, a few rows (gemm-small.c) */\n"
                          "#include <stdint.h>\n#include <string.h>\n"
                          "#define G_M %" G_GINT64_FORMAT "\n#define G_N %" G_GINT64_FORMAT "\n#define G_K %" G_GINT64_FORMAT
                          "\n#define G_TB %d\n#define G_ALPHA %s\n#define G_PAR %d\n"
                          "#define G_NAME %s\n#define G_FN(s) %s_ ## s\n"
                          "typedef float %s_v __attribute__ ((vector_size (64)));\n#define G_V %s_v\n"
                          "#if defined(__GNUC__) && !defined(__clang__) && defined(__AVX512F__)\n"
                          "#define G_ATTR __attribute__ ((target (\"prefer-vector-width=512\")))\n"
                          "#else\n#define G_ATTR\n#endif\n",
                          name, g->M, g->N, g->K, g->trans_b ? ", B transposed" : "", g->M, g->N, g->K,
                          g->trans_b ? 1 : 0, alpha, g->M * g->N * g->K >= PARALLEL_MACS, name, name, name, name);
  g_string_append (out, kernel);
  /* the next kernel of the translation unit starts clean */
  static const char *const defined[] = { "G_VL", "G_COLS", "G_TAIL", "G_ROWS", "G_M", "G_N", "G_K", "G_TB",
                                         "G_ALPHA", "G_PAR", "G_NAME", "G_FN", "G_V", "G_ATTR" };
  for (size_t i = 0; i < G_N_ELEMENTS (defined); i++)
    g_string_append_printf (out, "#undef %s\n", defined[i]);
  g_string_append_c (out, '\n');
}
