/* codegen-c.c — C for the CPU from kernel plans (kernel-plan.h).
 *
 * Each LOOP plan becomes `void <name> (void *const *args)` (args: input
 * slots, then output slots), compiled with -O3 -march=native -fopenmp:
 *
 *  - pointwise: the loop dims after coalescing are an OpenMP-parallel loop
 *    over the outer dims (coordinates recovered once per inner loop) around
 *    an `omp simd` loop over the innermost dim;
 *  - rows: an OpenMP-parallel loop over the rows; per row, one simd loop
 *    per pass over the reduced dims (reductions through `omp simd
 *    reduction`, which lets the compiler reorder float sums), row values
 *    between the passes, and a malloc'ed scratch row per thread for the
 *    materialized values. When there are too few rows to feed the cores,
 *    the rows run one after the other and each pass's loop is the parallel
 *    one (reduction clauses combine the threads' partial results). A
 *    pass's float reductions run as SPLIT_WAYS slices side by side (so the
 *    adds are not one dependent chain); long rows prefetch the next row
 *    during a later pass (PREFETCH_CHUNK); outputs larger than the cache
 *    leave through a staging row (or chunk) and streaming stores
 *    (STREAM_MIN_BYTES). A divide by a row value is a multiply by its
 *    reciprocal (codegen-expr.c).
 *
 * Math functions vectorize: exp and tanh of f32 are inline polynomials
 * (below), the rest of libm goes through glibc's libmvec (declared with
 * `omp declare simd`), so a loop calling exp or erf runs 16 lanes at a time.
 * CONV plans also get `<name>_im2col`, the im2col matrix in the order the
 * conv's layout multiplies it (see "im2col, per layout"), or with impl
 * DIRECT `<name>_direct`, the tiled direct convolution (conv-direct.c); a
 * ConvTranspose gets `<name>_col2im` (conv-transpose.c).
 * Arguments are restrict pointers except the slots that share memory: a
 * GEMM/CONV epilogue updating the library result in place, and an output
 * the runtime stores over an input (pl_kernel_plan_restrict). Such a
 * pointwise loop loads the element it then stores, in the same iteration,
 * so the `omp simd` loop stays correct: no iteration reads what another
 * writes.
 * POOL plans are `void <name> (void *const *args)` too, from pool.c.
 */
#define G_LOG_DOMAIN "passlab"
#include "backend.h"
#include "conv-direct.h"
#include "conv-transpose.h"
#include "cpu-machine.h"
#include "kernel-plan-private.h"

#include <stdarg.h>
#include <string.h>

/* Work below this many elements runs on one thread (a parallel region costs microseconds). */
#define PARALLEL_MIN 32768

/* The exp of f32 every kernel uses, inlined so loops calling it vectorize
 * (glibc's expf is a scalar call). The reduction and polynomial of ARM's
 * optimized-routines v_expf: x = n ln2 + r with |r| <= ln2/2, e^r = 1 + r +
 * r^2 P(r) with P of degree 3. 2^n is applied as two halves 2^n1 * 2^n2,
 * each a normal float for every n the clamped x gives, so subnormal results
 * and the overflow come out right with no branch and no select: every lane
 * takes the same path, and no lane whose result is normal forms a subnormal
 * intermediate (those cost a microcode assist, ~100 cycles, per
 * instruction). Max error 1.95 ulp (every float against double exp); exact
 * 0 below -104, inf from 88.73, NaN and +-inf as libm.
 * Tests: /Passlab/KernelsCpu/vector-math. */
static const char exp_prelude[] =
  "#ifdef __FMA__\n#define PL_FMAF(a, b, c) __builtin_fmaf (a, b, c)\n"
  "#else\n#define PL_FMAF(a, b, c) ((a) * (b) + (c))\n#endif\n"
  "PLK_FN float pl_expf (float x)\n{\n"
  "  union { float f; uint32_t u; } z, s1, s2;\n"
  "  const float xc = x < -104.0f ? 0.0f : x > 89.0f ? 89.0f : x;   /* NaN stays */\n"
  "  z.f = PL_FMAF (xc, 0x1.715476p+0f, 0x1.8p23f);   /* n = round (x / ln2) in the low bits */\n"
  "  const float n = z.f - 0x1.8p23f;\n"
  "  float r = PL_FMAF (n, -0x1.62e4p-1f, xc);\n  r = PL_FMAF (n, -0x1.7f7d1cp-20f, r);\n"
  "  const int32_t ni = (int32_t) z.u - 0x4b400000, n1 = ni >> 1, n2 = ni - n1;\n"
  "  s1.u = (uint32_t) (n1 + 127) << 23;\n  s2.u = (uint32_t) (n2 + 127) << 23;\n"
  "  const float r2 = r * r;\n"
  "  const float p = PL_FMAF (0x1.0e4020p-7f, r, 0x1.573e2ep-5f);\n"
  "  float q = PL_FMAF (0x1.555e66p-3f, r, 0x1.fffdb6p-2f);\n  q = PL_FMAF (p, r2, q);\n"
  "  const float poly = PL_FMAF (q, r2, 0x1.ffffecp-1f * r);   /* e^r - 1 */\n"
  "  const float res = PL_FMAF (poly, s1.f, s1.f) * s2.f;\n"
  "  return x < -104.0f ? 0.0f : res;\n}\n";

/* tanh of f32 from pl_expf (Cephes tanhf: an odd polynomial below 0.625,
 * 1 - 2 / (e^2|x| + 1) above), max error 1.62 ulp. */
static const char tanh_prelude[] =
  "PLK_FN float pl_tanhf (float x)\n{\n"
  "  const float ax = __builtin_fabsf (x);\n  const float big = 1.0f - 2.0f / (pl_expf (2.0f * ax) + 1.0f);\n"
  "  const float z = x * x;\n"
  "  const float small = ((((-5.70498872745E-3f * z + 2.06390887954E-2f) * z - 5.37397155531E-2f) * z\n"
  "                       + 1.33314422036E-1f) * z - 3.33332819422E-1f) * z * x + x;\n"
  "  return ax > 0.625f ? (x < 0.0f ? -big : big) : small;\n}\n";

/* pl_stream: n bytes to dst with non-temporal stores for the 64-byte lines
 * dst covers whole (see STREAM_MIN_BYTES), masked stores (AVX-512BW) or
 * memcpy for the partial lines at either end; PL_SFENCE orders the
 * streaming stores before later stores. */
static const char stream_prelude[] =
  "#if defined (__AVX512F__) || defined (__AVX__) || defined (__SSE2__)\n#include <immintrin.h>\n"
  "#define PL_SFENCE() _mm_sfence ()\n#else\n#define PL_SFENCE() ((void) 0)\n#endif\n"
  "#if defined (__AVX512BW__)\n"
  "#define PL_COPY_PART(d, s, n) do { __mmask64 m_ = (__mmask64) ((1ull << (n)) - 1);"
  " _mm512_mask_storeu_epi8 (d, m_, _mm512_maskz_loadu_epi8 (m_, s)); } while (0)\n"
  "#else\n#define PL_COPY_PART(d, s, n) memcpy (d, s, n)\n#endif\n"
  "PLK_FN void pl_stream (void *restrict dst, const void *restrict src, size_t n)\n{\n"
  "  char *d = (char *) dst;\n  const char *s = (const char *) src;\n"
  "#if defined (__AVX512F__) || defined (__AVX__) || defined (__SSE2__)\n"
  "  size_t head = (64 - ((uintptr_t) d & 63)) & 63;\n"
  "  head = head < n ? head : n;\n"
  "  if (head)\n    PL_COPY_PART (d, s, head);\n"
  "  d += head, s += head, n -= head;\n"
  "  for (; n >= 64; n -= 64, d += 64, s += 64)\n"
  "#if defined (__AVX512F__)\n"
  "    _mm512_stream_si512 ((void *) d, _mm512_loadu_si512 ((const void *) s));\n"
  "#elif defined (__AVX__)\n"
  "    for (int k = 0; k < 64; k += 32)\n"
  "      _mm256_stream_si256 ((__m256i *) (d + k), _mm256_loadu_si256 ((const __m256i *) (s + k)));\n"
  "#else\n"
  "    for (int k = 0; k < 64; k += 16)\n"
  "      _mm_stream_si128 ((__m128i *) (d + k), _mm_loadu_si128 ((const __m128i *) (s + k)));\n"
  "#endif\n"
  "  if (n)\n    PL_COPY_PART (d, s, n);\n"
  "#else\n  memcpy (d, s, n);\n#endif\n}\n";

/* Every other libm function a kernel may call (generated code calls libm by
 * its C name, f-suffixed for f32) has a vector variant in glibc's libmvec,
 * which -lm pulls in on x86-64 (libm.so is a linker script naming it). These
 * declarations tell the compiler so, and loops calling them vectorize
 * (16 lanes per call with AVX-512) instead of calling libm once per element.
 * Max errors of the f32 ones, measured over a sweep of all floats: 4.0 ulp
 * (erff), 3.8 (logf), 3.2 (tanf), below 3 for the rest; the test allows 5.
 * Special values (NaN, inf, out of range) fall back to the scalar function.
 * glibc >= 2.35 has the full set; elsewhere the loops stay scalar calls, as
 * correct as before. pow is left out (its vector form is untested here and
 * calls the scalar one for every negative base). */
static const char *const vector_libm_unary[] = {
  "expm1", "log", "log1p", "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh",
  "erf",
};

static void
append_vector_libm (GString *s)
{
  g_string_append (s, "#if defined (__x86_64__) && defined (__GLIBC__) && defined (__GLIBC_MINOR__) \\\n"
                      "    && (__GLIBC__ > 2 || __GLIBC_MINOR__ >= 35)\n");
  for (size_t i = 0; i < G_N_ELEMENTS (vector_libm_unary); i++)
    g_string_append_printf (s, "#pragma omp declare simd notinbranch\nfloat %sf (float);\n"
                            "#pragma omp declare simd notinbranch\ndouble %s (double);\n",
                            vector_libm_unary[i], vector_libm_unary[i]);
  /* exp and tanh of f32 are ours (above) */
  g_string_append (s, "#pragma omp declare simd notinbranch\ndouble exp (double);\n"
                      "#pragma omp declare simd notinbranch\ndouble tanh (double);\n"
                      "#endif\n");
}

char *
pl_codegen_c_prelude (void)
{
  GString *s = g_string_new (
    "/* generated by passlab (kernels/codegen-c.c) */\n"
    "#include <math.h>\n#include <stdint.h>\n#include <stdlib.h>\n#include <string.h>\n#include <omp.h>\n\n"
    "#define PLK_FN static inline\n"
    "#define PL_INFF __builtin_inff ()\n#define PL_NANF __builtin_nanf (\"\")\n"
    "#define PL_INF __builtin_inf ()\n#define PL_NAN __builtin_nan (\"\")\n\n"
    "void pl_set_threads (int n) { if (n > 0) omp_set_num_threads (n); }\n"
    "int pl_max_threads (void) { return omp_get_max_threads (); }\n\n");
  append_vector_libm (s);
  g_string_append (s, exp_prelude);
  g_string_append (s, tanh_prelude);
  g_string_append (s, stream_prelude);
  g_string_append (s, "#define expf pl_expf\n#define tanhf pl_tanhf\n\n");
  g_string_append (s, pl_codegen_common_prelude ());
  g_string_append_c (s, '\n');
  return g_string_free (s, FALSE);
}

/* --- emitting lines -------------------------------------------------------------------- */

typedef struct {
  GString            *o;
  const PlKernelPlan *p;
  const PlLoopPlan   *lp;
  int                 indent;
  bool                stream;   /* rows: stage contiguous row stores, write them out non-temporally */
  int                 prefetch_pass; /* rows: this pass prefetches the next row (PREFETCH_CHUNK); -1: none */
  const char         *acc_suffix;    /* rows: which of a split pass's partial accumulators the body adds to */
  bool                chunk;         /* rows: emitting the chunk loop (cb..ce) of the prefetching pass */
} Emit;

static void G_GNUC_PRINTF (2, 3)
line (Emit *e, const char *fmt, ...)
{
  va_list ap;
  va_start (ap, fmt);
  pl_codegen_vline (e->o, e->indent, fmt, ap);
  va_end (ap);
}

static const PlInstr *
at (const PlLoopPlan *lp, int i)
{
  return &g_array_index (lp->instrs, PlInstr, i);
}

static const char *
ctype_of_value (const PlValue *v)
{
  return pl_plan_ctype (v->dtype);
}

static void
emit_args (Emit *e)
{
  const PlKernelPlan *p = e->p;
  int n_in = (int) p->inputs->len;
  for (int k = 0; k < n_in; k++)
    {
      /* a slot sharing memory with another (an in-place epilogue or output) is no restrict pointer */
      const char *t = ctype_of_value (p->inputs->pdata[k]);
      line (e, "const %s *%s in%d = (const %s *) args[%d];", t, pl_kernel_plan_restrict (p, false, k) ? "restrict" : "",
            k, t, k);
    }
  for (guint k = 0; k < p->outputs->len; k++)
    {
      const char *t = ctype_of_value (p->outputs->pdata[k]);
      line (e, "%s *%s out%u = (%s *) args[%d];", t, pl_kernel_plan_restrict (p, true, (int) k) ? "restrict" : "", k,
            t, n_in + (int) k);
    }
}

static void
emit_store (Emit *e, const PlStore *st)
{
  g_autofree char *ix = pl_idx_to_c (st->index, pl_codegen_coord_names ());
  line (e, "out%d[%s] = v%d;", st->slot, ix, st->value);
}

/* --- pointwise -------------------------------------------------------------------------- */

static void
emit_pointwise_body (Emit *e)
{
  pl_codegen_level (e->o, e->indent, e->lp, PL_LEVEL_ELEM, 0);
  for (guint s = 0; s < e->lp->stores->len; s++)
    emit_store (e, &g_array_index (e->lp->stores, PlStore, s));
}

static void
emit_pointwise (Emit *e)
{
  const PlLoopPlan *lp = e->lp;
  int r = lp->rank;
  bool par = lp->total >= PARALLEL_MIN;
  if (r == 0)
    {
      line (e, "{");
      e->indent++;
      emit_pointwise_body (e);
      e->indent--;
      line (e, "}");
      return;
    }
  int64_t inner = lp->dims[r - 1], outer = lp->total / MAX (inner, 1);
  bool inner_par = r == 1 || (outer < 16 && inner >= 8192);
  if (r > 1)
    {
      if (par && !inner_par)
        line (e, "#pragma omp parallel for schedule(static)");
      line (e, "for (int64_t o = 0; o < %" G_GINT64_FORMAT "; o++)", outer);
      line (e, "{");
      e->indent++;
      pl_codegen_coords (e->o, e->indent, e->lp, "o", 0, r - 1);
    }
  line (e, par && inner_par ? "#pragma omp parallel for simd schedule(static)" : "#pragma omp simd");
  line (e, "for (int64_t c%d = 0; c%d < %" G_GINT64_FORMAT "; c%d++)", r - 1, r - 1, inner, r - 1);
  line (e, "{");
  e->indent++;
  emit_pointwise_body (e);
  e->indent--;
  line (e, "}");
  if (r > 1)
    {
      e->indent--;
      line (e, "}");
    }
}

/* --- rows -------------------------------------------------------------------------------- */

static const PlReduction *
red (const PlLoopPlan *lp, int r)
{
  return &g_array_index (lp->reductions, PlReduction, r);
}

static bool
is_arg (PlReduceKind k)
{
  return k == PL_RED_ARGMAX || k == PL_RED_ARGMIN;
}

static const char *
int_limit (PlDType t, bool max)
{
  switch (t)
    {
    case PL_DTYPE_I64: return max ? "INT64_MAX" : "INT64_MIN";
    case PL_DTYPE_I32: return max ? "INT32_MAX" : "INT32_MIN";
    case PL_DTYPE_I16: return max ? "INT16_MAX" : "INT16_MIN";
    case PL_DTYPE_I8: return max ? "INT8_MAX" : "INT8_MIN";
    case PL_DTYPE_U64: return max ? "UINT64_MAX" : "0";
    case PL_DTYPE_U32: return max ? "UINT32_MAX" : "0";
    case PL_DTYPE_U16: return max ? "UINT16_MAX" : "0";
    default: return max ? "UINT8_MAX" : "0";
    }
}

/* The OpenMP reduction clauses of the pass's reductions (empty if one is an
 * argmax), naming each one's n_split partial accumulators. */
static char *
reduction_clauses (const PlLoopPlan *lp, int pass, int n_split, bool *has_arg)
{
  GString *s = g_string_new (NULL);
  *has_arg = false;
  for (guint r = 0; r < lp->reductions->len; r++)
    {
      const PlReduction *x = red (lp, (int) r);
      if (x->pass != pass)
        continue;
      static const char *const ops[] = { "+", "*", "max", "min" };
      if (is_arg (x->kind))
        *has_arg = true;
      else
        {
          g_string_append_printf (s, " reduction(%s:acc%u", ops[x->kind], r);
          for (int k = 1; k < n_split; k++)
            g_string_append_printf (s, ",acc%u_%d", r, k);
          g_string_append (s, ")");
        }
    }
  return g_string_free (s, FALSE);
}

/* Declares the pass's accumulators, and n_split - 1 more partial ones per reduction. */
static void
emit_accumulators (Emit *e, int pass, int n_split)
{
  for (guint r = 0; r < e->lp->reductions->len; r++)
    {
      const PlReduction *x = red (e->lp, (int) r);
      if (x->pass != pass)
        continue;
      PlDType at_t = at (e->lp, x->arg)->dtype;
      const char *t = pl_plan_ctype (is_arg (x->kind) ? at_t : x->dtype);
      bool fl = pl_dtype_is_float (x->dtype);
      bool f32 = x->dtype == PL_DTYPE_F32;
      const char *init;
      switch (x->kind)
        {
        case PL_RED_SUM: init = "0"; break;
        case PL_RED_PROD: init = "1"; break;
        case PL_RED_MAX: init = fl ? (f32 ? "-PL_INFF" : "-PL_INF") : int_limit (x->dtype, false); break;
        case PL_RED_MIN: init = fl ? (f32 ? "PL_INFF" : "PL_INF") : int_limit (x->dtype, true); break;
        default:
          line (e, "%s best%u = 0; int64_t acc%u = 0; int first%u = 1;", t, r, r, r);
          continue;
        }
      line (e, "%s acc%u = %s;", t, r, init);
      for (int k = 1; k < n_split; k++)
        line (e, "%s acc%u_%d = %s;", t, r, k, init);
    }
}

static void
emit_accumulate (Emit *e, int pass)
{
  const char *sf = e->acc_suffix ? e->acc_suffix : "";
  for (guint r = 0; r < e->lp->reductions->len; r++)
    {
      const PlReduction *x = red (e->lp, (int) r);
      if (x->pass != pass)
        continue;
      bool fl = pl_dtype_is_float (x->dtype);
      const char *t = pl_plan_ctype (x->dtype);
      switch (x->kind)
        {
        case PL_RED_SUM:
          if (fl)
            line (e, "acc%u%s += v%d;", r, sf, x->arg);
          else
            line (e, "acc%u%s = (%s) ((uint64_t) acc%u%s + (uint64_t) v%d);", r, sf, t, r, sf, x->arg);
          break;
        case PL_RED_PROD:
          if (fl)
            line (e, "acc%u%s *= v%d;", r, sf, x->arg);
          else
            line (e, "acc%u%s = (%s) ((uint64_t) acc%u%s * (uint64_t) v%d);", r, sf, t, r, sf, x->arg);
          break;
        case PL_RED_MAX:
          line (e, "acc%u%s = v%d > acc%u%s ? v%d : acc%u%s;", r, sf, x->arg, r, sf, x->arg, r, sf);
          break;
        case PL_RED_MIN:
          line (e, "acc%u%s = v%d < acc%u%s ? v%d : acc%u%s;", r, sf, x->arg, r, sf, x->arg, r, sf);
          break;
        default:
          line (e, "if (first%u || v%d %s best%u) { best%u = v%d; acc%u = ridx; first%u = 0; }", r, x->arg,
                x->kind == PL_RED_ARGMAX ? (x->select_last ? ">=" : ">") : (x->select_last ? "<=" : "<"), r, r,
                x->arg, r, r);
          break;
        }
    }
}

/* Whether the pass needs ridx (the element's index within its row). */
static bool
pass_needs_ridx (const PlLoopPlan *lp, int pass)
{
  for (guint i = 0; i < lp->instrs->len; i++)
    {
      const PlInstr *x = at (lp, (int) i);
      if ((x->passes & (1u << pass)) && (x->op == PL_SOP_RINDEX || x->scratch >= 0))
        return true;
    }
  for (guint r = 0; r < lp->reductions->len; r++)
    if (red (lp, (int) r)->pass == pass && is_arg (red (lp, (int) r)->kind))
      return true;
  return false;
}

/* Non-temporal stores. A kernel whose output is larger than the last-level
 * cache leaves none of it there for the next kernel, so storing it normally
 * only costs a read of every line before it is written (read for
 * ownership): a third of the memory traffic of softmax. Such a row store,
 * when it writes the row contiguously (out[base(row) + ridx]), goes to a
 * staging row in L1 and pl_stream writes the finished row with streaming
 * stores (softmax [8192, 4096]: 10% faster); in the chunked pass that
 * prefetches, a staging chunk, streamed as soon as it is computed, so the
 * row's working set is one row smaller. Only in row-parallel kernels (a
 * thread owns its rows), and rows of 4 KiB or more, or of a whole number of
 * cache lines: the runtime's buffers start on a line (runtime-memory.c), so
 * such rows do too, while a short row's partial lines at both ends, shared
 * with the rows beside it, cost what streaming saves (1 KiB rows: ~15%
 * faster streamed when on a line, ~8% slower off it; layer norm [65536,
 * 256]: 9.2 -> 7.9 ms with the split reductions). */
#define STREAM_MIN_BYTES     ((int64_t) 64 << 20)
#define STREAM_MIN_ROW_BYTES 4096
#define STREAM_MIN_LINE_ROW  256   /* bytes; rows of whole lines from here */

/* Whether store st writes out[base(row) + ridx]. */
static bool
row_contiguous (const PlLoopPlan *lp, const PlStore *st)
{
  int64_t stride = 1;
  for (int k = lp->rank - 1; k >= lp->n_kept; k--)
    {
      bool nested = false;
      int64_t coef = pl_idx_coord_coef (st->index, k, &nested);
      if (nested || (lp->dims[k] > 1 && coef != stride))
        return false;
      stride *= lp->dims[k];
    }
  return true;
}

/* The dtype of the output store st writes (its staging row's). */
static PlDType
store_dtype (const Emit *e, const PlStore *st)
{
  return ((const PlValue *) e->p->outputs->pdata[st->slot])->dtype;
}

static bool
streamed (const Emit *e, const PlStore *st)
{
  const PlLoopPlan *lp = e->lp;
  int64_t size = (int64_t) pl_dtype_size (store_dtype (e, st));
  return e->stream && st->level == PL_LEVEL_ELEM && lp->total * size >= STREAM_MIN_BYTES &&
         (lp->row_len * size >= STREAM_MIN_ROW_BYTES ||
          (lp->row_len * size % 64 == 0 && lp->row_len * size >= STREAM_MIN_LINE_ROW)) &&
         row_contiguous (lp, st);
}

static bool
streams_in_pass (const Emit *e, int pass)
{
  for (guint s = 0; s < e->lp->stores->len; s++)
    {
      const PlStore *st = &g_array_index (e->lp->stores, PlStore, s);
      if (st->pass == pass && streamed (e, st))
        return true;
    }
  return false;
}

/* The finished row of each store staged in this pass, to memory; in a
 * chunked pass (e->chunk), the chunk cb..ce just computed. */
static void
emit_stream_out (Emit *e, int pass)
{
  const PlLoopPlan *lp = e->lp;
  const char *names[PL_MAX_RANK];
  for (int k = 0; k < lp->rank; k++)
    names[k] = k < lp->n_kept ? pl_codegen_coord_names ()[k] : "0";
  for (guint s = 0; s < lp->stores->len; s++)
    {
      const PlStore *st = &g_array_index (lp->stores, PlStore, s);
      if (st->pass != pass || !streamed (e, st))
        continue;
      g_autofree char *base = pl_idx_to_c (st->index, names);
      if (e->chunk)
        line (e, "pl_stream (out%d + %s + cb, st%u, sizeof *st%u * (size_t) (ce - cb));", st->slot, base, s, s);
      else
        line (e, "pl_stream (out%d + %s, st%u, sizeof *st%u * %" G_GINT64_FORMAT ");", st->slot, base, s, s,
              lp->row_len);
    }
}

static void
emit_pass_body (Emit *e, int pass)
{
  const PlLoopPlan *lp = e->lp;
  if (pass_needs_ridx (lp, pass) || streams_in_pass (e, pass))
    {
      const PlIdx *c[PL_MAX_RANK];
      int n = 0;
      for (int k = lp->n_kept; k < lp->rank; k++)
        c[n++] = pl_idx_coord (lp->arena, k);
      const PlIdx *rx = pl_idx_linearize (lp->arena, n, c, lp->dims + lp->n_kept);
      g_autofree char *s = pl_idx_to_c (rx, pl_codegen_coord_names ());
      line (e, "const int64_t ridx = %s;", s);
    }
  for (guint i = 0; i < lp->instrs->len; i++)
    {
      const PlInstr *x = at (lp, (int) i);
      if (!(x->passes & (1u << pass)) || x->level != PL_LEVEL_ELEM)
        continue;
      bool first = (x->passes & ((1u << pass) - 1)) == 0;
      if (x->scratch >= 0 && !first)
        line (e, "const %s v%u = sc%d[ridx];", pl_plan_ctype (x->dtype), i, x->scratch);
      else
        {
          pl_codegen_value (e->o, e->indent, e->lp, (int) i);
          if (x->scratch >= 0)
            line (e, "sc%d[ridx] = v%u;", x->scratch, i);
        }
    }
  emit_accumulate (e, pass);
  for (guint s = 0; s < lp->stores->len; s++)
    {
      const PlStore *st = &g_array_index (lp->stores, PlStore, s);
      if (st->level == PL_LEVEL_ELEM && st->pass == pass)
        {
          if (streamed (e, st))
            line (e, "st%u[ridx%s] = v%d;", s, e->chunk ? " - cb" : "", st->value);
          else
            emit_store (e, st);
        }
    }
}

/* Prefetching the next row. The first pass of a row waits on memory with
 * little to compute, and the passes after it compute on L1 data while the
 * memory idles; so a later pass, in chunks of PREFETCH_CHUNK elements,
 * prefetches the next row's lines of every input the first pass streams,
 * and the next row's first pass finds them in cache (softmax [8192, 4096]:
 * 21 -> 18 ms). The pass is the first one after pass 0 without a
 * reduction, else pass 1 (prefetch_pass): chunking a pass with reductions
 * would end every chunk in a combine of its split accumulators (layer norm
 * [8192, 4096], prefetching in the last pass rather than the second: 19.6
 * -> 17.8 ms, both split). Row-parallel kernels with long rows whose
 * reduced dims lie in memory as one contiguous row, the next row a row on
 * (group norm's rows of 2 x 3136: 4.06 -> 3.55 ms). */
#define PREFETCH_CHUNK   256
#define PREFETCH_MIN_ROW 1024

/* Whether x is a load of the first pass from an input whose rows are
 * contiguous (in[... + row * row_len + c]), so the next row is row_len on. */
static bool
prefetched (const PlLoopPlan *lp, const PlInstr *x)
{
  if (x->op != PL_SOP_LOAD || !x->used || x->level != PL_LEVEL_ELEM || !(x->passes & 1u) || lp->n_kept < 1)
    return false;
  /* the reduced dims laid out as one contiguous row, the last kept dim a row apart */
  int64_t stride = 1;
  for (int k = lp->rank - 1; k >= lp->n_kept - 1; k--)
    {
      bool nested = false;
      if (pl_idx_coord_coef (x->index, k, &nested) != stride || nested)
        return false;
      stride *= lp->dims[k];
    }
  return true;
}

static bool
wants_prefetch (const PlLoopPlan *lp)
{
  if (lp->n_passes < 2 || lp->rank == lp->n_kept || lp->row_len < PREFETCH_MIN_ROW)
    return false;
  for (guint i = 0; i < lp->instrs->len; i++)
    if (prefetched (lp, at (lp, (int) i)))
      return true;
  return false;
}

/* The pass that prefetches: the first one after pass 0 with no reduction (so
 * the passes with reductions can split, see SPLIT_WAYS), else pass 1; -1
 * when the kernel does not prefetch. */
static int
prefetch_pass (const PlLoopPlan *lp)
{
  if (!wants_prefetch (lp))
    return -1;
  for (int pass = 1; pass < lp->n_passes; pass++)
    {
      bool reduces = false;
      for (guint r = 0; r < lp->reductions->len; r++)
        reduces |= red (lp, (int) r)->pass == pass;
      if (!reduces)
        return pass;
    }
  return 1;
}

/* Opens the chunk loop around the reduced dim k (closed by the caller) and
 * prefetches the chunk's lines of the next row. */
static void
emit_prefetch_chunk (Emit *e, int k)
{
  const PlLoopPlan *lp = e->lp;
  int64_t n = lp->dims[k];
  line (e, "for (int64_t cb = 0; cb < %" G_GINT64_FORMAT "; cb += %d)", n, PREFETCH_CHUNK);
  line (e, "{");
  e->indent++;
  line (e, "const int64_t ce = cb + %d < %" G_GINT64_FORMAT " ? cb + %d : %" G_GINT64_FORMAT ";", PREFETCH_CHUNK, n,
        PREFETCH_CHUNK, n);
  const char *names[PL_MAX_RANK];
  for (int j = 0; j < lp->rank; j++)
    names[j] = j == k ? "pf" : pl_codegen_coord_names ()[j];
  for (guint i = 0; i < lp->instrs->len; i++)
    {
      const PlInstr *x = at (lp, (int) i);
      if (!prefetched (lp, x))
        continue;
      g_autofree char *ix = pl_idx_to_c (x->index, names);
      line (e, "for (int64_t pf = cb; pf < ce; pf += %d)", 64 / (int) MAX (pl_dtype_size (x->dtype), 1));
      line (e, "  __builtin_prefetch (&in%d[%s] + %" G_GINT64_FORMAT ");", x->slot, ix, lp->row_len);
    }
}

/* Split reductions. A float reduction along a row through `omp simd
 * reduction` is one chain of dependent vector operations, 4 cycles each: a
 * row of 4096 floats is 256 of them in a row, longer than reading the row
 * from L2. So a pass whose reductions are float sums, products, maxima or
 * minima runs the innermost reduced dim as SPLIT_WAYS slices side by side in
 * one loop (inside loops over the other reduced dims), each slice with its
 * own partial accumulators, combined after the loop; the elements after the
 * last slice get a loop of their own. Layer norm's two reductions over a
 * row of 4096 in L2: 710 -> 460 ns; its kernel on [8192, 4096], interleaved
 * A/B in one process: 20.1 -> 17.8 ms. A slice is a multiple of 16 elements
 * (whole vectors), and slices do not start a multiple of 2 KiB apart: a
 * load 4 KiB from a pending store falsely waits for it. Only when what the
 * pass touches of a row fits in L1: from L2, four slices' streams were
 * slower than one (group norm, rows of 6272 and a scratch row: 3.8 -> 4.2
 * ms when split). Not in the chunked (prefetching) pass, whose chunks would
 * each end in a combine. */
#define SPLIT_WAYS    4
#define SPLIT_MIN_ROW 256

/* The bytes of a row the pass reads or writes: its loads, its scratch rows, its staged stores. */
static int64_t
pass_row_bytes (const Emit *e, int pass)
{
  const PlLoopPlan *lp = e->lp;
  int64_t per_elem = 0;
  for (guint i = 0; i < lp->instrs->len; i++)
    {
      const PlInstr *x = at (lp, (int) i);
      if ((x->passes & (1u << pass)) && x->level == PL_LEVEL_ELEM && (x->op == PL_SOP_LOAD || x->scratch >= 0))
        per_elem += (int64_t) pl_dtype_size (x->dtype);
    }
  for (guint s = 0; s < lp->stores->len; s++)
    {
      const PlStore *st = &g_array_index (lp->stores, PlStore, s);
      if (st->pass == pass && st->level == PL_LEVEL_ELEM)
        per_elem += (int64_t) pl_dtype_size (store_dtype (e, st));
    }
  return per_elem * lp->row_len;
}

/* The slice length when the pass splits, else 0. */
static int64_t
split_slice (const Emit *e, int pass, bool par)
{
  const PlLoopPlan *lp = e->lp;
  if (par || e->chunk || lp->rank == lp->n_kept || lp->dims[lp->rank - 1] < SPLIT_MIN_ROW ||
      pass_row_bytes (e, pass) > pl_cpu_l1_bytes () * 3 / 4)
    return 0;
  bool any = false;
  for (guint r = 0; r < lp->reductions->len; r++)
    {
      const PlReduction *x = red (lp, (int) r);
      if (x->pass != pass)
        continue;
      if (is_arg (x->kind) || (x->dtype != PL_DTYPE_F32 && x->dtype != PL_DTYPE_F64))
        return 0;
      any = true;
    }
  int64_t q = lp->dims[lp->rank - 1] / SPLIT_WAYS / 16 * 16;
  if (q % 512 == 0)
    q -= 16;
  return any ? q : 0;
}

/* acc<r> = acc<r> op acc<r>_<k> for the split pass's partial accumulators, pairwise. */
static void
emit_split_combine (Emit *e, int pass)
{
  for (guint r = 0; r < e->lp->reductions->len; r++)
    {
      const PlReduction *x = red (e->lp, (int) r);
      if (x->pass != pass)
        continue;
      for (int step = 1; step < SPLIT_WAYS; step *= 2)
        for (int k = 0; k + step < SPLIT_WAYS; k += 2 * step)
          {
            g_autofree char *a = k ? g_strdup_printf ("acc%u_%d", r, k) : g_strdup_printf ("acc%u", r);
            g_autofree char *b = g_strdup_printf ("acc%u_%d", r, k + step);
            switch (x->kind)
              {
              case PL_RED_SUM: line (e, "%s += %s;", a, b); break;
              case PL_RED_PROD: line (e, "%s *= %s;", a, b); break;
              case PL_RED_MAX: line (e, "%s = %s > %s ? %s : %s;", a, b, a, b, a); break;
              default: line (e, "%s = %s < %s ? %s : %s;", a, b, a, b, a); break;
              }
          }
    }
}

/* The split pass: SPLIT_WAYS slices of the innermost dim's q elements in
 * one loop, then the rest, inside the loops over the other reduced dims. */
static void
emit_split_pass (Emit *e, int pass, int64_t q, const char *clauses)
{
  const PlLoopPlan *lp = e->lp;
  int k = lp->rank - 1;
  for (int j = lp->n_kept; j < k; j++)
    {
      line (e, "for (int64_t c%d = 0; c%d < %" G_GINT64_FORMAT "; c%d++)", j, j, lp->dims[j], j);
      line (e, "{");
      e->indent++;
    }
  line (e, "#pragma omp simd%s", clauses);
  line (e, "for (int64_t cq = 0; cq < %" G_GINT64_FORMAT "; cq++)", q);
  line (e, "{");
  e->indent++;
  for (int w = 0; w < SPLIT_WAYS; w++)
    {
      g_autofree char *suffix = w ? g_strdup_printf ("_%d", w) : NULL;
      line (e, "{");
      e->indent++;
      line (e, "const int64_t c%d = cq + %" G_GINT64_FORMAT ";", k, w * q);
      e->acc_suffix = suffix;
      emit_pass_body (e, pass);
      e->acc_suffix = NULL;
      e->indent--;
      line (e, "}");
    }
  e->indent--;
  line (e, "}");
  if (SPLIT_WAYS * q < lp->dims[k])
    {
      bool has_arg;
      g_autofree char *rest = reduction_clauses (lp, pass, 1, &has_arg);
      line (e, "#pragma omp simd%s", rest);
      line (e, "for (int64_t c%d = %" G_GINT64_FORMAT "; c%d < %" G_GINT64_FORMAT "; c%d++)", k, SPLIT_WAYS * q, k,
            lp->dims[k], k);
      line (e, "{");
      e->indent++;
      emit_pass_body (e, pass);
      e->indent--;
      line (e, "}");
    }
  for (int j = lp->n_kept; j < k; j++)
    {
      e->indent--;
      line (e, "}");
    }
  emit_split_combine (e, pass);
}

/* One pass over the row's reduced dims; par: the outermost loop is the parallel one. */
static void
emit_pass (Emit *e, int pass, bool par)
{
  const PlLoopPlan *lp = e->lp;
  bool has_arg;
  e->chunk = e->prefetch_pass == pass && !par;
  int64_t q = split_slice (e, pass, par);
  g_autofree char *clauses = reduction_clauses (lp, pass, q ? SPLIT_WAYS : 1, &has_arg);
  emit_accumulators (e, pass, q ? SPLIT_WAYS : 1);
  int n_red = lp->rank - lp->n_kept;
  if (n_red == 0)
    {
      line (e, "{");
      e->indent++;
      emit_pass_body (e, pass);
      e->indent--;
      line (e, "}");
    }
  if (q)
    emit_split_pass (e, pass, q, clauses);
  else
    {
      bool chunked = e->chunk;
      for (int k = lp->n_kept; k < lp->rank; k++)
        {
          bool inner = k == lp->rank - 1, outer = k == lp->n_kept;
          if (inner && chunked)
            emit_prefetch_chunk (e, k);
          if (par && outer && !has_arg)
            line (e, "#pragma omp parallel for%s schedule(static)%s", inner ? " simd" : "", clauses);
          else if (inner && !has_arg)
            line (e, "#pragma omp simd%s", clauses);
          if (inner && chunked)
            line (e, "for (int64_t c%d = cb; c%d < ce; c%d++)", k, k, k);
          else
            line (e, "for (int64_t c%d = 0; c%d < %" G_GINT64_FORMAT "; c%d++)", k, k, lp->dims[k], k);
          line (e, "{");
          e->indent++;
          if (inner)
            emit_pass_body (e, pass);
        }
      for (int k = lp->n_kept; k < lp->rank + chunked; k++)
        {
          if (chunked && k == lp->rank)
            emit_stream_out (e, pass);   /* the chunk, while it is in L1 */
          e->indent--;
          line (e, "}");
        }
    }
  if (!e->chunk)
    emit_stream_out (e, pass);
  e->chunk = false;
  for (guint r = 0; r < lp->reductions->len; r++)
    if (red (lp, (int) r)->pass == pass)
      {
        line (e, "const %s red%u = acc%u;", pl_plan_ctype (red (lp, (int) r)->dtype), r, r);
        for (guint i = 0; i < lp->instrs->len; i++)
          if (at (lp, (int) i)->op == PL_SOP_REDUCED && at (lp, (int) i)->reduction == (int) r && at (lp, (int) i)->used)
            pl_codegen_value (e->o, e->indent, e->lp, (int) i);
      }
}

static void
emit_row (Emit *e, bool par)
{
  const PlLoopPlan *lp = e->lp;
  pl_codegen_coords (e->o, e->indent, e->lp, "row", 0, lp->n_kept);
  for (guint i = 0; i < lp->instrs->len; i++)
    {
      const PlInstr *x = at (lp, (int) i);
      if (x->scratch >= 0)
        line (e, "%s *sc%d = (%s *) (scratch + (size_t) %d * %" G_GINT64_FORMAT " * 8);", pl_plan_ctype (x->dtype),
              x->scratch, pl_plan_ctype (x->dtype), x->scratch, lp->row_len);
    }
  int staged = lp->n_scratch;   /* staging rows follow the scratch rows */
  for (guint s = 0; s < lp->stores->len; s++)
    {
      const PlStore *st = &g_array_index (lp->stores, PlStore, s);
      const char *t = pl_plan_ctype (store_dtype (e, st));
      if (streamed (e, st))
        line (e, "%s *st%u = (%s *) (scratch + (size_t) %d * %" G_GINT64_FORMAT " * 8);", t, s, t, staged++,
              lp->row_len);
    }
  for (int pass = 0; pass <= lp->n_passes; pass++)
    {
      pl_codegen_level (e->o, e->indent, e->lp, PL_LEVEL_ROW, pass);
      if (pass < lp->n_passes)
        {
          emit_pass (e, pass, par);
        }
    }
  for (guint s = 0; s < lp->stores->len; s++)
    {
      const PlStore *st = &g_array_index (lp->stores, PlStore, s);
      if (st->level == PL_LEVEL_ROW)
        emit_store (e, st);
    }
}

/* `scratch`: n_rows rows of row_len 8-byte slots (nothing when 0). */
static void
emit_scratch_alloc (Emit *e, int n_rows)
{
  if (n_rows)
    line (e, "char *scratch = (char *) malloc ((size_t) %d * %" G_GINT64_FORMAT " * 8);", n_rows, e->lp->row_len);
}

static void
emit_rows (Emit *e)
{
  const PlLoopPlan *lp = e->lp;
  bool has_arg = false;
  for (guint r = 0; r < lp->reductions->len; r++)
    has_arg |= is_arg (red (lp, (int) r)->kind);
  bool par = lp->total >= PARALLEL_MIN;
  /* too few rows for the cores: parallelize inside each row instead */
  bool inner_par = par && lp->n_rows < 16 && lp->row_len >= 65536 && !has_arg && lp->rank > lp->n_kept;
  if (inner_par)
    {
      emit_scratch_alloc (e, lp->n_scratch);
      line (e, "for (int64_t row = 0; row < %" G_GINT64_FORMAT "; row++)", lp->n_rows);
      line (e, "{");
      e->indent++;
      emit_row (e, true);
      e->indent--;
      line (e, "}");
      if (lp->n_scratch)
        line (e, "free (scratch);");
      return;
    }
  e->stream = !e->p->in_place;
  e->prefetch_pass = prefetch_pass (lp);
  int n_rows_alloc = lp->n_scratch;   /* scratch rows, then staging rows */
  for (guint s = 0; s < lp->stores->len; s++)
    n_rows_alloc += streamed (e, &g_array_index (lp->stores, PlStore, s));
  if (par)
    line (e, "#pragma omp parallel");
  line (e, "{");
  e->indent++;
  emit_scratch_alloc (e, n_rows_alloc);
  if (par)
    line (e, "#pragma omp for schedule(static)");
  line (e, "for (int64_t row = 0; row < %" G_GINT64_FORMAT "; row++)", lp->n_rows);
  line (e, "{");
  e->indent++;
  emit_row (e, false);
  e->indent--;
  line (e, "}");
  if (n_rows_alloc > lp->n_scratch)
    line (e, "PL_SFENCE ();   /* the streaming stores reach memory before the threads join */");
  if (n_rows_alloc)
    line (e, "free (scratch);");
  e->indent--;
  line (e, "}");
  e->stream = false;
  e->prefetch_pass = -1;
}

static void
emit_loop_function (GString *o, const PlKernelPlan *p)
{
  Emit e = { o, p, p->loop, 0, .prefetch_pass = -1 };
  g_string_append_printf (o, "/* %s: %s */\n", p->name, p->ops);
  line (&e, "void %s (void *const *args)", p->name);
  line (&e, "{");
  e.indent++;
  emit_args (&e);
  pl_codegen_level (e.o, e.indent, e.lp, PL_LEVEL_CONST, 0);
  if (p->loop->reductions->len == 0)
    emit_pointwise (&e);
  else
    emit_rows (&e);
  e.indent--;
  line (&e, "}\n");
}

/* --- im2col, per layout ---------------------------------------------------------------- */

/* The matrix the conv's GEMM multiplies (cpu-backend.c, pl_cpu_conv), read
 * from X in x_layout (strides, so any layout reads right) and laid out for
 * y_layout:
 *   NCHW  image n, group g: rows (c, k...), columns (o...);
 *   NHWC  group g, chunk n of the rows (b, o...) of the batch: columns
 *         (k..., c), runs of channels (contiguous when X is NHWC);
 *   CHWN  group g, chunk n of the columns (o..., b) of the batch: rows
 *         (c, k...), runs of images (contiguous when X is CHWN).
 * Chunks (pl_cpu_conv_chunk) bound the matrix of a large batch. */

typedef struct {
  const PlConvDesc *c;
  const char       *t;
  int64_t           cg, kprod;
  int64_t           xs[PL_MAX_RANK];   /* X's strides, logical dims */
  char             *sp;                /* the spatial part of an offset into X */
  int               last;              /* the last spatial dim */
} Im2col;

/* i<d>, the input coordinate of output o<d> and kernel offset k<d>, and
 * ok<d>: whether i<0..d> are all inside the input. */
static void
emit_window (Emit *e, const PlConvDesc *c, int d)
{
  line (e, "const int64_t i%d = o%d * %" G_GINT64_FORMAT " - %" G_GINT64_FORMAT " + k%d * %" G_GINT64_FORMAT ";", d,
        d, c->strides[d], c->pads[d], d, c->dilations[d]);
  if (d > 0)
    line (e, "const int ok%d = ok%d && i%d >= 0 && i%d < %" G_GINT64_FORMAT ";", d, d - 1, d, d, c->in[d]);
  else
    line (e, "const int ok0 = i0 >= 0 && i0 < %" G_GINT64_FORMAT ";", c->in[0]);
}

/* dst[v] = src[v * stride] for v < n (src: base at the window's position),
 * or zeros outside the input; vectorized. */
static void
emit_run (Emit *e, const Im2col *m, const char *base, const char *v, int64_t n, int64_t stride)
{
  line (e, "const %s *src = %s + (ok%d ? %s : 0);", m->t, base, m->last, m->sp);
  line (e, "#pragma omp simd");
  line (e, "for (int64_t %s = 0; %s < %" G_GINT64_FORMAT "; %s++)", v, v, n, v);
  if (stride == 1)
    line (e, "  dst[%s] = ok%d ? src[%s] : (%s) 0;", v, m->last, v, m->t);
  else
    line (e, "  dst[%s] = ok%d ? src[%s * %" G_GINT64_FORMAT "] : (%s) 0;", v, m->last, v, stride, m->t);
}

static void
close_loops (Emit *e, int n)
{
  for (int d = 0; d < n; d++)
    {
      e->indent--;
      line (e, "}");
    }
}

/* NCHW: n is image * chunks + chunk, a chunk being `rows` whole rows of
 * the outermost output dim (pl_cpu_conv_nchw_rows); the chunk's columns
 * are contiguous in Y, so the GEMM writes them with Y's leading dim. */
static void
im2col_nchw (Emit *e, const Im2col *m)
{
  const PlConvDesc *c = m->c;
  int64_t rows = pl_cpu_conv_nchw_rows (c), chunks = (c->out[0] + rows - 1) / rows, inner = c->col_cols / c->out[0];
  line (e, "const int64_t img = n / %" G_GINT64_FORMAT ", lo = n %% %" G_GINT64_FORMAT " * %" G_GINT64_FORMAT
        ", hi = lo + %" G_GINT64_FORMAT " < %" G_GINT64_FORMAT " ? lo + %" G_GINT64_FORMAT " : %" G_GINT64_FORMAT ";",
        chunks, chunks, rows, rows, c->out[0], rows, c->out[0]);
  if (rows * inner * c->col_rows >= PARALLEL_MIN)
    line (e, "#pragma omp parallel for schedule(static)");
  line (e, "for (int64_t r = 0; r < %" G_GINT64_FORMAT "; r++)", c->col_rows);
  line (e, "{");
  e->indent++;
  line (e, "const int64_t ci = r / %" G_GINT64_FORMAT ";", m->kprod);
  pl_codegen_split (e->o, e->indent, "r", "k", c->n, c->kernel);
  line (e, "const %s *xc = x + img * %" G_GINT64_FORMAT " + (g * %" G_GINT64_FORMAT " + ci) * %" G_GINT64_FORMAT ";",
        m->t, m->xs[0], m->cg, m->xs[1]);
  line (e, "%s *cr = col + r * (hi - lo) * %" G_GINT64_FORMAT ";", m->t, inner);
  for (int d = 0; d < c->n; d++)
    {
      if (d == 0)
        line (e, "for (int64_t o0 = lo; o0 < hi; o0++)");
      else
        line (e, "for (int64_t o%d = 0; o%d < %" G_GINT64_FORMAT "; o%d++)", d, d, c->out[d], d);
      line (e, "{");
      e->indent++;
      emit_window (e, c, d);
    }
  g_autofree char *oix = pl_codegen_flat_index ("o", c->n, c->out);
  line (e, "cr[%s - lo * %" G_GINT64_FORMAT "] = ok%d ? xc[%s] : (%s) 0;", oix, inner, m->last, m->sp, m->t);
  close_loops (e, c->n + 1);
}

static void
im2col_nhwc (Emit *e, const Im2col *m, int64_t chunk)
{
  const PlConvDesc *c = m->c;
  line (e, "const int64_t r0 = n * %" G_GINT64_FORMAT ", r1 = r0 + %" G_GINT64_FORMAT " < %" G_GINT64_FORMAT
        " ? r0 + %" G_GINT64_FORMAT " : %" G_GINT64_FORMAT ";", chunk, chunk, c->batch * c->col_cols, chunk,
        c->batch * c->col_cols);
  if (chunk * c->col_rows >= PARALLEL_MIN)
    line (e, "#pragma omp parallel for schedule(static)");
  line (e, "for (int64_t r = r0; r < r1; r++)");
  line (e, "{");
  e->indent++;
  line (e, "const int64_t b = r / %" G_GINT64_FORMAT ";", c->col_cols);
  pl_codegen_split (e->o, e->indent, "r", "o", c->n, c->out);
  line (e, "const %s *xb = x + b * %" G_GINT64_FORMAT " + g * %" G_GINT64_FORMAT ";", m->t, m->xs[0], m->cg * m->xs[1]);
  line (e, "%s *cr = col + (r - r0) * %" G_GINT64_FORMAT ";", m->t, c->col_rows);
  for (int d = 0; d < c->n; d++)
    {
      line (e, "for (int64_t k%d = 0; k%d < %" G_GINT64_FORMAT "; k%d++)", d, d, c->kernel[d], d);
      line (e, "{");
      e->indent++;
      emit_window (e, c, d);
    }
  g_autofree char *kix = pl_codegen_flat_index ("k", c->n, c->kernel);
  line (e, "%s *dst = cr + (%s) * %" G_GINT64_FORMAT ";", m->t, kix, m->cg);
  emit_run (e, m, "xb", "ci", m->cg, m->xs[1]);
  close_loops (e, c->n + 1);
}

static void
im2col_chwn (Emit *e, const Im2col *m, int64_t chunk)
{
  const PlConvDesc *c = m->c;
  int64_t positions = chunk / c->batch;   /* a chunk is whole output positions */
  line (e, "const int64_t p0 = n * %" G_GINT64_FORMAT ", p1 = p0 + %" G_GINT64_FORMAT " < %" G_GINT64_FORMAT
        " ? p0 + %" G_GINT64_FORMAT " : %" G_GINT64_FORMAT ";", positions, positions, c->col_cols, positions,
        c->col_cols);
  if (chunk * c->col_rows >= PARALLEL_MIN)
    line (e, "#pragma omp parallel for schedule(static)");
  line (e, "for (int64_t r = 0; r < %" G_GINT64_FORMAT "; r++)", c->col_rows);
  line (e, "{");
  e->indent++;
  line (e, "const int64_t ci = r / %" G_GINT64_FORMAT ";", m->kprod);
  pl_codegen_split (e->o, e->indent, "r", "k", c->n, c->kernel);
  line (e, "const %s *xc = x + (g * %" G_GINT64_FORMAT " + ci) * %" G_GINT64_FORMAT ";", m->t, m->cg, m->xs[1]);
  line (e, "%s *cr = col + r * (p1 - p0) * %" G_GINT64_FORMAT ";", m->t, c->batch);
  line (e, "for (int64_t p = p0; p < p1; p++)");
  line (e, "{");
  e->indent++;
  pl_codegen_split (e->o, e->indent, "p", "o", c->n, c->out);
  for (int d = 0; d < c->n; d++)
    emit_window (e, c, d);
  line (e, "%s *dst = cr + (p - p0) * %" G_GINT64_FORMAT ";", m->t, c->batch);
  emit_run (e, m, "xc", "b", c->batch, m->xs[0]);
  close_loops (e, 2);
}

static void
emit_im2col (GString *o, const PlKernelPlan *p)
{
  const PlConvDesc *c = &p->conv;
  Emit e = { o, p, NULL, 0, .prefetch_pass = -1 };
  Im2col m = { c, pl_plan_ctype (c->dtype), c->c_in / c->group, 1 };
  int64_t xdims[PL_MAX_RANK] = { c->batch, c->c_in };
  for (int i = 0; i < c->n; i++)
    {
      m.kprod *= c->kernel[i];
      xdims[2 + i] = c->in[i];
    }
  pl_layout_strides (c->x_layout, 2 + c->n, xdims, m.xs);
  GString *sp = g_string_new ("0");
  for (int d = 0; d < c->n; d++)
    g_string_append_printf (sp, " + i%d * %" G_GINT64_FORMAT, d, m.xs[2 + d]);
  m.sp = g_string_free (sp, FALSE);
  m.last = c->n - 1;
  g_string_append_printf (o, "/* %s_im2col: X %s, the matrix of a %s GEMM */\n", p->name, pl_layout_name (c->x_layout),
                          pl_layout_name (c->y_layout));
  line (&e, "void %s_im2col (const %s *restrict x, %s *restrict col, int64_t n, int64_t g)", p->name, m.t, m.t);
  line (&e, "{");
  e.indent++;
  if (c->y_layout == PL_LAYOUT_NHWC)
    im2col_nhwc (&e, &m, pl_cpu_conv_chunk (c));
  else if (c->y_layout == PL_LAYOUT_CHWN)
    im2col_chwn (&e, &m, pl_cpu_conv_chunk (c));
  else
    im2col_nchw (&e, &m);
  e.indent--;
  line (&e, "}\n");
  g_free (m.sp);
}

/* Transposes (pl_plan_transpose_dim): looped plainly, the side that strides
 * through memory uses a word of every cache line it fetches before the line
 * is evicted; in tiles of TILE x TILE over (j, innermost) both sides' lines
 * stay in L1 until they are used up. */
#define TILE 16

static void
emit_transpose_function (GString *o, const PlKernelPlan *p, int j)
{
  const PlLoopPlan *lp = p->loop;
  Emit e = { o, p, lp, 0, .prefetch_pass = -1 };
  int inner = lp->rank - 1;
  int64_t outer = lp->total / (lp->dims[j] * lp->dims[inner]);
  g_string_append_printf (o, "/* %s: %s, in %dx%d tiles */\n", p->name, p->ops, TILE, TILE);
  line (&e, "void %s (void *const *args)", p->name);
  line (&e, "{");
  e.indent++;
  emit_args (&e);
  if (lp->total >= PARALLEL_MIN)
    line (&e, "#pragma omp parallel for collapse(3) schedule(static)");
  line (&e, "for (int64_t o = 0; o < %" G_GINT64_FORMAT "; o++)", outer);
  line (&e, "for (int64_t t%d = 0; t%d < %" G_GINT64_FORMAT "; t%d += %d)", j, j, lp->dims[j], j, TILE);
  line (&e, "for (int64_t t%d = 0; t%d < %" G_GINT64_FORMAT "; t%d += %d)", inner, inner, lp->dims[inner], inner, TILE);
  line (&e, "{");
  e.indent++;
  int64_t stride = 1;
  for (int k = inner - 1; k >= 0; k--)
    if (k != j)
      {
        line (&e, "const int64_t c%d = (o / %" G_GINT64_FORMAT ") %% %" G_GINT64_FORMAT ";", k, stride, lp->dims[k]);
        stride *= lp->dims[k];
      }
  const int ks[2] = { j, inner };
  for (int s = 0; s < 2; s++)
    {
      int k = ks[s];
      line (&e, "const int64_t e%d = t%d + %d < %" G_GINT64_FORMAT " ? t%d + %d : %" G_GINT64_FORMAT ";", k, k, TILE,
            lp->dims[k], k, TILE, lp->dims[k]);
    }
  line (&e, "for (int64_t c%d = t%d; c%d < e%d; c%d++)", j, j, j, j, j);
  line (&e, "{");
  e.indent++;
  line (&e, "#pragma omp simd");
  line (&e, "for (int64_t c%d = t%d; c%d < e%d; c%d++)", inner, inner, inner, inner, inner);
  line (&e, "{");
  e.indent++;
  pl_codegen_level (e.o, e.indent, lp, PL_LEVEL_ELEM, 0);
  emit_store (&e, &g_array_index (lp->stores, PlStore, 0));
  for (int k = 0; k < 3; k++)
    {
      e.indent--;
      line (&e, "}");
    }
  e.indent--;
  line (&e, "}\n");
}

bool
pl_codegen_c_kernel (GString *out, const PlKernelPlan *p)
{
  switch (p->kind)
    {
    case PL_PLAN_LOOP:
      if (pl_plan_transpose_dim (p) >= 0)
        emit_transpose_function (out, p, pl_plan_transpose_dim (p));
      else
        emit_loop_function (out, p);
      return true;
    case PL_PLAN_GEMM:
      if (p->loop)
        emit_loop_function (out, p);
      return p->loop != NULL;
    case PL_PLAN_POOL:
      pl_pool_emit_c (out, &p->pool, p->name);
      return true;
    case PL_PLAN_CONV:
      if (p->conv.transpose)
        {
          g_autofree char *name = g_strdup_printf ("%s_col2im", p->name);
          pl_conv_transpose_emit_c (out, &p->conv, name);
        }
      else if (p->conv.impl == PL_CONV_IMPL_DIRECT)
        {
          g_autofree char *name = g_strdup_printf ("%s_direct", p->name);
          pl_conv_direct_emit_c (out, &p->conv, name);
        }
      else
        emit_im2col (out, p);
      if (p->loop)
        emit_loop_function (out, p);
      return true;
    default:
      return false;
    }
}
