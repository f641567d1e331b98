/* text-parse-values.c — the `.graph` parser's values (the grammar is in
 * text-parse.c): tensor data (a flat list, fill(), random(), base64) and a
 * node's attributes and control edges. Numbers are checked against the
 * dtype or attribute type they become, and errors point at the number.
 */
#define G_LOG_DOMAIN "passlab"

#include "text-parse-private.h"

#include <math.h>

/* base64 data holds the tensor's bytes as they lie in memory, which is the
 * format's little-endian order on the hosts we build for. */
G_STATIC_ASSERT (G_BYTE_ORDER == G_LITTLE_ENDIAN);

/* --- tensor data ------------------------------------------------------------ */

static void
int_range (PlDType dt, int64_t *lo, guint64 *hi)
{
  switch (dt)
    {
    case PL_DTYPE_I8: *lo = G_MININT8; *hi = G_MAXINT8; break;
    case PL_DTYPE_I16: *lo = G_MININT16; *hi = G_MAXINT16; break;
    case PL_DTYPE_I32: *lo = G_MININT32; *hi = G_MAXINT32; break;
    case PL_DTYPE_U8: *lo = 0; *hi = G_MAXUINT8; break;
    case PL_DTYPE_U16: *lo = 0; *hi = G_MAXUINT16; break;
    case PL_DTYPE_U32: *lo = 0; *hi = G_MAXUINT32; break;
    case PL_DTYPE_U64: *lo = 0; *hi = G_MAXUINT64; break;
    case PL_DTYPE_BOOL: *lo = 0; *hi = 1; break;
    default: *lo = G_MININT64; *hi = G_MAXINT64; break;
    }
}

/* Stores n as element i of t, checking that it fits the dtype. */
static bool
store_num (Parser *P, const Loc *loc, PlTensor *t, int64_t i, const Num *n)
{
  if (pl_dtype_is_float (t->dtype))
    {
      double d = pl_text_parse_num_as_double (n);
      pl_tensor_set_f64 (t, i, d);
      if (isfinite (d) && !isfinite (pl_tensor_get_f64 (t, i)))
        return pl_text_parse_error_tok (P, loc, "%g is out of range for %s", d, pl_dtype_name (t->dtype));
      return true;
    }
  int64_t lo, v;
  guint64 hi;
  int_range (t->dtype, &lo, &hi);
  if (!pl_text_parse_num_to_int (P, loc, n, lo, hi, pl_dtype_name (t->dtype), &v))
    return false;
  pl_tensor_set_i64 (t, i, v);  /* u64 above INT64_MAX wraps back to its bits */
  return true;
}

/* fill() and random() make data the text does not hold; a mistyped dim must
 * not make them fill all memory. 2^31 elements is 8 GiB of f32. */
#define MAX_GENERATED_NUMEL (((int64_t) 1) << 31)

static bool
check_generated_size (Parser *P, const Loc *loc, const char *what, const PlShape *shape)
{
  int64_t numel = pl_shape_numel (shape);
  return numel <= MAX_GENERATED_NUMEL
         || pl_text_parse_error_tok (P, loc, "%s() of %" G_GINT64_FORMAT
                                     " elements is too large (limit 2^31)", what, numel);
}

static PlTensor *
new_tensor (Parser *P, const Loc *loc, PlDType dtype, const PlShape *shape)
{
  g_autoptr (GError) err = NULL;
  if (!pl_shape_is_static (shape))
    {
      g_autofree char *ts = pl_text_parse_type_string (dtype, shape);
      pl_text_parse_error_tok (P, loc, "tensor data needs a static type, not %s", ts);
      return NULL;
    }
  PlTensor *t = pl_tensor_new_shape (dtype, shape, &err);
  if (!t)
    pl_text_parse_error_tok (P, loc, "%s", err->message);
  return t;
}

static PlTensor *
parse_data_list (Parser *P, const Loc *loc, PlDType dtype, const PlShape *shape)
{
  g_autoptr (GArray) nums = g_array_new (FALSE, FALSE, sizeof (Num));
  g_autoptr (GArray) locs = g_array_new (FALSE, FALSE, sizeof (Loc));
  bool list = pl_text_parse_accept (P, '[');
  while (!list || !pl_text_parse_accept (P, ']'))
    {
      if (list && nums->len > 0 && !pl_text_parse_expect (P, ',', "',' or ']'"))
        return NULL;
      Loc where = pl_text_parse_here (P);
      Num n;
      if (!pl_text_parse_num (P, &n))
        return NULL;
      g_array_append_val (nums, n);
      g_array_append_val (locs, where);
      if (!list)
        break;
    }
  int64_t numel = pl_shape_numel (shape);
  if (pl_shape_is_static (shape) && numel != (int64_t) nums->len)
    {
      g_autofree char *ts = pl_text_parse_type_string (dtype, shape);
      pl_text_parse_error_tok (P, loc, "data has %u values, type %s needs %" G_GINT64_FORMAT, nums->len, ts,
                               numel);
      return NULL;
    }
  g_autoptr (PlTensor) t = new_tensor (P, loc, dtype, shape);
  if (!t)
    return NULL;
  for (guint i = 0; i < nums->len; i++)
    if (!store_num (P, &g_array_index (locs, Loc, i), t, i, &g_array_index (nums, Num, i)))
      return NULL;
  return g_steal_pointer (&t);
}

static PlTensor *
parse_data_fill (Parser *P, const Loc *loc, PlDType dtype, const PlShape *shape)
{
  Num n;
  pl_text_parse_advance (P);
  if (!pl_text_parse_expect (P, '(', "'('"))
    return NULL;
  Loc where = pl_text_parse_here (P);
  if (!pl_text_parse_num (P, &n) || !pl_text_parse_expect (P, ')', "')'")
      || !check_generated_size (P, loc, "fill", shape))
    return NULL;
  g_autoptr (PlTensor) t = new_tensor (P, loc, dtype, shape);
  if (!t)
    return NULL;
  if (t->numel > 0 && !store_num (P, &where, t, 0, &n))
    return NULL;
  size_t es = pl_dtype_size (dtype);
  for (int64_t i = 1; i < t->numel; i++)
    memcpy ((char *) t->data + i * es, t->data, es);
  return g_steal_pointer (&t);
}

static PlTensor *
parse_data_random (Parser *P, const Loc *loc, PlDType dtype, const PlShape *shape)
{
  int64_t seed = 0;
  double lo = -1, hi = 1;
  pl_text_parse_advance (P);
  if (!pl_text_parse_expect (P, '(', "'('"))
    return NULL;
  if (!pl_text_parse_accept (P, ')'))
    {
      do
        {
          Loc where = pl_text_parse_here (P);
          char k = pl_text_parse_at_word (P, 0, "seed") ? 's' : pl_text_parse_at_word (P, 0, "lo") ? 'l'
                   : pl_text_parse_at_word (P, 0, "hi") ? 'h' : 0;
          Num n;
          if (!k)
            return pl_text_parse_error_expected (P, "seed=, lo= or hi="), NULL;
          pl_text_parse_advance (P);
          if (!pl_text_parse_expect (P, '=', "'='") || !pl_text_parse_num (P, &n))
            return NULL;
          if (k == 's' && !pl_text_parse_num_to_int (P, &where, &n, 0, G_MAXUINT32, "seed", &seed))
            return NULL;
          if (k == 'l')
            lo = pl_text_parse_num_as_double (&n);
          else if (k == 'h')
            hi = pl_text_parse_num_as_double (&n);
        }
      while (pl_text_parse_accept (P, ','));
      if (!pl_text_parse_expect (P, ')', "',' or ')'"))
        return NULL;
    }
  if (!(lo <= hi) || !isfinite (lo) || !isfinite (hi)
      || (!pl_dtype_is_float (dtype) && (fabs (lo) > 1e15 || fabs (hi) > 1e15
                                          || floor (hi) - floor (lo) >= G_MAXINT32)))
    return pl_text_parse_error_tok (P, loc, "random() needs finite lo <= hi (integers: hi - lo < 2^31)"),
           NULL;
  if (!check_generated_size (P, loc, "random", shape))
    return NULL;
  g_autoptr (PlTensor) t = new_tensor (P, loc, dtype, shape);
  if (!t)
    return NULL;
  GRand *rand = g_rand_new_with_seed ((guint32) seed);
  pl_tensor_fill_random (t, rand, lo, hi);
  g_rand_free (rand);
  return g_steal_pointer (&t);
}

static bool
is_base64 (const char *s)
{
  size_t n = strlen (s);
  if (n % 4 != 0)
    return false;
  for (size_t i = 0; i < n; i++)
    if (!g_ascii_isalnum (s[i]) && s[i] != '+' && s[i] != '/'
        && !(s[i] == '=' && i >= n - 2 && (i == n - 1 || s[n - 1] == '=')))
      return false;
  return true;
}

static PlTensor *
parse_data_base64 (Parser *P, const Loc *loc, PlDType dtype, const PlShape *shape)
{
  pl_text_parse_advance (P);
  Token *t = pl_text_parse_peek (P, 0);
  if (t->kind != T_STRING)
    return pl_text_parse_error_expected (P, "a base64 string"), NULL;
  if (!is_base64 (t->text))
    return pl_text_parse_error_tok (P, t, "invalid base64 data"), NULL;
  gsize n = 0;
  g_autofree guchar *bytes = t->text[0] ? g_base64_decode (t->text, &n) : NULL;
  /* Check the size before allocating what a mistyped shape may make huge. */
  int64_t numel = pl_shape_numel (shape);
  gsize want = numel >= 0 ? (gsize) numel * pl_dtype_size (dtype) : 0;
  if (numel >= 0 && n != want)
    {
      g_autofree char *ts = pl_text_parse_type_string (dtype, shape);
      pl_text_parse_error_tok (P, t, "data has %" G_GSIZE_FORMAT " bytes, type %s needs %" G_GSIZE_FORMAT,
                               n, ts, want);
      return NULL;
    }
  for (size_t i = 0; dtype == PL_DTYPE_BOOL && i < n; i++)
    if (bytes[i] > 1)
      return pl_text_parse_error_tok (P, t, "bool data must be 0 or 1"), NULL;
  g_autoptr (PlTensor) tensor = new_tensor (P, loc, dtype, shape);
  if (!tensor)
    return NULL;
  if (n > 0)
    memcpy (tensor->data, bytes, n);
  pl_text_parse_advance (P);
  return g_steal_pointer (&tensor);
}

/* data of the given type; loc is where errors about the whole tensor point. */
PlTensor *
pl_text_parse_data (Parser *P, const Loc *loc, PlDType dtype, const PlShape *shape)
{
  if (pl_text_parse_at_word (P, 0, "fill") && pl_text_parse_peek (P, 1)->kind == '(')
    return parse_data_fill (P, loc, dtype, shape);
  if (pl_text_parse_at_word (P, 0, "random") && pl_text_parse_peek (P, 1)->kind == '(')
    return parse_data_random (P, loc, dtype, shape);
  if (pl_text_parse_at_word (P, 0, "base64") && pl_text_parse_peek (P, 1)->kind == T_STRING)
    return parse_data_base64 (P, loc, dtype, shape);
  int k = pl_text_parse_peek (P, 0)->kind;
  if (k == '[' || k == '-' || k == T_INT || k == T_FLOAT || pl_text_parse_at_word (P, 0, "inf")
      || pl_text_parse_at_word (P, 0, "nan"))
    return parse_data_list (P, loc, dtype, shape);
  return pl_text_parse_error_expected (P, "tensor data ([...], fill(...), random(...) or base64\"...\")"),
         NULL;
}

/* --- attributes --------------------------------------------------------------- */

typedef enum { LIST_ANY, LIST_INTS, LIST_FLOATS, LIST_STRINGS } ListKind;

static bool
parse_attr_list (Parser *P, PlNode *node, const char *name, ListKind kind)
{
  g_autoptr (GArray) nums = g_array_new (FALSE, FALSE, sizeof (Num));
  g_autoptr (GArray) locs = g_array_new (FALSE, FALSE, sizeof (Loc));
  g_autoptr (GPtrArray) strs = g_ptr_array_new_with_free_func (g_free);
  bool any_float = false;
  if (!pl_text_parse_expect (P, '[', "'['"))
    return false;
  while (!pl_text_parse_accept (P, ']'))
    {
      if (nums->len + strs->len > 0 && !pl_text_parse_expect (P, ',', "',' or ']'"))
        return false;
      Token *t = pl_text_parse_peek (P, 0);
      Loc where = pl_text_parse_here (P);
      bool is_str = t->kind == T_STRING;
      if (kind == LIST_ANY)
        kind = is_str ? LIST_STRINGS : LIST_INTS;
      if (is_str != (kind == LIST_STRINGS))
        return pl_text_parse_error_expected (P, kind == LIST_STRINGS ? "a string" : "a number");
      if (is_str)
        {
          g_ptr_array_add (strs, g_steal_pointer (&t->text));
          pl_text_parse_advance (P);
          continue;
        }
      Num n;
      if (!pl_text_parse_num (P, &n))
        return false;
      any_float |= n.is_float;
      g_array_append_val (nums, n);
      g_array_append_val (locs, where);
    }
  if (kind == LIST_STRINGS)
    {
      pl_node_set_attr_strings (node, name, (const char *const *) strs->pdata, strs->len);
      return true;
    }
  if (kind == LIST_FLOATS || any_float)
    {
      g_autofree float *v = g_new0 (float, nums->len + 1);
      for (guint i = 0; i < nums->len; i++)
        if (!pl_text_parse_num_to_float (P, &g_array_index (locs, Loc, i), &g_array_index (nums, Num, i),
                                         &v[i]))
          return false;
      pl_node_set_attr_floats (node, name, v, nums->len);
      return true;
    }
  g_autofree int64_t *v = g_new0 (int64_t, nums->len + 1);
  for (guint i = 0; i < nums->len; i++)
    if (!pl_text_parse_num_to_int (P, &g_array_index (locs, Loc, i), &g_array_index (nums, Num, i),
                                   G_MININT64, G_MAXINT64, "an int64", &v[i]))
      return false;
  pl_node_set_attr_ints (node, name, v, nums->len);
  return true;
}

static bool
parse_attr_value (Parser *P, PlNode *node, const char *name)
{
  Token *t = pl_text_parse_peek (P, 0);
  Loc where = pl_text_parse_here (P);
  if (t->kind == T_STRING)
    {
      pl_node_set_attr_string (node, name, t->text);
      pl_text_parse_advance (P);
      return true;
    }
  if (t->kind == '[')
    return parse_attr_list (P, node, name, LIST_ANY);
  if (t->kind == T_IDENT && pl_text_parse_peek (P, 1)->kind == '[')
    {
      static const char *const list_words[] = { "ints", "floats", "strings" };
      for (int i = 0; i < 3; i++)
        if (!strcmp (t->text, list_words[i]))
          {
            pl_text_parse_advance (P);
            return parse_attr_list (P, node, name, (ListKind) (LIST_INTS + i));
          }
      PlDType dtype;
      PlShape shape;
      if (!pl_text_parse_type (P, &dtype, &shape))
        return false;
      PlTensor *tensor = pl_text_parse_data (P, &where, dtype, &shape);
      if (!tensor)
        return false;
      pl_node_set_attr_tensor (node, name, tensor);
      pl_tensor_unref (tensor);
      return true;
    }
  if (pl_text_parse_at_word (P, 0, "graph"))
    {
      PlGraph *g = pl_text_parse_graph (P, false);
      if (!g)
        return false;
      pl_node_set_attr_graph (node, name, g);
      return true;
    }
  Num n;
  float f;
  int64_t v;
  if (!(t->kind == '-' || t->kind == T_INT || t->kind == T_FLOAT || pl_text_parse_at_word (P, 0, "inf")
        || pl_text_parse_at_word (P, 0, "nan")))
    return pl_text_parse_error_expected (P, "an attribute value");
  if (!pl_text_parse_num (P, &n))
    return false;
  if (n.is_float && pl_text_parse_num_to_float (P, &where, &n, &f))
    pl_node_set_attr_float (node, name, f);
  else if (!n.is_float && pl_text_parse_num_to_int (P, &where, &n, G_MININT64, G_MAXINT64, "an int64", &v))
    pl_node_set_attr_int (node, name, v);
  return P->error == NULL;
}

bool
pl_text_parse_attrs (Parser *P, PlNode *node)
{
  pl_text_parse_advance (P); /* '{' */
  while (!pl_text_parse_accept (P, '}'))
    {
      if (node->n_attrs > 0 && !pl_text_parse_expect (P, ',', "',' or '}'"))
        return false;
      Loc where = pl_text_parse_here (P);
      g_autofree char *name = NULL;
      if (!pl_text_parse_name (P, "an attribute name", &name))
        return false;
      if (pl_node_attr (node, name))
        return pl_text_parse_error_tok (P, &where, "duplicate attribute '%s'", name);
      if (!pl_text_parse_expect (P, '=', "'='") || !parse_attr_value (P, node, name))
        return false;
    }
  return true;
}

bool
pl_text_parse_controls (Parser *P, PlNode *node)
{
  pl_text_parse_advance (P); /* after */
  pl_text_parse_advance (P); /* ( */
  do
    {
      PlControlKind kind;
      if (pl_text_parse_at_word (P, 0, "serialize"))
        kind = PL_CONTROL_SERIALIZE;
      else if (pl_text_parse_at_word (P, 0, "prefetch"))
        kind = PL_CONTROL_PREFETCH;
      else
        return pl_text_parse_error_expected (P, "serialize: or prefetch:");
      pl_text_parse_advance (P);
      if (!pl_text_parse_expect (P, ':', "':'"))
        return false;
      Loc where = pl_text_parse_here (P);
      g_autofree char *name = NULL;
      if (!pl_text_parse_name (P, "a node name", &name))
        return false;
      PlNode *other = pl_graph_find_node (node->graph, name);
      if (!other || other == node)
        return pl_text_parse_error_tok (P, &where, other ? "node '%s' cannot come after itself"
                                                         : "undefined node '%s'", name);
      pl_node_add_control (node, other, kind);
    }
  while (pl_text_parse_accept (P, ','));
  return pl_text_parse_expect (P, ')', "',' or ')'");
}
