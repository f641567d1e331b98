/* codegen-c-rows.c — the C of a LOOP plan with reductions (see the top of
 * codegen-c.c): an OpenMP-parallel loop over the rows, per row one simd
 * loop per pass over the reduced dims, split float reductions, the next
 * row's prefetch and streamed outputs. */
#define G_LOG_DOMAIN "passlab"
#include "codegen-c-private.h"
#include "cpu-machine.h"

#include <string.h>

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
      const PlReduction *x = pl_loop_reduction (lp, (int) r);
      if (x->pass != pass)
        continue;
      static const char *const ops[] = { "+", "*", "max", "min" };
      if (pl_reduce_is_arg (x->kind))
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
      const PlReduction *x = pl_loop_reduction (e->lp, (int) r);
      if (x->pass != pass)
        continue;
      PlDType at_t = pl_loop_instr (e->lp, x->arg)->dtype;
      const char *t = pl_plan_ctype (pl_reduce_is_arg (x->kind) ? at_t : x->dtype);
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
      const PlReduction *x = pl_loop_reduction (e->lp, (int) r);
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
  if (pl_codegen_pass_needs_ridx (lp, pass) || streams_in_pass (e, pass))
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
      const PlInstr *x = pl_loop_instr (lp, (int) i);
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
  if (x->op != PL_SOP_LOAD || PL_INSTR_IS_GATHER (x) || x->slot == PL_SLOT_INDEX || !x->used || x->level != PL_LEVEL_ELEM ||
      !(x->passes & 1u) || lp->n_kept < 1)
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
    if (prefetched (lp, pl_loop_instr (lp, (int) i)))
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
        reduces |= pl_loop_reduction (lp, (int) r)->pass == pass;
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
      const PlInstr *x = pl_loop_instr (lp, (int) i);
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
      const PlInstr *x = pl_loop_instr (lp, (int) i);
      if ((x->passes & (1u << pass)) && x->level == PL_LEVEL_ELEM && ((x->op == PL_SOP_LOAD && x->slot != PL_SLOT_INDEX) || x->scratch >= 0))
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
      const PlReduction *x = pl_loop_reduction (lp, (int) r);
      if (x->pass != pass)
        continue;
      if (pl_reduce_is_arg (x->kind) || (x->dtype != PL_DTYPE_F32 && x->dtype != PL_DTYPE_F64))
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
      const PlReduction *x = pl_loop_reduction (e->lp, (int) r);
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
    if (pl_loop_reduction (lp, (int) r)->pass == pass)
      {
        line (e, "const %s red%u = acc%u;", pl_plan_ctype (pl_loop_reduction (lp, (int) r)->dtype), r, r);
        pl_codegen_reduced_values (e->o, e->indent, e->lp, (int) r);
      }
}

static void
emit_row (Emit *e, bool par)
{
  const PlLoopPlan *lp = e->lp;
  pl_codegen_coords (e->o, e->indent, e->lp, "row", 0, lp->n_kept);
  for (guint i = 0; i < lp->instrs->len; i++)
    {
      const PlInstr *x = pl_loop_instr (lp, (int) i);
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

void
pl_cgc_emit_rows (Emit *e)
{
  const PlLoopPlan *lp = e->lp;
  bool has_arg = false;
  for (guint r = 0; r < lp->reductions->len; r++)
    has_arg |= pl_reduce_is_arg (pl_loop_reduction (lp, (int) r)->kind);
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
