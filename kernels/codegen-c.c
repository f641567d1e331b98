/* codegen-c.c — C for the CPU from kernel plans (kernel-plan.h).
 *
 * Each LOOP plan becomes `void <name> (void *const *args)` (args: input
 * slots, then output slots), compiled with -O3 -march=native -fopenmp:
 *
 *  - pointwise: the loop dims after coalescing are an OpenMP-parallel loop
 *    over the outer dims (coordinates recovered once per inner loop) around
 *    an `omp simd` loop over the innermost dim, split at its edges where
 *    clamps or mirrors on it would make its loads gathers, and into phases
 *    taken side by side where it is divided by 2 to 4 (codegen-c-peel.c);
 *  - rows (codegen-c-rows.c): an OpenMP-parallel loop over the rows; per row, one simd loop
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
 * POOL, SCAN, SCATTER and TOPK plans are `void <name> (void *const *args)`
 * too, from pool.c, scan.c, scatter.c and topk.c.
 */
#define G_LOG_DOMAIN "passlab"
#include "codegen-c-private.h"

#include "backend.h"
#include "conv-direct.h"
#include "conv-transpose.h"
#include "gemm-small.h"

#include <string.h>


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
 * streaming stores before later stores. Compiler builtins, not
 * <immintrin.h>: parsing that took 0.25 s of a module's 0.5 s compile. */
static const char stream_prelude[] =
  "#if defined (__AVX512F__) || defined (__AVX__) || defined (__SSE2__)\n"
  "#define PL_SFENCE() __builtin_ia32_sfence ()\n"
  "#if defined (__AVX512F__)\n"
  "typedef long long pl_vline __attribute__ ((vector_size (64)));\n"
  "#define PL_MOVNT __builtin_ia32_movntdq512\n"
  "#elif defined (__AVX__)\n"
  "typedef long long pl_vline __attribute__ ((vector_size (32)));\n"
  "#define PL_MOVNT __builtin_ia32_movntdq256\n"
  "#else\n"
  "typedef long long pl_vline __attribute__ ((vector_size (16)));\n"
  "#define PL_MOVNT __builtin_ia32_movntdq\n"
  "#endif\n"
  "#ifdef __clang__\n"
  "#define PL_STREAM_STORE(d, v) __builtin_nontemporal_store (v, (pl_vline *) (d))\n"
  "#else\n"
  "#define PL_STREAM_STORE(d, v) PL_MOVNT ((pl_vline *) (d), v)\n"
  "#endif\n"
  "#else\n#define PL_SFENCE() ((void) 0)\n#endif\n"
  "#if defined (__AVX512BW__)\n"
  "typedef char pl_v64qi __attribute__ ((vector_size (64)));\n"
  "#define PL_COPY_PART(d, s, n) do { unsigned long long m_ = (1ull << (n)) - 1;"
  " __builtin_ia32_storedquqi512_mask ((void *) (d),"
  " __builtin_ia32_loaddquqi512_mask ((const void *) (s), (pl_v64qi) { 0 }, m_), m_); } while (0)\n"
  "#else\n#define PL_COPY_PART(d, s, n) memcpy (d, s, n)\n#endif\n"
  "PLK_FN void pl_stream (void *restrict dst, const void *restrict src, size_t n)\n{\n"
  "  char *d = (char *) dst;\n  const char *s = (const char *) src;\n"
  "#if defined (__AVX512F__) || defined (__AVX__) || defined (__SSE2__)\n"
  "  size_t head = (64 - ((uintptr_t) d & 63)) & 63;\n"
  "  head = head < n ? head : n;\n"
  "  if (head)\n    PL_COPY_PART (d, s, head);\n"
  "  d += head, s += head, n -= head;\n"
  "  for (; n >= 64; n -= 64, d += 64, s += 64)\n"
  "    for (size_t k = 0; k < 64; k += sizeof (pl_vline))\n"
  "      {\n"
  "        pl_vline v;\n"
  "        memcpy (&v, s + k, sizeof v);\n"
  "        PL_STREAM_STORE (d + k, v);\n"
  "      }\n"
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
    "#define PL_INF __builtin_inf ()\n#define PL_NAN __builtin_nan (\"\")\n"
    /* an index out of range: the first thread to claim the status writes which check and the index */
    "PLK_FN void pl_flag (int64_t *s, int64_t check, int64_t index)\n"
    "{\n  int64_t none = 0;\n"
    "  if (__atomic_compare_exchange_n (s, &none, check, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED))\n"
    "    __atomic_store_n (s + 1, index, __ATOMIC_RELAXED);\n}\n\n"
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

/* --- emitting lines (the emitter: codegen-c-private.h) ----------------------------- */

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
  if (pl_kernel_plan_checks (p))
    line (e, "int64_t *pl_status = (int64_t *) args[%d];", n_in + (int) p->outputs->len);
}

/* --- pointwise -------------------------------------------------------------------------- */

static void
emit_pointwise_body (Emit *e)
{
  pl_codegen_level (e->o, e->indent, e->lp, PL_LEVEL_ELEM, 0);
  for (guint s = 0; s < e->lp->stores->len; s++)
    emit_store (e, &g_array_index (e->lp->stores, PlStore, s));
}

/* for c<k> in [from, to): the body */
static void
emit_inner_loop (Emit *e, const char *pragma, int k, int64_t from, int64_t to)
{
  line (e, "%s", pragma);
  line (e, "for (int64_t c%d = %" G_GINT64_FORMAT "; c%d < %" G_GINT64_FORMAT "; c%d++)", k, from, k, to, k);
  line (e, "{");
  e->indent++;
  emit_pointwise_body (e);
  e->indent--;
  line (e, "}");
}

/* The peeled interior q elements an iteration: a block per phase */
static void
emit_phases (Emit *e, const PlCgcPeel *peel, int k)
{
  const PlLoopPlan *lp = e->lp;
  line (e, "#pragma omp simd");
  line (e, "for (int64_t c%d = 0; c%d < %" G_GINT64_FORMAT "; c%d++)", k, k, (peel->hi - peel->lo) / peel->q, k);
  line (e, "{");
  e->indent++;
  for (int r = 0; r < peel->q; r++)
    {
      line (e, "{");
      e->indent++;
      e->lp = peel->phase[r];
      emit_pointwise_body (e);
      e->indent--;
      line (e, "}");
    }
  e->lp = lp;
  e->indent--;
  line (e, "}");
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
  PlCgcPeel peel;
  if (!(par && inner_par) && pl_cgc_peel_inner (lp, &peel))
    {
      /* the edges with the plan as it is, the interior with its clamps gone */
      if (peel.lo > 0)
        emit_inner_loop (e, "#pragma omp simd", r - 1, 0, peel.lo);
      if (peel.q > 1)
        emit_phases (e, &peel, r - 1);
      else
        {
          e->lp = peel.mid;
          emit_inner_loop (e, "#pragma omp simd", r - 1, 0, peel.hi - peel.lo);
          e->lp = lp;
        }
      if (peel.hi < inner)
        emit_inner_loop (e, "#pragma omp simd", r - 1, peel.hi, inner);
      pl_cgc_peel_clear (&peel);
    }
  else
    emit_inner_loop (e, par && inner_par ? "#pragma omp parallel for simd schedule(static)" : "#pragma omp simd", r - 1,
                     0, inner);
  if (r > 1)
    {
      e->indent--;
      line (e, "}");
    }
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
    pl_cgc_emit_rows (&e);
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
      if (pl_gemm_small_applies (&p->gemm))
        {
          g_autofree char *name = g_strdup_printf ("%s_smallm", p->name);
          pl_gemm_small_emit_c (out, &p->gemm, name);
        }
      if (p->loop)
        emit_loop_function (out, p);
      return p->loop != NULL || pl_gemm_small_applies (&p->gemm);
    case PL_PLAN_POOL:
      pl_pool_emit_c (out, &p->pool, p->name);
      return true;
    case PL_PLAN_SCAN:
      pl_scan_emit_c (out, &p->scan, p->name);
      return true;
    case PL_PLAN_SCATTER:
      pl_scatter_emit_c (out, &p->scatter, p->name);
      return true;
    case PL_PLAN_TOPK:
      pl_topk_emit_c (out, &p->topk, p->name);
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
