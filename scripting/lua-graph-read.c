/* lua-graph-read.c — what a script reads from graphs, nodes and values (the
 * Lua API is listed in lua-graph.c): g:nodes(), g:node(), g:value(),
 * g:inputs(), g:outputs(), g:text(), g:save(), g:copy(), g:verify(),
 * g:stats(), and the fields of node and value handles, with the conversions
 * of shapes and attributes to Lua they need. Nothing here changes a graph.
 */
#define G_LOG_DOMAIN "passlab"

#include "lua-private.h"

#include <string.h>

#include "cost.h"
#include "onnx-io.h"
#include "text-format.h"

/* --- conversions ------------------------------------------------------------------ */

void
pl_lua_push_shape (lua_State *L, const PlShape *s)
{
  if (s->rank < 0)
    {
      lua_pushnil (L);
      return;
    }
  lua_createtable (L, s->rank, 0);
  for (int i = 0; i < s->rank; i++)
    {
      if (pl_dim_is_static (s->dims[i]))
        lua_pushinteger (L, s->dims[i].size);
      else
        lua_pushstring (L, s->dims[i].sym ? s->dims[i].sym : "?");
      lua_rawseti (L, -2, i + 1);
    }
}

static void
push_attr (lua_State *L, const PlAttr *a)
{
  switch (a->type)
    {
    case PL_ATTR_INT:    lua_pushinteger (L, a->i); return;
    case PL_ATTR_FLOAT:  lua_pushnumber (L, a->f); return;
    case PL_ATTR_STRING: lua_pushstring (L, a->s); return;
    case PL_ATTR_TENSOR: pl_lua_push_tensor (L, a->t); return;
    case PL_ATTR_INTS:
      lua_createtable (L, a->ints.n, 0);
      for (int i = 0; i < a->ints.n; i++)
        lua_pushinteger (L, a->ints.v[i]), lua_rawseti (L, -2, i + 1);
      return;
    case PL_ATTR_FLOATS:
      lua_createtable (L, a->floats.n, 0);
      for (int i = 0; i < a->floats.n; i++)
        lua_pushnumber (L, a->floats.v[i]), lua_rawseti (L, -2, i + 1);
      return;
    case PL_ATTR_STRINGS:
      lua_createtable (L, a->strings.n, 0);
      for (int i = 0; i < a->strings.n; i++)
        lua_pushstring (L, a->strings.v[i]), lua_rawseti (L, -2, i + 1);
      return;
    case PL_ATTR_GRAPH:
      /* Nested graphs are kept, not executed or scripted: describe them. */
      lua_createtable (L, 0, 2);
      lua_pushstring (L, a->g->name);
      lua_setfield (L, -2, "graph");
      lua_pushinteger (L, a->g->nodes->len);
      lua_setfield (L, -2, "nodes");
      return;
    }
}

/* --- graph methods (reading) ----------------------------------------------------- */

static int
graph_nodes_iter (lua_State *L)
{
  guint32 *state = lua_touserdata (L, lua_upvalueindex (1));  /* [n, pos, ids...] */
  PlGraph *g = pl_lua_check_graph (L, lua_upvalueindex (2));
  while (state[1] < state[0])
    {
      PlNode *n = pl_graph_node_by_id (g, state[2 + state[1]++]);
      if (n)
        {
          pl_lua_push_node (L, lua_upvalueindex (2), n);
          return 1;
        }
    }
  return 0;
}

static int
graph_nodes (lua_State *L)
{
  PlGraph *g = pl_lua_check_graph (L, 1);
  guint32 *state = lua_newuserdatauv (L, sizeof (guint32) * (2 + g->nodes->len), 0);
  GError *error = NULL;
  int n = 0;
  PlNode **order = pl_graph_topo_order (g, &n, &error);
  if (!order)
    pl_lua_raise_gerror (L, error);
  state[0] = (guint32) n;
  state[1] = 0;
  for (int i = 0; i < n; i++)
    state[2 + i] = order[i]->id;
  g_free (order);
  lua_pushvalue (L, 1);
  lua_pushcclosure (L, graph_nodes_iter, 2);
  return 1;
}

static int
graph_node (lua_State *L)
{
  PlGraph *g = pl_lua_check_graph (L, 1);
  PlNode *n;
  if (lua_isinteger (L, 2))
    n = pl_graph_node_by_id (g, (guint32) lua_tointeger (L, 2));
  else
    n = pl_graph_find_node (g, luaL_checkstring (L, 2));
  pl_lua_push_node (L, 1, n);
  return 1;
}

static int
graph_value (lua_State *L)
{
  PlGraph *g = pl_lua_check_graph (L, 1);
  PlValue *v;
  if (lua_isinteger (L, 2))
    v = pl_graph_value_by_id (g, (guint32) lua_tointeger (L, 2));
  else
    v = pl_graph_find_value (g, luaL_checkstring (L, 2));
  pl_lua_push_value (L, 1, v);
  return 1;
}

static void
push_value_array (lua_State *L, int gidx, GPtrArray *values)
{
  lua_createtable (L, values->len, 0);
  for (guint i = 0; i < values->len; i++)
    {
      pl_lua_push_value (L, gidx, values->pdata[i]);
      lua_rawseti (L, -2, i + 1);
    }
}

static int
graph_inputs (lua_State *L)
{
  push_value_array (L, 1, pl_lua_check_graph (L, 1)->inputs);
  return 1;
}

static int
graph_outputs (lua_State *L)
{
  push_value_array (L, 1, pl_lua_check_graph (L, 1)->outputs);
  return 1;
}

static int
graph_text (lua_State *L)
{
  PlGraph *g = pl_lua_check_graph (L, 1);
  gpointer *slot = pl_lua_box (L, g_free);
  *slot = pl_text_print (g);
  lua_pushstring (L, *slot);
  return 1;
}

static int
graph_save (lua_State *L)
{
  PlGraph *g = pl_lua_check_graph (L, 1);
  const char *path = luaL_checkstring (L, 2);
  GError *error = NULL;
  bool ok = g_str_has_suffix (path, ".onnx") ? pl_onnx_save (g, path, &error) : pl_text_save (g, path, &error);
  if (!ok)
    pl_lua_raise_gerror (L, error);
  return 0;
}

static int
graph_copy (lua_State *L)
{
  PlGraph *g = pl_lua_check_graph (L, 1);
  PlLuaGraph *copy = pl_lua_push_graph (L, PL_LUA_GRAPH_OWNED, NULL);
  copy->graph = pl_graph_copy (g);
  return 1;
}

static int
graph_verify (lua_State *L)
{
  PlGraph *g = pl_lua_check_graph (L, 1);
  GError *error = NULL;
  if (pl_graph_verify (g, &error))
    {
      lua_pushboolean (L, 1);
      return 1;
    }
  lua_pushboolean (L, 0);
  lua_pushstring (L, error->message);
  g_error_free (error);
  return 2;
}

static int
graph_stats (lua_State *L)
{
  PlGraph *g = pl_lua_check_graph (L, 1);
  lua_Integer sym = luaL_optinteger (L, 2, 1);
  PlGraphStats s;
  pl_graph_stats (g, sym, &s);
  lua_createtable (L, 0, 7);
  const struct { const char *name; int64_t v; } fields[] = {
    { "nodes", s.nodes }, { "kernels", s.kernels }, { "reshape_bytes", s.reshape_bytes },
    { "bytes_moved", s.bytes_moved }, { "flops", s.flops }, { "peak_bytes", s.peak_bytes },
  };
  for (size_t i = 0; i < G_N_ELEMENTS (fields); i++)
    {
      lua_pushinteger (L, fields[i].v);
      lua_setfield (L, -2, fields[i].name);
    }
  lua_pushboolean (L, s.assumed_sizes);
  lua_setfield (L, -2, "assumed_sizes");
  return 1;
}

/* --- node fields ------------------------------------------------------------------------ */

static void
push_attrs (lua_State *L, const PlNode *n)
{
  lua_createtable (L, 0, n->n_attrs);
  for (int i = 0; i < n->n_attrs; i++)
    {
      push_attr (L, &n->attrs[i]);
      lua_setfield (L, -2, n->attrs[i].name);
    }
}

static void
push_slots (lua_State *L, int gidx, PlValue *const *values, int n)
{
  lua_createtable (L, n, 0);
  for (int i = 0; i < n; i++)
    {
      if (values[i])
        pl_lua_push_value (L, gidx, values[i]);
      else
        lua_pushboolean (L, 0);
      lua_rawseti (L, -2, i + 1);
    }
}

int
pl_lua_node_index (lua_State *L)
{
  const char *key = pl_lua_index_method (L);
  if (!key)
    return 1;
  PlNode *n = pl_lua_check_node (L, 1, NULL);
  if (strcmp (key, "op") == 0)
    lua_pushstring (L, n->op_type);
  else if (strcmp (key, "name") == 0)
    lua_pushstring (L, n->name);
  else if (strcmp (key, "id") == 0)
    lua_pushinteger (L, n->id);
  else if (strcmp (key, "domain") == 0)
    lua_pushstring (L, n->domain);
  else if (strcmp (key, "attrs") == 0)
    push_attrs (L, n);
  else if (strcmp (key, "inputs") == 0)
    push_slots (L, pl_lua_push_owner_graph (L, 1), n->inputs, n->n_inputs);
  else if (strcmp (key, "outputs") == 0)
    push_slots (L, pl_lua_push_owner_graph (L, 1), n->outputs, n->n_outputs);
  else if (strcmp (key, "graph") == 0)
    pl_lua_push_owner_graph (L, 1);
  else
    lua_pushnil (L);
  return 1;
}

/* --- value fields --------------------------------------------------------------------- */

static void
push_users (lua_State *L, int gidx, const PlValue *v)
{
  lua_createtable (L, v->n_uses, 0);
  int out = lua_gettop (L), n = 0;
  lua_newtable (L);  /* seen: node id -> true (a node reading v twice is listed once) */
  for (int i = 0; i < v->n_uses; i++)
    {
      guint32 id = v->uses[i].node->id;
      if (lua_rawgeti (L, -1, id) == LUA_TNIL)
        {
          lua_pushboolean (L, 1);
          lua_rawseti (L, -3, id);
          pl_lua_push_node (L, gidx, v->uses[i].node);
          lua_rawseti (L, out, ++n);
        }
      lua_pop (L, 1);
    }
  lua_pop (L, 1);
}

int
pl_lua_value_index (lua_State *L)
{
  const char *key = lua_tostring (L, 2);
  if (!key)
    return 0;
  PlValue *v = pl_lua_check_value (L, 1, NULL);
  if (strcmp (key, "name") == 0)
    lua_pushstring (L, v->name);
  else if (strcmp (key, "id") == 0)
    lua_pushinteger (L, v->id);
  else if (strcmp (key, "dtype") == 0)
    lua_pushstring (L, pl_dtype_name (v->dtype));
  else if (strcmp (key, "shape") == 0)
    pl_lua_push_shape (L, &v->shape);
  else if (strcmp (key, "producer") == 0)
    pl_lua_push_node (L, pl_lua_push_owner_graph (L, 1), v->producer);
  else if (strcmp (key, "users") == 0)
    push_users (L, pl_lua_push_owner_graph (L, 1), v);
  else if (strcmp (key, "is_input") == 0)
    lua_pushboolean (L, v->is_input);
  else if (strcmp (key, "is_constant") == 0)
    lua_pushboolean (L, v->constant != NULL);
  else if (strcmp (key, "is_output") == 0)
    lua_pushboolean (L, pl_value_is_output (v));
  else if (strcmp (key, "layout") == 0)
    lua_pushstring (L, pl_layout_name (v->layout));
  else if (strcmp (key, "graph") == 0)
    pl_lua_push_owner_graph (L, 1);
  else if (strcmp (key, "data") == 0)
    {
      PlTensor *t = pl_value_constant (v);
      if (t)
        pl_lua_push_tensor_data (L, t);
      else
        lua_pushnil (L);
    }
  else
    lua_pushnil (L);
  return 1;
}

const luaL_Reg pl_lua_graph_read_methods[] = {
  { "nodes", graph_nodes },         { "node", graph_node },
  { "value", graph_value },         { "inputs", graph_inputs },
  { "outputs", graph_outputs },     { "text", graph_text },
  { "save", graph_save },           { "copy", graph_copy },
  { "verify", graph_verify },       { "stats", graph_stats },
  { NULL, NULL },
};
