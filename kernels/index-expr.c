/* index-expr.c — canonical index expressions (see index-expr.h).
 *
 * Atoms and expressions are hash-consed by their canonical text, so equal
 * expressions share one pointer and comparisons are pointer comparisons.
 * The simplification rules (all for non-negative values):
 *
 *   (h + l) / d = h/d + l/d      when every coefficient of h is a multiple of d
 *   (h + l) % d = l % d          same condition
 *   l / d = 0, l % d = l         when l's largest value is below d
 *   (e / n) / d = e / (n d)
 *   k (e % n) + k n (e / n) = k e,  k (e % n) + k n ((e / n) % m) = k (e % (n m))
 *
 * which is everything a reshape that splits or merges whole dims needs:
 * delinearize(linearize(i)) folds back to i.
 */
#define G_LOG_DOMAIN "passlab"
#include "index-expr.h"

#include <stdlib.h>
#include <string.h>

struct _PlIdxArena {
  int         n_coords;
  int64_t    *sizes;
  GHashTable *atoms;  /* key -> PlIdxAtom* (owned) */
  GHashTable *exprs;  /* key -> PlIdx* (owned) */
};

static void
atom_free (gpointer p)
{
  PlIdxAtom *a = p;
  g_free ((char *) a->key);
  g_free (a);
}

static void
expr_free (gpointer p)
{
  PlIdx *x = p;
  g_free (x->terms);
  g_free ((char *) x->key);
  g_free (x);
}

PlIdxArena *
pl_idx_arena_new (int n_coords, const int64_t *sizes)
{
  PlIdxArena *a = g_new0 (PlIdxArena, 1);
  a->n_coords = n_coords;
  a->sizes = g_memdup2 (sizes, sizeof (int64_t) * MAX (n_coords, 1));
  /* keys are owned by the values */
  a->atoms = g_hash_table_new_full (g_str_hash, g_str_equal, NULL, atom_free);
  a->exprs = g_hash_table_new_full (g_str_hash, g_str_equal, NULL, expr_free);
  return a;
}

void
pl_idx_arena_free (PlIdxArena *a)
{
  if (!a)
    return;
  g_hash_table_unref (a->exprs);
  g_hash_table_unref (a->atoms);
  g_free (a->sizes);
  g_free (a);
}

int
pl_idx_arena_n_coords (const PlIdxArena *a)
{
  return a->n_coords;
}

int64_t
pl_idx_arena_size (const PlIdxArena *a, int coord)
{
  return a->sizes[coord];
}

/* --- interning ------------------------------------------------------------------- */

static const PlIdxAtom *
intern_atom_shift (PlIdxArena *a, PlIdxAtomKind kind, int coord, const PlIdx *arg, int64_t divisor, int64_t shift)
{
  char *key = kind == PL_IDX_COORD ? g_strdup_printf ("c%d", coord)
              : kind == PL_IDX_CLAMP
              ? g_strdup_printf ("(%s-%" G_GINT64_FORMAT "|%" G_GINT64_FORMAT ")", arg->key, shift, divisor)
              : kind == PL_IDX_REFLECT
              ? g_strdup_printf ("(%s-%" G_GINT64_FORMAT "~%" G_GINT64_FORMAT ")", arg->key, shift, divisor)
              : g_strdup_printf ("(%s%c%" G_GINT64_FORMAT ")", arg->key, kind == PL_IDX_DIV ? '/' : '%', divisor);
  PlIdxAtom *at = g_hash_table_lookup (a->atoms, key);
  if (at)
    {
      g_free (key);
      return at;
    }
  at = g_new0 (PlIdxAtom, 1);
  at->kind = kind;
  at->coord = coord;
  at->arg = arg;
  at->divisor = divisor;
  at->shift = shift;
  at->key = key;
  switch (kind)
    {
    case PL_IDX_COORD:
      at->max = a->sizes[coord] - 1;
      break;
    case PL_IDX_DIV:
      at->max = arg->max / divisor;
      break;
    case PL_IDX_MOD:
      at->max = MIN (arg->max, divisor - 1);
      break;
    case PL_IDX_CLAMP:
      at->max = CLAMP (arg->max - shift, 0, divisor - 1);
      break;
    case PL_IDX_REFLECT:
      at->max = divisor - 1;   /* a bound, not always reached */
      break;
    }
  g_hash_table_insert (a->atoms, (gpointer) at->key, at);
  return at;
}

static const PlIdxAtom *
intern_atom (PlIdxArena *a, PlIdxAtomKind kind, int coord, const PlIdx *arg, int64_t divisor)
{
  return intern_atom_shift (a, kind, coord, arg, divisor, 0);
}

static int
cmp_term (const void *pa, const void *pb)
{
  const PlIdxTerm *x = pa, *y = pb;
  return strcmp (x->atom->key, y->atom->key);
}

/* Interns constant + terms[n] (any order, atoms possibly repeated, zero
 * coefficients allowed): sorts, merges equal atoms, drops zeros. */
static const PlIdx *
intern_expr (PlIdxArena *a, int64_t constant, PlIdxTerm *terms, int n)
{
  qsort (terms, (size_t) n, sizeof (PlIdxTerm), cmp_term);
  int m = 0;
  for (int i = 0; i < n; i++)
    {
      if (m > 0 && terms[m - 1].atom == terms[i].atom)
        terms[m - 1].coef += terms[i].coef;
      else
        terms[m++] = terms[i];
    }
  int k = 0;
  for (int i = 0; i < m; i++)
    if (terms[i].coef != 0)
      terms[k++] = terms[i];

  GString *key = g_string_new (NULL);
  g_string_append_printf (key, "%" G_GINT64_FORMAT, constant);
  int64_t max = constant;
  for (int i = 0; i < k; i++)
    {
      g_string_append_printf (key, "+%" G_GINT64_FORMAT "*%s", terms[i].coef, terms[i].atom->key);
      max += terms[i].coef * terms[i].atom->max;
    }
  PlIdx *x = g_hash_table_lookup (a->exprs, key->str);
  if (x)
    {
      g_string_free (key, TRUE);
      return x;
    }
  x = g_new0 (PlIdx, 1);
  x->constant = constant;
  x->n_terms = k;
  x->terms = g_memdup2 (terms, sizeof (PlIdxTerm) * MAX (k, 1));
  x->max = max;
  x->key = g_string_free (key, FALSE);
  g_hash_table_insert (a->exprs, (gpointer) x->key, x);
  return x;
}

/* --- construction ---------------------------------------------------------------- */

const PlIdx *
pl_idx_const (PlIdxArena *a, int64_t c)
{
  PlIdxTerm none = { 0 };   /* never NULL: the copies and the sort of no terms still take an array */
  return intern_expr (a, c, &none, 0);
}

static const PlIdx *
atom_expr (PlIdxArena *a, const PlIdxAtom *at)
{
  PlIdxTerm t = { 1, at };
  return intern_expr (a, 0, &t, 1);
}

const PlIdx *
pl_idx_coord (PlIdxArena *a, int k)
{
  g_return_val_if_fail (k >= 0 && k < a->n_coords, NULL);
  if (a->sizes[k] <= 1)
    return pl_idx_const (a, 0);
  return atom_expr (a, intern_atom (a, PL_IDX_COORD, k, NULL, 0));
}


/* x is exactly the atom e / n (coefficient 1, no constant): *e and *n. */
static bool
is_plain_div (const PlIdx *x, const PlIdx **e, int64_t *n)
{
  if (x->constant != 0 || x->n_terms != 1 || x->terms[0].coef != 1 || x->terms[0].atom->kind != PL_IDX_DIV)
    return false;
  *e = x->terms[0].atom->arg;
  *n = x->terms[0].atom->divisor;
  return true;
}

/* Two terms of x that fold into one, k * (their sum) = coef * *atom_expr:
 *   k * (e % n) + k * n * (e / n)          = k * e
 *   k * (e % n) + k * n * ((e / n) % m)    = k * (e % (n * m))
 * (the second is how a reshape back from split dims reads; the first then
 * finishes the job). Finds such a pair: indices *i, *j and the fold *folded. */
static bool
find_recombination (PlIdxArena *a, const PlIdx *x, int *i_out, int *j_out, const PlIdx **folded)
{
  for (int i = 0; i < x->n_terms; i++)
    {
      const PlIdxAtom *m = x->terms[i].atom;
      if (m->kind != PL_IDX_MOD)
        continue;
      const int64_t k = x->terms[i].coef;
      for (int j = 0; j < x->n_terms; j++)
        {
          const PlIdxAtom *q = x->terms[j].atom;
          if (j == i || x->terms[j].coef != k * m->divisor)
            continue;
          const PlIdx *e;
          int64_t n;
          if (q->kind == PL_IDX_DIV && q->arg == m->arg && q->divisor == m->divisor)
            *folded = pl_idx_mul (a, m->arg, k);
          else if (q->kind == PL_IDX_MOD && is_plain_div (q->arg, &e, &n) && e == m->arg && n == m->divisor)
            *folded = pl_idx_mul (a, pl_idx_mod (a, e, n * q->divisor), k);
          else
            continue;
          *i_out = i;
          *j_out = j;
          return true;
        }
    }
  return false;
}

const PlIdx *
pl_idx_add (PlIdxArena *a, const PlIdx *x, const PlIdx *y)
{
  int n = x->n_terms + y->n_terms;
  g_autofree PlIdxTerm *t = g_new (PlIdxTerm, MAX (n, 1));
  memcpy (t, x->terms, sizeof (PlIdxTerm) * x->n_terms);
  memcpy (t + x->n_terms, y->terms, sizeof (PlIdxTerm) * y->n_terms);
  const PlIdx *r = intern_expr (a, x->constant + y->constant, t, n);
  int im, iq;
  const PlIdx *folded;
  if (!find_recombination (a, r, &im, &iq, &folded))
    return r;
  g_autofree PlIdxTerm *rest = g_new (PlIdxTerm, MAX (r->n_terms, 1));
  int m = 0;
  for (int i = 0; i < r->n_terms; i++)
    if (i != im && i != iq)
      rest[m++] = r->terms[i];
  return pl_idx_add (a, intern_expr (a, r->constant, rest, m), folded);
}

const PlIdx *
pl_idx_mul (PlIdxArena *a, const PlIdx *x, int64_t c)
{
  if (c == 1)
    return x;
  g_autofree PlIdxTerm *t = g_new (PlIdxTerm, MAX (x->n_terms, 1));
  for (int i = 0; i < x->n_terms; i++)
    t[i] = (PlIdxTerm) { x->terms[i].coef * c, x->terms[i].atom };
  return intern_expr (a, x->constant * c, t, c == 0 ? 0 : x->n_terms);
}

/* Splits x into high (coefficients and constant part multiple of d, divided
 * by d) and low (the rest). */
static void
split (PlIdxArena *a, const PlIdx *x, int64_t d, const PlIdx **high, const PlIdx **low)
{
  g_autofree PlIdxTerm *h = g_new (PlIdxTerm, MAX (x->n_terms, 1));
  g_autofree PlIdxTerm *l = g_new (PlIdxTerm, MAX (x->n_terms, 1));
  int nh = 0, nl = 0;
  for (int i = 0; i < x->n_terms; i++)
    if (x->terms[i].coef % d == 0)
      h[nh++] = (PlIdxTerm) { x->terms[i].coef / d, x->terms[i].atom };
    else
      l[nl++] = x->terms[i];
  *high = intern_expr (a, x->constant / d, h, nh);
  *low = intern_expr (a, x->constant % d, l, nl);
}

static int64_t
gcd (int64_t a, int64_t b)
{
  while (b)
    {
      int64_t t = a % b;
      a = b;
      b = t;
    }
  return a;
}

/* Finds the largest g > 1 dividing d such that x = g * G + R with R below g
 * (every term of G a multiple of g). Then x / d = G / (d / g) and
 * x % d = g * (G % (d / g)) + R. */
static int64_t
common_factor (PlIdxArena *a, const PlIdx *x, int64_t d, const PlIdx **big, const PlIdx **rest)
{
  int64_t best = 1;
  for (int i = 0; i < x->n_terms; i++)
    {
      int64_t g = gcd (d, x->terms[i].coef);
      if (g <= best)
        continue;
      const PlIdx *h, *l;
      split (a, x, g, &h, &l);
      if (l->max < g)
        {
          best = g;
          *big = h;
          *rest = l;
        }
    }
  return best;
}

const PlIdx *
pl_idx_div (PlIdxArena *a, const PlIdx *x, int64_t d)
{
  g_return_val_if_fail (d >= 1, x);
  if (d == 1)
    return x;
  if (x->max < d)
    return pl_idx_const (a, 0);
  const PlIdx *e;
  int64_t n;
  if (is_plain_div (x, &e, &n))
    return pl_idx_div (a, e, n * d);   /* (e / n) / d = e / (n d) */
  const PlIdx *high, *low;
  split (a, x, d, &high, &low);
  if (low->max < d)
    return high;
  const PlIdx *big, *rest;
  int64_t g = common_factor (a, low, d, &big, &rest);
  const PlIdx *q = g > 1 ? pl_idx_div (a, big, d / g) : atom_expr (a, intern_atom (a, PL_IDX_DIV, 0, low, d));
  return pl_idx_add (a, high, q);
}

const PlIdx *
pl_idx_mod (PlIdxArena *a, const PlIdx *x, int64_t d)
{
  g_return_val_if_fail (d >= 1, x);
  if (d == 1)
    return pl_idx_const (a, 0);
  if (x->max < d)
    return x;
  const PlIdx *high, *low;
  split (a, x, d, &high, &low);
  if (low->max < d)
    return low;
  const PlIdx *big, *rest;
  int64_t g = common_factor (a, low, d, &big, &rest);
  if (g > 1)
    return pl_idx_add (a, pl_idx_mul (a, pl_idx_mod (a, big, d / g), g), rest);
  return atom_expr (a, intern_atom (a, PL_IDX_MOD, 0, low, d));
}

/* x - shift clamped or mirrored (kind) into [0, n): a negative shift folded
 * into x (x + |shift| is never below 0); x - shift itself when it always
 * lies inside. */
static const PlIdx *
shifted_into (PlIdxArena *a, PlIdxAtomKind kind, const PlIdx *x, int64_t shift, int64_t n)
{
  g_return_val_if_fail (n >= 1, x);
  if (n == 1)
    return pl_idx_const (a, 0);
  if (shift < 0)
    {
      x = pl_idx_add (a, x, pl_idx_const (a, -shift));
      shift = 0;
    }
  if (x->n_terms == 0)   /* a number: clamp or mirror it now */
    {
      int64_t v = x->constant - shift, period = 2 * (n - 1);
      if (kind == PL_IDX_CLAMP)
        return pl_idx_const (a, CLAMP (v, 0, n - 1));
      v = (v % period + period) % period;
      return pl_idx_const (a, v < n ? v : period - v);
    }
  if (x->constant >= shift && x->max - shift < n)
    {
      g_autofree PlIdxTerm *t = g_memdup2 (x->terms, sizeof (PlIdxTerm) * MAX (x->n_terms, 1));
      return intern_expr (a, x->constant - shift, t, x->n_terms);
    }
  return atom_expr (a, intern_atom_shift (a, kind, 0, x, n, shift));
}

const PlIdx *
pl_idx_clamp (PlIdxArena *a, const PlIdx *x, int64_t shift, int64_t n)
{
  return shifted_into (a, PL_IDX_CLAMP, x, shift, n);
}

const PlIdx *
pl_idx_reflect (PlIdxArena *a, const PlIdx *x, int64_t shift, int64_t n)
{
  return shifted_into (a, PL_IDX_REFLECT, x, shift, n);
}

const PlIdx *
pl_idx_linearize (PlIdxArena *a, int rank, const PlIdx *const *idx, const int64_t *dims)
{
  const PlIdx *r = pl_idx_const (a, 0);
  int64_t stride = 1;
  for (int k = rank - 1; k >= 0; k--)
    {
      if (dims[k] != 1)
        r = pl_idx_add (a, r, pl_idx_mul (a, idx[k], stride));
      stride *= dims[k];
    }
  return r;
}

void
pl_idx_delinearize (PlIdxArena *a, const PlIdx *flat, int rank, const int64_t *dims, const PlIdx **out)
{
  int64_t stride = 1;
  for (int k = rank - 1; k >= 0; k--)
    {
      out[k] = dims[k] == 1 ? pl_idx_const (a, 0) : pl_idx_mod (a, pl_idx_div (a, flat, stride), dims[k]);
      stride *= dims[k];
    }
}

/* --- queries --------------------------------------------------------------------- */

static bool
atom_uses (const PlIdxAtom *at, int k)
{
  return at->kind == PL_IDX_COORD ? at->coord == k : pl_idx_uses_coord (at->arg, k);
}

bool
pl_idx_uses_coord (const PlIdx *x, int k)
{
  for (int i = 0; i < x->n_terms; i++)
    if (atom_uses (x->terms[i].atom, k))
      return true;
  return false;
}

int64_t
pl_idx_coord_coef (const PlIdx *x, int k, bool *nested)
{
  int64_t c = 0;
  *nested = false;
  for (int i = 0; i < x->n_terms; i++)
    {
      const PlIdxAtom *at = x->terms[i].atom;
      if (at->kind == PL_IDX_COORD && at->coord == k)
        c = x->terms[i].coef;
      else if (at->kind != PL_IDX_COORD && pl_idx_uses_coord (at->arg, k))
        *nested = true;
    }
  return c;
}

/* (see index-expr.h) */
const PlIdx *
pl_idx_substitute (PlIdxArena *dst, const PlIdx *x, const PlIdx *const *repl)
{
  const PlIdx *r = pl_idx_const (dst, x->constant);
  for (int i = 0; i < x->n_terms; i++)
    {
      const PlIdxAtom *at = x->terms[i].atom;
      const PlIdx *t = at->kind == PL_IDX_COORD ? repl[at->coord] : pl_idx_substitute (dst, at->arg, repl);
      if (at->kind == PL_IDX_DIV)
        t = pl_idx_div (dst, t, at->divisor);
      else if (at->kind == PL_IDX_MOD)
        t = pl_idx_mod (dst, t, at->divisor);
      else if (at->kind == PL_IDX_CLAMP)
        t = pl_idx_clamp (dst, t, at->shift, at->divisor);
      else if (at->kind == PL_IDX_REFLECT)
        t = pl_idx_reflect (dst, t, at->shift, at->divisor);
      r = pl_idx_add (dst, r, pl_idx_mul (dst, t, x->terms[i].coef));
    }
  return r;
}

const PlIdx *
pl_idx_translate (PlIdxArena *dst, const PlIdx *x, const int *map)
{
  const PlIdx *r = pl_idx_const (dst, x->constant);
  for (int i = 0; i < x->n_terms; i++)
    {
      const PlIdxAtom *at = x->terms[i].atom;
      const PlIdx *t;
      switch (at->kind)
        {
        case PL_IDX_COORD:
          if (map[at->coord] < 0)
            continue;
          t = pl_idx_coord (dst, map[at->coord]);
          break;
        case PL_IDX_DIV:
          t = pl_idx_div (dst, pl_idx_translate (dst, at->arg, map), at->divisor);
          break;
        case PL_IDX_CLAMP:
          t = pl_idx_clamp (dst, pl_idx_translate (dst, at->arg, map), at->shift, at->divisor);
          break;
        case PL_IDX_REFLECT:
          t = pl_idx_reflect (dst, pl_idx_translate (dst, at->arg, map), at->shift, at->divisor);
          break;
        default:
          t = pl_idx_mod (dst, pl_idx_translate (dst, at->arg, map), at->divisor);
          break;
        }
      r = pl_idx_add (dst, r, pl_idx_mul (dst, t, x->terms[i].coef));
    }
  return r;
}

/* --- printing -------------------------------------------------------------------- */

static void
print_expr (GString *s, const PlIdx *x, const char *const *names);

static void
print_atom (GString *s, const PlIdxAtom *at, const char *const *names)
{
  if (at->kind == PL_IDX_COORD)
    {
      g_string_append (s, names[at->coord]);
      return;
    }
  if (at->kind == PL_IDX_CLAMP)
    {
      /* (a < s ? 0 : a > s + n - 1 ? n - 1 : a - s): compares and selects, which vectorize */
      GString *arg = g_string_new (NULL);
      print_expr (arg, at->arg, names);
      if (at->shift == 0)   /* never below */
        g_string_append_printf (s, "(%s > %" G_GINT64_FORMAT " ? %" G_GINT64_FORMAT " : %s)", arg->str,
                                at->divisor - 1, at->divisor - 1, arg->str);
      else
        g_string_append_printf (s, "(%s < %" G_GINT64_FORMAT " ? 0 : %s > %" G_GINT64_FORMAT " ? %" G_GINT64_FORMAT
                                " : %s - %" G_GINT64_FORMAT ")", arg->str, at->shift, arg->str,
                                at->shift + at->divisor - 1, at->divisor - 1, arg->str, at->shift);
      g_string_free (arg, TRUE);
      return;
    }
  if (at->kind == PL_IDX_REFLECT)
    {
      GString *arg = g_string_new (NULL);
      print_expr (arg, at->arg, names);
      int64_t n = at->divisor, s0 = at->shift, period = 2 * (n - 1);
      if (at->arg->max <= s0 && s0 <= n - 1)   /* never above, and s0 - x inside: read backwards (a negative-step Slice) */
        g_string_append_printf (s, "(%" G_GINT64_FORMAT " - %s)", s0, arg->str);
      else if (s0 <= n - 1 && at->arg->max - s0 <= period)
        /* one mirror at most on each side (pads shorter than the axis, the
         * usual case): compares and selects, which vectorize */
        g_string_append_printf (s, "(%s < %" G_GINT64_FORMAT " ? %" G_GINT64_FORMAT " - %s : %s > %" G_GINT64_FORMAT
                                " ? %" G_GINT64_FORMAT " - %s : %s - %" G_GINT64_FORMAT ")", arg->str, s0, s0, arg->str,
                                arg->str, s0 + n - 1, s0 + period, arg->str, arg->str, s0);
      else
        {
          /* m = (x - s) mod period, made non-negative; then m or its mirror */
          int64_t c = (s0 + period - 1) / period * period - s0;
          g_autofree char *m = c ? g_strdup_printf ("(%s + %" G_GINT64_FORMAT ") %% %" G_GINT64_FORMAT, arg->str, c, period)
                                 : g_strdup_printf ("%s %% %" G_GINT64_FORMAT, arg->str, period);
          g_string_append_printf (s, "(%s < %" G_GINT64_FORMAT " ? %s : %" G_GINT64_FORMAT " - %s)", m, n, m, period, m);
        }
      g_string_free (arg, TRUE);
      return;
    }
  g_string_append_c (s, '(');
  print_expr (s, at->arg, names);
  g_string_append_printf (s, " %c %" G_GINT64_FORMAT ")", at->kind == PL_IDX_DIV ? '/' : '%', at->divisor);
}

static void
print_expr (GString *s, const PlIdx *x, const char *const *names)
{
  if (x->n_terms == 0)
    {
      g_string_append_printf (s, "%" G_GINT64_FORMAT, x->constant);
      return;
    }
  bool paren = x->n_terms > 1 || x->constant != 0;
  if (paren)
    g_string_append_c (s, '(');
  for (int i = 0; i < x->n_terms; i++)
    {
      if (i > 0)
        g_string_append (s, " + ");
      if (x->terms[i].coef != 1)
        g_string_append_printf (s, "%" G_GINT64_FORMAT " * ", x->terms[i].coef);
      print_atom (s, x->terms[i].atom, names);
    }
  if (x->constant != 0)
    g_string_append_printf (s, " + %" G_GINT64_FORMAT, x->constant);
  if (paren)
    g_string_append_c (s, ')');
}

char *
pl_idx_to_c (const PlIdx *x, const char *const *names)
{
  GString *s = g_string_new (NULL);
  print_expr (s, x, names);
  return g_string_free (s, FALSE);
}
