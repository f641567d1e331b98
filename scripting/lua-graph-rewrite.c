/* lua-graph-rewrite.c — what a script changes in a graph (the Lua API is
 * listed in lua-graph.c): g:add_node{...}, g:add_const(), g:replace_uses(),
 * g:set_layout(), g:remove_node(), g:set_output(), g:dce() and
 * n:set_attr(). Every argument is checked before the graph is touched, and
 * a change that does not infer is undone, so a Lua error never leaves a
 * half-made node behind. History steps are read-only.
 */
#define G_LOG_DOMAIN "passlab"

#include "lua-private.h"

#include "rewrite.h"

/* --- attribute values from Lua ------------------------------------------------------ */

/* The attribute type the Lua value at idx becomes, or a Lua error. Integers
 * -> INT, other numbers -> FLOAT, booleans -> INT 0/1, strings -> STRING,
 * arrays of integers / numbers / strings -> INTS / FLOATS / STRINGS. */
static PlAttrType
check_attr_value (lua_State *L, int idx, const char *name)
{
  switch (lua_type (L, idx))
    {
    case LUA_TNUMBER:  return lua_isinteger (L, idx) ? PL_ATTR_INT : PL_ATTR_FLOAT;
    case LUA_TBOOLEAN: return PL_ATTR_INT;
    case LUA_TSTRING:  return PL_ATTR_STRING;
    case LUA_TTABLE:   break;
    default:
      luaL_error (L, "attribute '%s': a %s cannot be an attribute (numbers, strings, or arrays of them)", name,
                  luaL_typename (L, idx));
    }
  idx = lua_absindex (L, idx);
  int n = (int) lua_rawlen (L, idx), ints = 0, numbers = 0, strings = 0;
  for (int i = 1; i <= n; i++)
    {
      int type = lua_rawgeti (L, idx, i);
      if (type == LUA_TNUMBER)
        lua_isinteger (L, -1) ? ints++ : numbers++;
      else if (type == LUA_TSTRING)
        strings++;
      lua_pop (L, 1);
    }
  if (strings == n)
    return n == 0 ? PL_ATTR_INTS : PL_ATTR_STRINGS;
  if (ints + numbers == n)
    return numbers ? PL_ATTR_FLOATS : PL_ATTR_INTS;
  luaL_error (L, "attribute '%s': an array of numbers or of strings expected", name);
  return PL_ATTR_INT;
}

/* Sets attribute name from the Lua value at idx, already checked to be of
 * type. Raises nothing. */
static void
set_attr_value (lua_State *L, int idx, PlNode *node, const char *name, PlAttrType type)
{
  idx = lua_absindex (L, idx);
  int n = lua_istable (L, idx) ? (int) lua_rawlen (L, idx) : 0;
  switch (type)
    {
    case PL_ATTR_INT:
      pl_node_set_attr_int (node, name, lua_isboolean (L, idx) ? lua_toboolean (L, idx) : lua_tointeger (L, idx));
      break;
    case PL_ATTR_FLOAT:  pl_node_set_attr_float (node, name, (float) lua_tonumber (L, idx)); break;
    case PL_ATTR_STRING: pl_node_set_attr_string (node, name, lua_tostring (L, idx)); break;
    case PL_ATTR_INTS:
      {
        int64_t *v = g_new (int64_t, MAX (n, 1));
        for (int i = 0; i < n; i++)
          lua_rawgeti (L, idx, i + 1), v[i] = lua_tointeger (L, -1), lua_pop (L, 1);
        pl_node_set_attr_ints (node, name, v, n);
        g_free (v);
        break;
      }
    case PL_ATTR_FLOATS:
      {
        float *v = g_new (float, MAX (n, 1));
        for (int i = 0; i < n; i++)
          lua_rawgeti (L, idx, i + 1), v[i] = (float) lua_tonumber (L, -1), lua_pop (L, 1);
        pl_node_set_attr_floats (node, name, v, n);
        g_free (v);
        break;
      }
    case PL_ATTR_STRINGS:
      {
        /* The strings stay alive in the table while we copy them. */
        const char **v = g_new (const char *, MAX (n, 1));
        for (int i = 0; i < n; i++)
          lua_rawgeti (L, idx, i + 1), v[i] = lua_tostring (L, -1), lua_pop (L, 1);
        pl_node_set_attr_strings (node, name, v, n);
        g_free (v);
        break;
      }
    default:
      g_assert_not_reached ();
    }
}

/* Puts back attribute `old` (a copy; consumed), or removes name if had_old is false. */
static void
restore_attr (PlNode *node, const char *name, PlAttr *old, bool had_old)
{
  if (!had_old)
    {
      pl_node_remove_attr (node, name);
      return;
    }
  switch (old->type)
    {
    case PL_ATTR_INT:     pl_node_set_attr_int (node, name, old->i); break;
    case PL_ATTR_FLOAT:   pl_node_set_attr_float (node, name, old->f); break;
    case PL_ATTR_STRING:  pl_node_set_attr_string (node, name, old->s); break;
    case PL_ATTR_INTS:    pl_node_set_attr_ints (node, name, old->ints.v, old->ints.n); break;
    case PL_ATTR_FLOATS:  pl_node_set_attr_floats (node, name, old->floats.v, old->floats.n); break;
    case PL_ATTR_STRINGS:
      pl_node_set_attr_strings (node, name, (const char *const *) old->strings.v, old->strings.n);
      break;
    case PL_ATTR_TENSOR:  pl_node_set_attr_tensor (node, name, old->t); break;
    case PL_ATTR_GRAPH:
      pl_node_set_attr_graph (node, name, old->g);
      old->g = NULL, old->type = PL_ATTR_INT;
      break;
    }
  pl_attr_clear (old);
}

/* --- graph methods (rewriting) --------------------------------------------------- */

/* Reads field key of the table at 2 as an optional string. */
static const char *
opt_string_field (lua_State *L, const char *key, const char *def)
{
  int type = lua_getfield (L, 2, key);  /* left on the stack: keeps the string alive */
  if (type == LUA_TNIL)
    return def;
  if (type != LUA_TSTRING)
    luaL_error (L, "add_node: '%s' must be a string, not a %s", key, luaL_typename (L, -1));
  return lua_tostring (L, -1);
}

static int
graph_add_node (lua_State *L)
{
  PlGraph *g = pl_lua_check_writable_graph (L, 1);
  luaL_checktype (L, 2, LUA_TTABLE);
  const char *op = opt_string_field (L, "op", NULL);
  if (!op || !*op)
    luaL_error (L, "add_node: 'op' (the op type, like \"Add\") is required");
  const char *name = opt_string_field (L, "name", NULL);
  if (name && !*name)
    name = NULL;
  const char *domain = opt_string_field (L, "domain", NULL);
  lua_getfield (L, 2, "outputs");
  int isnum = 1;
  lua_Integer n_outputs = lua_isnil (L, -1) ? 1 : lua_tointegerx (L, -1, &isnum);
  if (!isnum || n_outputs < 1 || n_outputs > 64)
    luaL_error (L, "add_node: 'outputs' must be the number of outputs (1 to 64)");

  /* Inputs: values of this graph, false (or nil) for omitted optional ones. */
  int itype = lua_getfield (L, 2, "inputs");
  int iidx = lua_gettop (L);
  if (itype != LUA_TNIL && itype != LUA_TTABLE)
    luaL_error (L, "add_node: 'inputs' must be an array of values, not a %s", luaL_typename (L, -1));
  int n_inputs = itype == LUA_TTABLE ? (int) lua_rawlen (L, iidx) : 0;
  PlValue **inputs = lua_newuserdatauv (L, sizeof (PlValue *) * MAX (n_inputs, 1), 0);
  for (int i = 0; i < n_inputs; i++)
    {
      int type = lua_rawgeti (L, iidx, i + 1);
      if (type == LUA_TNIL || (type == LUA_TBOOLEAN && !lua_toboolean (L, -1)))
        inputs[i] = NULL;
      else if (pl_lua_is_value (L, -1))
        inputs[i] = pl_lua_check_value_of (L, -1, g, "add_node");
      else
        luaL_error (L, "add_node: input %d is a %s, expected a passlab.value (or false)", i + 1,
                    luaL_typename (L, -1));
      lua_pop (L, 1);
    }

  /* Attributes: checked before anything is created. */
  int atype = lua_getfield (L, 2, "attrs");
  int aidx = lua_gettop (L);
  if (atype != LUA_TNIL && atype != LUA_TTABLE)
    luaL_error (L, "add_node: 'attrs' must be a table, not a %s", luaL_typename (L, -1));
  if (atype == LUA_TTABLE)
    for (lua_pushnil (L); lua_next (L, aidx); lua_pop (L, 1))
      {
        if (lua_type (L, -2) != LUA_TSTRING)
          luaL_error (L, "add_node: attribute names must be strings");
        check_attr_value (L, -1, lua_tostring (L, -2));
      }

  char *unique = name ? pl_graph_unique_name (g, name) : NULL;
  GError *error = NULL;
  PlNode *node = pl_graph_add_node (g, op, domain, unique, n_inputs, inputs, (int) n_outputs, NULL, &error);
  g_free (unique);
  if (!node)
    pl_lua_raise_gerror (L, error);
  if (atype == LUA_TTABLE)
    for (lua_pushnil (L); lua_next (L, aidx); lua_pop (L, 1))
      set_attr_value (L, -1, node, lua_tostring (L, -2), check_attr_value (L, -1, lua_tostring (L, -2)));
  if (!pl_node_infer (node, &error))
    {
      pl_graph_remove_node (g, node);
      pl_lua_raise_gerror (L, error);
    }
  pl_lua_push_node (L, 1, node);
  return 1;
}

static int
graph_add_const (lua_State *L)
{
  PlGraph *g = pl_lua_check_writable_graph (L, 1);
  const char *name = luaL_checkstring (L, 2);
  PlDType dtype = pl_dtype_from_name (luaL_checkstring (L, 3));
  if (dtype == PL_DTYPE_UNDEFINED)
    luaL_argerror (L, 3, "unknown dtype (f32, f64, i64, i32, bool, ...)");
  int64_t dims[PL_MAX_RANK];
  int rank = pl_lua_check_dims (L, 4, dims, "add_const");
  luaL_checkany (L, 5);
  gpointer *slot = pl_lua_box (L, (GDestroyNotify) pl_tensor_unref);
  GError *error = NULL;
  PlTensor *t = pl_tensor_new (dtype, rank, dims, &error);
  if (!t)
    pl_lua_raise_gerror (L, error);
  *slot = t;
  pl_lua_fill_tensor (L, 5, t, "add_const");
  char *unique = pl_graph_unique_name (g, name);
  PlValue *v = pl_graph_add_constant (g, unique, t, &error);
  g_free (unique);
  if (!v)
    pl_lua_raise_gerror (L, error);
  pl_lua_push_value (L, 1, v);
  return 1;
}

static int
graph_replace_uses (lua_State *L)
{
  PlGraph *g = pl_lua_check_writable_graph (L, 1);
  PlValue *old = pl_lua_check_value_of (L, 2, g, "replace_uses");
  PlValue *new_value = pl_lua_check_value_of (L, 3, g, "replace_uses");
  if (old->dtype != new_value->dtype || !pl_shape_equal (&old->shape, &new_value->shape))
    {
      char *a = pl_shape_to_string (&old->shape), *b = pl_shape_to_string (&new_value->shape);
      char *msg = g_strdup_printf ("replace_uses: '%s' is %s%s but '%s' is %s%s (insert a Reshape, Expand or Cast)",
                                   old->name, pl_dtype_name (old->dtype), a, new_value->name,
                                   pl_dtype_name (new_value->dtype), b);
      g_free (a), g_free (b);
      pl_lua_raise_owned (L, msg);
    }
  /* Uses by new's own producer stay: g:replace_uses(x, relu(x)) inserts a node
   * after x instead of making it read itself. */
  for (int i = old->n_uses - 1; i >= 0; i--)
    {
      PlUse u = old->uses[i];
      if (u.node != new_value->producer)
        pl_node_set_input (u.node, u.index, new_value);
    }
  for (guint i = 0; i < g->outputs->len; i++)
    if (g->outputs->pdata[i] == old)
      pl_graph_set_output (g, (int) i, new_value);
  return 0;
}

static int
graph_set_layout (lua_State *L)
{
  PlGraph *g = pl_lua_check_writable_graph (L, 1);
  PlValue *v = pl_lua_check_value_of (L, 2, g, "set_layout");
  const char *name = luaL_checkstring (L, 3);
  PlLayout layout;
  if (!pl_layout_parse (name, &layout))
    luaL_argerror (L, 3, lua_pushfstring (L, "unknown layout '%s' (NCHW, NHWC or CHWN)", name));
  GError *error = NULL;
  if (!pl_layout_check_value (layout, v, false, &error))
    {
      g_prefix_error (&error, "set_layout: ");
      pl_lua_raise_gerror (L, error);
    }
  v->layout = layout;
  return 0;
}

static int
graph_remove_node (lua_State *L)
{
  PlGraph *g = pl_lua_check_writable_graph (L, 1);
  PlLuaGraph *lg;
  PlNode *node = pl_lua_check_node (L, 2, &lg);
  if (node->graph != g)
    luaL_error (L, "remove_node: node '%s' belongs to another graph", node->name);
  for (int i = 0; i < node->n_outputs; i++)
    {
      PlValue *v = node->outputs[i];
      if (v && pl_value_is_output (v))
        luaL_error (L, "remove_node: '%s' is a graph output (set another with g:set_output first)", v->name);
      if (v && v->n_uses > 0)
        {
          char *user = pl_node_describe (v->uses[0].node);
          char *msg = g_strdup_printf ("remove_node: '%s' is still used by %s (g:replace_uses first)", v->name,
                                       user);
          g_free (user);
          pl_lua_raise_owned (L, msg);
        }
    }
  pl_graph_remove_node (g, node);
  return 0;
}

static int
graph_set_output (lua_State *L)
{
  PlGraph *g = pl_lua_check_writable_graph (L, 1);
  lua_Integer i = luaL_checkinteger (L, 2);
  PlValue *v = pl_lua_check_value_of (L, 3, g, "set_output");
  if (i < 1 || i > (lua_Integer) g->outputs->len + 1)
    luaL_argerror (L, 2, lua_pushfstring (L, "output index out of range 1..%d", (int) g->outputs->len + 1));
  if (i == (lua_Integer) g->outputs->len + 1)
    pl_graph_add_output (g, v);
  else
    pl_graph_set_output (g, (int) i - 1, v);
  return 0;
}

static int
graph_dce (lua_State *L)
{
  lua_pushinteger (L, pl_rw_dce (pl_lua_check_writable_graph (L, 1)));
  return 1;
}

/* --- node methods -------------------------------------------------------------------- */

static int
node_set_attr (lua_State *L)
{
  PlLuaGraph *lg;
  PlNode *node = pl_lua_check_node (L, 1, &lg);
  const char *name = luaL_checkstring (L, 2);
  luaL_checkany (L, 3);
  if (lg->kind == PL_LUA_GRAPH_STEP)
    luaL_error (L, "the graph of a history step is read-only (rewrite g:copy())");
  PlAttrType type = lua_isnil (L, 3) ? PL_ATTR_INT : check_attr_value (L, 3, name);

  /* Remember the attribute and the output types, to undo a change that does not infer. */
  PlAttr old = { 0 };
  const PlAttr *cur = pl_node_attr (node, name);
  bool had_old = cur != NULL;
  if (had_old)
    pl_attr_copy (&old, cur);
  PlShape shapes[64];
  PlDType dtypes[64];
  int n_out = MIN (node->n_outputs, 64);
  for (int i = 0; i < n_out; i++)
    if (node->outputs[i])
      shapes[i] = node->outputs[i]->shape, dtypes[i] = node->outputs[i]->dtype;

  if (lua_isnil (L, 3))
    pl_node_remove_attr (node, name);
  else
    set_attr_value (L, 3, node, name, type);
  GError *error = NULL;
  bool ok = pl_node_infer (node, &error);
  bool same = ok;
  for (int i = 0; same && i < n_out; i++)
    if (node->outputs[i])
      same = dtypes[i] == node->outputs[i]->dtype && pl_shape_equal (&shapes[i], &node->outputs[i]->shape);
  /* The outputs' types changed: the readers must re-infer too. */
  if (ok && !same)
    ok = pl_graph_infer_shapes (node->graph, &error);
  if (!ok)
    {
      restore_attr (node, name, &old, had_old);
      pl_graph_infer_shapes (node->graph, NULL);
      pl_lua_raise_gerror (L, error);
    }
  if (had_old)
    pl_attr_clear (&old);
  return 0;
}

const luaL_Reg pl_lua_graph_rewrite_methods[] = {
  { "add_node", graph_add_node },   { "add_const", graph_add_const },
  { "replace_uses", graph_replace_uses }, { "remove_node", graph_remove_node },
  { "set_output", graph_set_output }, { "dce", graph_dce },
  { "set_layout", graph_set_layout },
  { NULL, NULL },
};

const luaL_Reg pl_lua_node_rewrite_methods[] = { { "set_attr", node_set_attr }, { NULL, NULL } };
