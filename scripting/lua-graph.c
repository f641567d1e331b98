/* lua-graph.c — graphs, nodes and values as Lua userdata.
 *
 * A graph handle ("passlab.graph") either owns its PlGraph (passlab.load,
 * passlab.parse, g:copy: freed by __gc or __close), borrows the graph a Lua
 * pass rewrites (invalid once the pass returns), or names a version in a
 * pass history (read-only; valid while the history lives, which the handle
 * keeps alive). Using a handle whose graph is gone raises "invalid graph
 * reference".
 *
 * Node and value handles hold (graph handle, id) and look the object up by
 * id on every access, so a node a pass removed raises "invalid node
 * reference" instead of reading freed memory. Each graph handle caches its
 * node and value handles in weak tables (its user values 1 and 2), so the
 * same node is the same Lua object: `seen[n] = true` works.
 *
 * Lua API (g a graph, n a node, v a value):
 *   g.name, g.opset, #g (nodes), tostring(g)
 *   g:nodes() (iterator, topological order; skips nodes removed meanwhile)
 *   g:node(id_or_name), g:value(name_or_id), g:inputs(), g:outputs()
 *   g:text(), g:save(path) (.onnx or .graph), g:copy(), g:verify() -> ok, msg
 *   g:stats([sym_size]) -> {nodes, kernels, reshape_bytes, bytes_moved, flops, peak_bytes}
 *   g:add_node{op=, inputs={v, false, ...}, attrs={...}, name=, domain=, outputs=N} -> n
 *   g:add_const(name, dtype, shape, data) -> v      g:replace_uses(old, new)
 *   g:remove_node(n)   g:set_output(i, v)   g:dce() -> nodes removed
 *   g:set_layout(v, "NHWC") (layout.h: rank 4, not an input, output or constant;
 *     a LayoutTransform's output keeps its `to`: add_node{op="LayoutTransform", attrs={to="NHWC"}})
 *   n.id, n.name, n.op, n.domain, n.attrs, n.inputs, n.outputs, n.graph, n:set_attr(name, value)
 *   v.id, v.name, v.dtype, v.shape, v.producer, v.users, v.is_input, v.is_constant,
 *   v.is_output, v.data (a constant's data), v.graph, v.layout ("NCHW", "NHWC", "CHWN")
 * Rewrites go through graph.h and keep shapes inferred; names given are made
 * unique. Every rewrite error is a Lua error with a message.
 */
#define G_LOG_DOMAIN "passlab"

#include "lua-private.h"

#include <math.h>
#include <string.h>

#include "cost.h"
#include "onnx-io.h"
#include "rewrite.h"
#include "text-format.h"

#define NODE_MT  "passlab.node"
#define VALUE_MT "passlab.value"
#define BOX_MT   "passlab.box"

/* Registry keys (by address) of the metatables, for checks in hot paths:
 * luaL_checkudata looks its metatable up by name, which costs a string
 * comparison per call. */
static const char graph_key, node_key, value_key;

/* The userdata at idx if its metatable is the one stored at key, else NULL. */
static void *
test_handle (lua_State *L, int idx, const void *key)
{
  void *p = lua_touserdata (L, idx);
  if (!p || !lua_getmetatable (L, idx))
    return NULL;
  lua_rawgetp (L, LUA_REGISTRYINDEX, key);
  bool same = lua_rawequal (L, -1, -2);
  lua_pop (L, 2);
  return same ? p : NULL;
}

/* Same, raising luaL_checkudata's "bad argument" error on a mismatch. */
static void *
check_handle (lua_State *L, int idx, const void *key, const char *tname)
{
  void *p = test_handle (L, idx, key);
  return p ? p : luaL_checkudata (L, idx, tname);
}

static void
set_metatable (lua_State *L, const void *key)
{
  lua_rawgetp (L, LUA_REGISTRYINDEX, key);
  lua_setmetatable (L, -2);
}

/* The user values of a graph handle. */
enum { UV_NODES = 1, UV_VALUES, UV_OWNER, N_GRAPH_UV = UV_OWNER };

/* A node or value handle; its user value 1 is the graph handle. */
typedef struct {
  PlLuaGraph *lg;
  guint32     id;
} Ref;

/* --- errors and boxes ------------------------------------------------------------ */

/* Raises msg (taken) with the caller's position, as luaL_error does. */
static G_NORETURN void
raise_owned (lua_State *L, char *msg)
{
  luaL_where (L, 1);
  lua_pushstring (L, msg);
  g_free (msg);
  lua_concat (L, 2);
  lua_error (L);
  g_assert_not_reached ();
}

void
pl_lua_raise_gerror (lua_State *L, GError *error)
{
  char *msg = g_strdup (error->message);
  g_error_free (error);
  raise_owned (L, msg);
}

typedef struct {
  gpointer       p;
  GDestroyNotify destroy;
} Box;

static int
box_gc (lua_State *L)
{
  Box *b = lua_touserdata (L, 1);
  if (b->p && b->destroy)
    b->destroy (b->p);
  b->p = NULL;
  return 0;
}

gpointer *
pl_lua_box (lua_State *L, GDestroyNotify destroy)
{
  Box *b = lua_newuserdatauv (L, sizeof *b, 0);
  b->p = NULL;
  b->destroy = destroy;
  luaL_setmetatable (L, BOX_MT);
  return &b->p;
}

gpointer
pl_lua_box_steal (lua_State *L, int idx)
{
  Box *b = luaL_checkudata (L, idx, BOX_MT);
  gpointer p = b->p;
  b->p = NULL;
  return p;
}

/* --- graph handles --------------------------------------------------------------- */

static PlGraph *
graph_of (const PlLuaGraph *lg)
{
  if (lg->kind != PL_LUA_GRAPH_STEP)
    return lg->graph;
  if (!lg->history->history || lg->step >= pl_history_n_steps (lg->history->history))
    return NULL;
  return pl_history_step (lg->history->history, lg->step)->graph;
}

static PlLuaGraph *
new_graph_handle (lua_State *L, PlLuaGraphKind kind)
{
  PlLuaGraph *lg = lua_newuserdatauv (L, sizeof *lg, N_GRAPH_UV);
  *lg = (PlLuaGraph) { .kind = kind };
  set_metatable (L, &graph_key);
  for (int uv = UV_NODES; uv <= UV_VALUES; uv++)
    {
      lua_newtable (L);
      luaL_setmetatable (L, "passlab.weak");
      lua_setiuservalue (L, -2, uv);
    }
  return lg;
}

PlLuaGraph *
pl_lua_push_graph (lua_State *L, PlLuaGraphKind kind, PlGraph *g)
{
  PlLuaGraph *lg = new_graph_handle (L, kind);
  lg->graph = g;
  return lg;
}

void
pl_lua_push_step_graph (lua_State *L, int hidx, int step)
{
  hidx = lua_absindex (L, hidx);
  PlLuaGraph *lg = new_graph_handle (L, PL_LUA_GRAPH_STEP);
  lg->history = luaL_checkudata (L, hidx, PL_LUA_HISTORY_MT);
  lg->step = step;
  lua_pushvalue (L, hidx);
  lua_setiuservalue (L, -2, UV_OWNER);
}

static PlLuaGraph *
check_lg (lua_State *L, int arg)
{
  return check_handle (L, arg, &graph_key, PL_LUA_GRAPH_MT);
}

PlGraph *
pl_lua_check_graph (lua_State *L, int arg)
{
  PlGraph *g = graph_of (check_lg (L, arg));
  if (!g)
    luaL_error (L, "invalid graph reference");
  return g;
}

/* The graph at arg, if it may be rewritten (not a history step). */
static PlGraph *
check_writable (lua_State *L, int arg)
{
  PlLuaGraph *lg = check_lg (L, arg);
  PlGraph *g = graph_of (lg);
  if (!g)
    luaL_error (L, "invalid graph reference");
  if (lg->kind == PL_LUA_GRAPH_STEP)
    luaL_error (L, "the graph of a history step is read-only (rewrite g:copy())");
  return g;
}

/* --- node and value handles ------------------------------------------------------ */

/* Pushes the handle of object id from the cache (user value uv) of the graph
 * handle at gidx, making it if needed. */
static void
push_ref (lua_State *L, int gidx, guint32 id, int uv, const void *mt)
{
  lua_getiuservalue (L, gidx, uv);
  if (lua_rawgeti (L, -1, id) != LUA_TNIL)
    {
      lua_remove (L, -2);
      return;
    }
  lua_pop (L, 1);
  Ref *r = lua_newuserdatauv (L, sizeof *r, 1);
  r->lg = lua_touserdata (L, gidx);
  r->id = id;
  set_metatable (L, mt);
  lua_pushvalue (L, gidx);
  lua_setiuservalue (L, -2, 1);
  lua_pushvalue (L, -1);
  lua_rawseti (L, -3, id);
  lua_remove (L, -2);
}

static void
push_node (lua_State *L, int gidx, const PlNode *n)
{
  if (n)
    push_ref (L, gidx, n->id, UV_NODES, &node_key);
  else
    lua_pushnil (L);
}

static void
push_value (lua_State *L, int gidx, const PlValue *v)
{
  if (v)
    push_ref (L, gidx, v->id, UV_VALUES, &value_key);
  else
    lua_pushnil (L);
}

static PlNode *
check_node (lua_State *L, int arg, PlLuaGraph **lgp)
{
  Ref *r = check_handle (L, arg, &node_key, NODE_MT);
  PlGraph *g = graph_of (r->lg);
  if (!g)
    luaL_error (L, "invalid graph reference");
  PlNode *n = pl_graph_node_by_id (g, r->id);
  if (!n)
    luaL_error (L, "invalid node reference (node %d is no longer in the graph)", (int) r->id);
  if (lgp)
    *lgp = r->lg;
  return n;
}

static PlValue *
check_value (lua_State *L, int arg, PlLuaGraph **lgp)
{
  Ref *r = check_handle (L, arg, &value_key, VALUE_MT);
  PlGraph *g = graph_of (r->lg);
  if (!g)
    luaL_error (L, "invalid graph reference");
  PlValue *v = pl_graph_value_by_id (g, r->id);
  if (!v)
    luaL_error (L, "invalid value reference (value %d is no longer in the graph)", (int) r->id);
  if (lgp)
    *lgp = r->lg;
  return v;
}

/* A value of graph g at arg (argument checks name fname). */
static PlValue *
check_value_of (lua_State *L, int arg, PlGraph *g, const char *what)
{
  PlValue *v = check_value (L, arg, NULL);
  if (v->graph != g)
    luaL_error (L, "%s: value '%s' belongs to another graph", what, v->name);
  return v;
}

/* Pushes the graph handle of the node or value handle at idx; returns its index. */
static int
push_owner_graph (lua_State *L, int idx)
{
  lua_getiuservalue (L, idx, 1);
  return lua_gettop (L);
}

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

/* --- graph methods ---------------------------------------------------------------- */

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
          push_node (L, lua_upvalueindex (2), n);
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
  push_node (L, 1, n);
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
  push_value (L, 1, v);
  return 1;
}

static void
push_value_array (lua_State *L, int gidx, GPtrArray *values)
{
  lua_createtable (L, values->len, 0);
  for (guint i = 0; i < values->len; i++)
    {
      push_value (L, gidx, values->pdata[i]);
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
  PlGraph *g = check_writable (L, 1);
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
      else if (test_handle (L, -1, &value_key))
        inputs[i] = check_value_of (L, -1, g, "add_node");
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
  push_node (L, 1, node);
  return 1;
}

static int
graph_add_const (lua_State *L)
{
  PlGraph *g = check_writable (L, 1);
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
  push_value (L, 1, v);
  return 1;
}

static int
graph_replace_uses (lua_State *L)
{
  PlGraph *g = check_writable (L, 1);
  PlValue *old = check_value_of (L, 2, g, "replace_uses");
  PlValue *new_value = check_value_of (L, 3, g, "replace_uses");
  if (old->dtype != new_value->dtype || !pl_shape_equal (&old->shape, &new_value->shape))
    {
      char *a = pl_shape_to_string (&old->shape), *b = pl_shape_to_string (&new_value->shape);
      char *msg = g_strdup_printf ("replace_uses: '%s' is %s%s but '%s' is %s%s (insert a Reshape, Expand or Cast)",
                                   old->name, pl_dtype_name (old->dtype), a, new_value->name,
                                   pl_dtype_name (new_value->dtype), b);
      g_free (a), g_free (b);
      raise_owned (L, msg);
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
  PlGraph *g = check_writable (L, 1);
  PlValue *v = check_value_of (L, 2, g, "set_layout");
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
  PlGraph *g = check_writable (L, 1);
  PlLuaGraph *lg;
  PlNode *node = check_node (L, 2, &lg);
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
          raise_owned (L, msg);
        }
    }
  pl_graph_remove_node (g, node);
  return 0;
}

static int
graph_set_output (lua_State *L)
{
  PlGraph *g = check_writable (L, 1);
  lua_Integer i = luaL_checkinteger (L, 2);
  PlValue *v = check_value_of (L, 3, g, "set_output");
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
  lua_pushinteger (L, pl_rw_dce (check_writable (L, 1)));
  return 1;
}

static int
graph_index (lua_State *L)
{
  PlLuaGraph *lg = check_lg (L, 1);
  lua_pushvalue (L, 2);
  if (lua_rawget (L, lua_upvalueindex (1)) != LUA_TNIL)
    return 1;
  const char *key = lua_tostring (L, 2);
  if (!key)
    return 1;
  PlGraph *g = graph_of (lg);
  if (!g)
    return luaL_error (L, "invalid graph reference");
  if (strcmp (key, "name") == 0)
    lua_pushstring (L, g->name);
  else if (strcmp (key, "opset") == 0)
    lua_pushinteger (L, g->opset);
  else
    lua_pushnil (L);
  return 1;
}

static int
graph_len (lua_State *L)
{
  lua_pushinteger (L, pl_lua_check_graph (L, 1)->nodes->len);
  return 1;
}

static int
graph_tostring (lua_State *L)
{
  PlGraph *g = graph_of (check_lg (L, 1));
  if (g)
    lua_pushfstring (L, "passlab.graph '%s' (%d nodes)", g->name, (int) g->nodes->len);
  else
    lua_pushstring (L, "passlab.graph (invalid)");
  return 1;
}

/* __gc and __close: an owned graph is freed, a borrowed one forgotten. */
static int
graph_release (lua_State *L)
{
  PlLuaGraph *lg = check_lg (L, 1);
  if (lg->kind == PL_LUA_GRAPH_OWNED)
    pl_graph_free (lg->graph);
  if (lg->kind != PL_LUA_GRAPH_STEP)
    lg->graph = NULL;
  return 0;
}

/* --- node methods ------------------------------------------------------------------- */

static int
node_set_attr (lua_State *L)
{
  PlLuaGraph *lg;
  PlNode *node = check_node (L, 1, &lg);
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
        push_value (L, gidx, values[i]);
      else
        lua_pushboolean (L, 0);
      lua_rawseti (L, -2, i + 1);
    }
}

static int
node_index (lua_State *L)
{
  lua_pushvalue (L, 2);
  if (lua_rawget (L, lua_upvalueindex (1)) != LUA_TNIL)
    return 1;
  const char *key = lua_tostring (L, 2);
  if (!key)
    return 1;
  PlNode *n = check_node (L, 1, NULL);
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
    push_slots (L, push_owner_graph (L, 1), n->inputs, n->n_inputs);
  else if (strcmp (key, "outputs") == 0)
    push_slots (L, push_owner_graph (L, 1), n->outputs, n->n_outputs);
  else if (strcmp (key, "graph") == 0)
    push_owner_graph (L, 1);
  else
    lua_pushnil (L);
  return 1;
}

static int
node_tostring (lua_State *L)
{
  Ref *r = luaL_checkudata (L, 1, NODE_MT);
  PlGraph *g = graph_of (r->lg);
  PlNode *n = g ? pl_graph_node_by_id (g, r->id) : NULL;
  if (n)
    lua_pushfstring (L, "node '%s' (%s)", n->name, n->op_type);
  else
    lua_pushfstring (L, "node %d (invalid)", (int) r->id);
  return 1;
}

/* Two handles are equal when they name the same object of the same graph. */
static int
ref_eq (lua_State *L)
{
  Ref *a = lua_touserdata (L, 1), *b = lua_touserdata (L, 2);
  lua_getmetatable (L, 1);
  bool same_type = lua_getmetatable (L, 2) && lua_rawequal (L, -1, -2);
  lua_pushboolean (L, same_type && a->id == b->id && graph_of (a->lg) == graph_of (b->lg));
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
          push_node (L, gidx, v->uses[i].node);
          lua_rawseti (L, out, ++n);
        }
      lua_pop (L, 1);
    }
  lua_pop (L, 1);
}

static int
value_index (lua_State *L)
{
  const char *key = lua_tostring (L, 2);
  if (!key)
    return 0;
  PlValue *v = check_value (L, 1, NULL);
  if (strcmp (key, "name") == 0)
    lua_pushstring (L, v->name);
  else if (strcmp (key, "id") == 0)
    lua_pushinteger (L, v->id);
  else if (strcmp (key, "dtype") == 0)
    lua_pushstring (L, pl_dtype_name (v->dtype));
  else if (strcmp (key, "shape") == 0)
    pl_lua_push_shape (L, &v->shape);
  else if (strcmp (key, "producer") == 0)
    push_node (L, push_owner_graph (L, 1), v->producer);
  else if (strcmp (key, "users") == 0)
    push_users (L, push_owner_graph (L, 1), v);
  else if (strcmp (key, "is_input") == 0)
    lua_pushboolean (L, v->is_input);
  else if (strcmp (key, "is_constant") == 0)
    lua_pushboolean (L, v->constant != NULL);
  else if (strcmp (key, "is_output") == 0)
    lua_pushboolean (L, pl_value_is_output (v));
  else if (strcmp (key, "layout") == 0)
    lua_pushstring (L, pl_layout_name (v->layout));
  else if (strcmp (key, "graph") == 0)
    push_owner_graph (L, 1);
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

static int
value_tostring (lua_State *L)
{
  Ref *r = luaL_checkudata (L, 1, VALUE_MT);
  PlGraph *g = graph_of (r->lg);
  PlValue *v = g ? pl_graph_value_by_id (g, r->id) : NULL;
  if (!v)
    {
      lua_pushfstring (L, "value %d (invalid)", (int) r->id);
      return 1;
    }
  char *shape = pl_shape_to_string (&v->shape);
  lua_pushfstring (L, "value '%s' %s%s", v->name, pl_dtype_name (v->dtype), shape);
  g_free (shape);
  return 1;
}

/* --- registration ----------------------------------------------------------------------- */

/* A metatable named name with __index = index (whose upvalue is a table of
 * methods), the other metamethods in meta. __metatable hides it from scripts. */
static void
new_class (lua_State *L, const char *name, const void *key, const luaL_Reg *methods, lua_CFunction index,
           const luaL_Reg *meta)
{
  luaL_newmetatable (L, name);
  lua_pushvalue (L, -1);
  lua_rawsetp (L, LUA_REGISTRYINDEX, key);
  luaL_setfuncs (L, meta, 0);
  lua_newtable (L);
  if (methods)
    luaL_setfuncs (L, methods, 0);
  lua_pushcclosure (L, index, 1);
  lua_setfield (L, -2, "__index");
  lua_pushstring (L, name);
  lua_setfield (L, -2, "__metatable");
  lua_pop (L, 1);
}

void
pl_lua_graph_open (lua_State *L)
{
  static const luaL_Reg graph_methods[] = {
    { "nodes", graph_nodes },         { "node", graph_node },
    { "value", graph_value },         { "inputs", graph_inputs },
    { "outputs", graph_outputs },     { "text", graph_text },
    { "save", graph_save },           { "copy", graph_copy },
    { "verify", graph_verify },       { "stats", graph_stats },
    { "add_node", graph_add_node },   { "add_const", graph_add_const },
    { "replace_uses", graph_replace_uses }, { "remove_node", graph_remove_node },
    { "set_output", graph_set_output }, { "dce", graph_dce },
    { "set_layout", graph_set_layout },
    { NULL, NULL },
  };
  static const luaL_Reg graph_meta[] = {
    { "__len", graph_len },   { "__tostring", graph_tostring },
    { "__gc", graph_release }, { "__close", graph_release },
    { NULL, NULL },
  };
  static const luaL_Reg node_methods[] = { { "set_attr", node_set_attr }, { NULL, NULL } };
  static const luaL_Reg node_meta[] = { { "__tostring", node_tostring }, { "__eq", ref_eq }, { NULL, NULL } };
  static const luaL_Reg value_meta[] = { { "__tostring", value_tostring }, { "__eq", ref_eq }, { NULL, NULL } };
  static const luaL_Reg box_meta[] = { { "__gc", box_gc }, { NULL, NULL } };

  new_class (L, PL_LUA_GRAPH_MT, &graph_key, graph_methods, graph_index, graph_meta);
  new_class (L, NODE_MT, &node_key, node_methods, node_index, node_meta);
  new_class (L, VALUE_MT, &value_key, NULL, value_index, value_meta);
  luaL_newmetatable (L, BOX_MT);
  luaL_setfuncs (L, box_meta, 0);
  lua_pop (L, 1);
  /* The metatable of the handle caches: weak values. */
  luaL_newmetatable (L, "passlab.weak");
  lua_pushstring (L, "v");
  lua_setfield (L, -2, "__mode");
  lua_pop (L, 1);
}
