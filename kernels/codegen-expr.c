/* codegen-expr.c — what the C and CUDA generators share: the text of each
 * scalar instruction and the helper prelude. The math functions have the
 * same names in C (libm) and CUDA (expf, erff, log1p, ...), so one printer
 * serves both; only the helpers' qualifiers differ (PLK_FN).
 *
 * Integer + - * wrap through uint64 (no signed-overflow UB), as the
 * reference does; max/min propagate NaN as numpy.maximum does.
 */
#define G_LOG_DOMAIN "passlab"
#include "codegen.h"

#include <math.h>
#include <string.h>

const char *const *
pl_codegen_coord_names (void)
{
  static const char *const names[PL_MAX_RANK] = { "c0", "c1", "c2", "c3", "c4", "c5", "c6", "c7" };
  return names;
}

const char *
pl_codegen_common_prelude (void)
{
  return
    /* one exp, of -|x| (never overflows), one divide; NaN propagates through e */
    "PLK_FN float pl_sigmoidf (float x) { float e = expf (-fabsf (x)); return (x >= 0.0f ? 1.0f : e) / (1.0f + e); }\n"
    "PLK_FN double pl_sigmoid (double x) { double e = exp (-fabs (x)); return (x >= 0.0 ? 1.0 : e) / (1.0 + e); }\n"
    "PLK_FN float pl_maxf (float a, float b) { return (a != a || b != b) ? a + b : (a > b ? a : b); }\n"
    "PLK_FN float pl_minf (float a, float b) { return (a != a || b != b) ? a + b : (a < b ? a : b); }\n"
    "PLK_FN double pl_max (double a, double b) { return (a != a || b != b) ? a + b : (a > b ? a : b); }\n"
    "PLK_FN double pl_min (double a, double b) { return (a != a || b != b) ? a + b : (a < b ? a : b); }\n"
    /* Mod: truncated (fmod), or floored (numpy.mod: the divisor's sign); an integer one by 0 is 0
     * (the kernel's check fails the run), by -1 is 0 (no INT_MIN % -1 trap) */
    "PLK_FN float pl_modf (float a, float b, int trunc)\n"
    "{ float r = fmodf (a, b); return (!trunc && r != 0 && (r < 0) != (b < 0)) ? r + b : r; }\n"
    "PLK_FN double pl_mod (double a, double b, int trunc)\n"
    "{ double r = fmod (a, b); return (!trunc && r != 0 && (r < 0) != (b < 0)) ? r + b : r; }\n"
    "PLK_FN int64_t pl_imod (int64_t a, int64_t b, int trunc)\n"
    "{ if (b == 0 || b == -1) return 0; int64_t r = a % b; return (!trunc && r != 0 && (r < 0) != (b < 0)) ? r + b : r; }\n";
}

static bool
is_f32 (PlDType t)
{
  return t == PL_DTYPE_F32;
}

static bool
is_unsigned (PlDType t)
{
  return t == PL_DTYPE_U8 || t == PL_DTYPE_U16 || t == PL_DTYPE_U32 || t == PL_DTYPE_U64 || t == PL_DTYPE_BOOL;
}

char *
pl_codegen_literal (PlDType dtype, double f, int64_t i)
{
  if (pl_dtype_is_float (dtype))
    {
      bool s = is_f32 (dtype);
      if (isnan (f))
        return g_strdup (s ? "PL_NANF" : "PL_NAN");
      if (isinf (f))
        return g_strdup_printf ("%s%s", f < 0 ? "-" : "", s ? "PL_INFF" : "PL_INF");
      char buf[G_ASCII_DTOSTR_BUF_SIZE];
      if (s)
        {
          g_ascii_formatd (buf, sizeof buf, "%.9g", (float) f);
          bool dot = strpbrk (buf, ".eE") != NULL;
          return g_strdup_printf ("%s%sf", buf, dot ? "" : ".0");
        }
      g_ascii_formatd (buf, sizeof buf, "%.17g", f);
      return g_strdup_printf ("%s%s", buf, strpbrk (buf, ".eE") ? "" : ".0");
    }
  if (dtype == PL_DTYPE_U64)
    return g_strdup_printf ("((uint64_t) %" G_GUINT64_FORMAT "ULL)", (guint64) i);
  if (i == G_MININT64)
    return g_strdup ("((int64_t) (-9223372036854775807LL - 1))");
  return g_strdup_printf ("((%s) %" G_GINT64_FORMAT "LL)", pl_plan_ctype (dtype), i);
}

/* A float math function: "expf(v3)" for f32, "exp(v3)" for f64. */
static char *
fmath (const char *fn, PlDType t, const char *a)
{
  return g_strdup_printf ("%s%s (%s)", fn, is_f32 (t) ? "f" : "", a);
}

/* Pow with a constant exponent becomes multiplications where that is exact enough. */
static char *
print_pow (const PlLoopPlan *lp, const PlInstr *x, const char *a, const char *b)
{
  const PlInstr *e = pl_loop_instr (lp, x->a[1]);
  if (e->op == PL_SOP_CONST)
    {
      if (e->imm == 2.0)
        return g_strdup_printf ("(%s * %s)", a, a);
      if (e->imm == 3.0)
        return g_strdup_printf ("(%s * %s * %s)", a, a, a);
      if (e->imm == 1.0)
        return g_strdup (a);
      if (e->imm == 0.5)
        return fmath ("sqrt", x->dtype, a);
    }
  return g_strdup_printf ("pow%s (%s, %s)", is_f32 (x->dtype) ? "f" : "", a, b);
}

static char *
print_binary (const PlLoopPlan *lp, const PlInstr *x, const char *a, const char *b)
{
  PlDType t = pl_loop_instr (lp, x->a[0])->dtype;
  const char *ct = pl_plan_ctype (t);
  bool fl = pl_dtype_is_float (t);
  const char *op = NULL;
  switch (x->op)
    {
    case PL_SOP_ADD: op = "+"; break;
    case PL_SOP_SUB: op = "-"; break;
    case PL_SOP_MUL: op = "*"; break;
    case PL_SOP_DIV:
      /* by a value of the row (or a constant) in an element loop: one
       * reciprocal per row the compiler hoists, a multiply per element
       * (a divide costs ~10x; the result moves by <= 1 ulp) */
      if (fl && x->imm_i != PL_DIV_EXACT && x->level == PL_LEVEL_ELEM
          && pl_loop_instr (lp, x->a[1])->level != PL_LEVEL_ELEM)
        return g_strdup_printf ("(%s * (%s / %s))", a, is_f32 (t) ? "1.0f" : "1.0", b);
      if (fl)
        return g_strdup_printf ("(%s / %s)", a, b);
      if (is_unsigned (t))
        return g_strdup_printf ("((%s) (%s == 0 ? 0 : %s / %s))", ct, b, a, b);
      /* by 0: 0 (the kernel's check fails the run); by -1: the wrapped negation (INT_MIN / -1 traps) */
      return g_strdup_printf ("((%s) (%s == 0 ? 0 : %s == -1 ? (%s) (0 - (uint64_t) %s) : %s / %s))", ct, b, b, ct, a,
                              a, b);
    case PL_SOP_MOD:
      if (fl)
        return g_strdup_printf ("pl_mod%s (%s, %s, %d)", is_f32 (t) ? "f" : "", a, b, (int) x->imm_i);
      if (is_unsigned (t))
        return g_strdup_printf ("((%s) (%s == 0 ? 0 : %s %% %s))", ct, b, a, b);
      return g_strdup_printf ("((%s) pl_imod ((int64_t) %s, (int64_t) %s, %d))", ct, a, b, (int) x->imm_i);
    case PL_SOP_POW:
      return print_pow (lp, x, a, b);
    case PL_SOP_MAX:
    case PL_SOP_MIN:
      if (fl)
        return g_strdup_printf ("pl_%s%s (%s, %s)", x->op == PL_SOP_MAX ? "max" : "min", is_f32 (t) ? "f" : "", a, b);
      return g_strdup_printf ("(%s %s %s ? %s : %s)", a, x->op == PL_SOP_MAX ? ">" : "<", b, a, b);
    case PL_SOP_EQ: return g_strdup_printf ("((uint8_t) (%s == %s))", a, b);
    case PL_SOP_LT: return g_strdup_printf ("((uint8_t) (%s < %s))", a, b);
    case PL_SOP_LE: return g_strdup_printf ("((uint8_t) (%s <= %s))", a, b);
    case PL_SOP_GT: return g_strdup_printf ("((uint8_t) (%s > %s))", a, b);
    case PL_SOP_GE: return g_strdup_printf ("((uint8_t) (%s >= %s))", a, b);
    case PL_SOP_AND: return g_strdup_printf ("((uint8_t) (%s != 0 && %s != 0))", a, b);
    case PL_SOP_OR: return g_strdup_printf ("((uint8_t) (%s != 0 || %s != 0))", a, b);
    case PL_SOP_XOR: return g_strdup_printf ("((uint8_t) ((%s != 0) != (%s != 0)))", a, b);
    default:
      g_return_val_if_reached (g_strdup ("0"));
    }
  if (fl)
    return g_strdup_printf ("(%s %s %s)", a, op, b);
  return g_strdup_printf ("((%s) ((uint64_t) %s %s (uint64_t) %s))", ct, a, op, b);
}

static char *
print_unary (const PlInstr *x, PlDType t, const char *a)
{
  const char *ct = pl_plan_ctype (x->dtype);
  static const struct { PlScalarOp op; const char *fn; } fns[] = {
    { PL_SOP_EXP, "exp" }, { PL_SOP_EXPM1, "expm1" }, { PL_SOP_LOG, "log" }, { PL_SOP_LOG1P, "log1p" },
    { PL_SOP_SQRT, "sqrt" }, { PL_SOP_TANH, "tanh" }, { PL_SOP_ERF, "erf" }, { PL_SOP_SIN, "sin" },
    { PL_SOP_COS, "cos" }, { PL_SOP_TAN, "tan" }, { PL_SOP_ASIN, "asin" }, { PL_SOP_ACOS, "acos" },
    { PL_SOP_ATAN, "atan" }, { PL_SOP_SINH, "sinh" }, { PL_SOP_COSH, "cosh" }, { PL_SOP_ASINH, "asinh" },
    { PL_SOP_ACOSH, "acosh" }, { PL_SOP_ATANH, "atanh" }, { PL_SOP_FLOOR, "floor" }, { PL_SOP_CEIL, "ceil" },
    { PL_SOP_ROUND, "rint" },
  };
  for (size_t k = 0; k < G_N_ELEMENTS (fns); k++)
    if (fns[k].op == x->op)
      return fmath (fns[k].fn, t, a);
  bool fl = pl_dtype_is_float (t);
  switch (x->op)
    {
    case PL_SOP_NEG:
      return fl ? g_strdup_printf ("(-%s)", a) : g_strdup_printf ("((%s) (0 - (uint64_t) %s))", ct, a);
    case PL_SOP_ABS:
      if (fl)
        return fmath ("fabs", t, a);
      if (is_unsigned (t))
        return g_strdup (a);
      return g_strdup_printf ("((%s) (%s < 0 ? 0 - (uint64_t) %s : (uint64_t) %s))", ct, a, a, a);
    case PL_SOP_RECIP:
      return g_strdup_printf ("(%s / %s)", is_f32 (t) ? "1.0f" : "1.0", a);
    case PL_SOP_SIGMOID:
      return g_strdup_printf ("pl_sigmoid%s (%s)", is_f32 (t) ? "f" : "", a);
    case PL_SOP_SIGN:
      if (fl)
        return g_strdup_printf ("(%s > 0 ? (%s) 1 : %s < 0 ? (%s) -1 : %s)", a, ct, a, ct, a);
      if (is_unsigned (t))
        return g_strdup_printf ("((%s) (%s != 0))", ct, a);
      return g_strdup_printf ("((%s) ((%s > 0) - (%s < 0)))", ct, a, a);
    case PL_SOP_NOT:
      return g_strdup_printf ("((uint8_t) (%s == 0))", a);
    case PL_SOP_ISNAN:
      return g_strdup_printf ("((uint8_t) (%s != %s))", a, a);
    case PL_SOP_ISINF:
      {
        const char *inf = is_f32 (t) ? "PL_INFF" : "PL_INF";
        return g_strdup_printf ("((uint8_t) ((%d && %s == %s) || (%d && %s == -%s)))", (x->imm_i & 2) != 0, a, inf,
                                (x->imm_i & 1) != 0, a, inf);
      }
    case PL_SOP_CAST:
      if (x->dtype == PL_DTYPE_BOOL)
        return g_strdup_printf ("((uint8_t) (%s != 0))", a);
      return g_strdup_printf ("((%s) %s)", ct, a);
    default:
      g_return_val_if_reached (g_strdup ("0"));
    }
}

char *
pl_codegen_expr (const PlLoopPlan *lp, int i)
{
  const PlInstr *x = pl_loop_instr (lp, i);
  switch (x->op)
    {
    case PL_SOP_LOAD:
      {
        g_autofree char *ix = pl_idx_to_c (x->index, pl_codegen_coord_names ());
        if (PL_INSTR_IS_GATHER (x))
          return g_strdup_printf ("in%d[%s + v%d * %" G_GINT64_FORMAT "]", x->slot, ix, x->a[0], x->imm_i);
        return x->slot == PL_SLOT_INDEX ? g_strdup_printf ("((int64_t) (%s))", ix)
                                        : g_strdup_printf ("in%d[%s]", x->slot, ix);
      }
    case PL_SOP_CONST:
      return pl_codegen_literal (x->dtype, x->imm, x->imm_i);
    case PL_SOP_REDUCED:
      return g_strdup_printf ("red%d", x->reduction);
    case PL_SOP_RINDEX:
      return g_strdup ("ridx");
    case PL_SOP_SELECT:
      return g_strdup_printf ("(v%d ? v%d : v%d)", x->a[0], x->a[1], x->a[2]);
    case PL_SOP_CHECK:   /* bad ? report check imm_i with the index, true : false */
      return g_strdup_printf ("((uint8_t) (v%d ? (pl_flag (pl_status, %" G_GINT64_FORMAT ", v%d), 1) : 0))", x->a[0],
                              x->imm_i, x->a[1]);
    default:
      break;
    }
  g_autofree char *a = g_strdup_printf ("v%d", x->a[0]);
  if (x->n_args == 2)
    {
      g_autofree char *b = g_strdup_printf ("v%d", x->a[1]);
      return print_binary (lp, x, a, b);
    }
  return print_unary (x, pl_loop_instr (lp, x->a[0])->dtype, a);
}

void
pl_codegen_vline (GString *o, int indent, const char *fmt, va_list ap)
{
  for (int i = 0; i < indent; i++)
    g_string_append (o, "  ");
  g_string_append_vprintf (o, fmt, ap);
  g_string_append_c (o, '\n');
}

void
pl_codegen_line (GString *o, int indent, const char *fmt, ...)
{
  va_list ap;
  va_start (ap, fmt);
  pl_codegen_vline (o, indent, fmt, ap);
  va_end (ap);
}

void
pl_codegen_split (GString *o, int indent, const char *var, const char *prefix, int n, const int64_t *sizes)
{
  int64_t stride = 1;
  for (int d = n - 1; d >= 0; d--)
    {
      pl_codegen_line (o, indent, "const int64_t %s%d = (%s / %" G_GINT64_FORMAT ") %% %" G_GINT64_FORMAT ";", prefix, d,
                       var, stride, sizes[d]);
      stride *= sizes[d];
    }
}

char *
pl_codegen_flat_index (const char *prefix, int n, const int64_t *sizes)
{
  GString *s = g_string_new ("0");
  for (int d = 0; d < n; d++)
    {
      g_string_prepend_c (s, '(');
      g_string_append_printf (s, ") * %" G_GINT64_FORMAT " + %s%d", sizes[d], prefix, d);
    }
  return g_string_free (s, FALSE);
}

void
pl_codegen_value (GString *o, int indent, const PlLoopPlan *lp, int i)
{
  g_autofree char *x = pl_codegen_expr (lp, i);
  pl_codegen_line (o, indent, "const %s v%d = %s;", pl_plan_ctype (g_array_index (lp->instrs, PlInstr, i).dtype), i, x);
}

void
pl_codegen_reduced_values (GString *o, int indent, const PlLoopPlan *lp, int r)
{
  for (guint i = 0; i < lp->instrs->len; i++)
    {
      const PlInstr *x = pl_loop_instr (lp, (int) i);
      if (x->op == PL_SOP_REDUCED && x->reduction == r && x->used)
        pl_codegen_value (o, indent, lp, (int) i);
    }
}

bool
pl_codegen_pass_needs_ridx (const PlLoopPlan *lp, int pass)
{
  for (guint i = 0; i < lp->instrs->len; i++)
    {
      const PlInstr *x = pl_loop_instr (lp, (int) i);
      if ((x->passes & (1u << pass)) && (x->op == PL_SOP_RINDEX || x->scratch >= 0))
        return true;
    }
  for (guint r = 0; r < lp->reductions->len; r++)
    {
      const PlReduction *x = pl_loop_reduction (lp, (int) r);
      if (x->pass == pass && pl_reduce_is_arg (x->kind))
        return true;
    }
  return false;
}

void
pl_codegen_level (GString *o, int indent, const PlLoopPlan *lp, PlLevel level, int phase)
{
  for (guint i = 0; i < lp->instrs->len; i++)
    {
      const PlInstr *x = &g_array_index (lp->instrs, PlInstr, i);
      if (x->used && x->level == level && x->op != PL_SOP_REDUCED && (level != PL_LEVEL_ROW || x->phase == phase))
        pl_codegen_value (o, indent, lp, (int) i);
    }
}

void
pl_codegen_coords (GString *o, int indent, const PlLoopPlan *lp, const char *var, int first, int last)
{
  int64_t stride = 1;
  for (int k = last - 1; k >= first; k--)
    {
      if (k == first)
        pl_codegen_line (o, indent, "const int64_t c%d = %s / %" G_GINT64_FORMAT ";", k, var, stride);
      else
        pl_codegen_line (o, indent, "const int64_t c%d = (%s / %" G_GINT64_FORMAT ") %% %" G_GINT64_FORMAT ";", k, var,
             stride, lp->dims[k]);
      stride *= lp->dims[k];
    }
}
