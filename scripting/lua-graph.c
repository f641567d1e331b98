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
 *
 * This file holds the handles themselves (making, checking, caching,
 * comparing and freeing them), the boxes and errors every binding uses, and
 * the registration of the metatables. The methods and fields that read a
 * graph are in lua-graph-read.c, those that change one in
 * lua-graph-rewrite.c.
 */
#define G_LOG_DOMAIN "passlab"

#include "lua-private.h"

#include <string.h>

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

bool
pl_lua_is_value (lua_State *L, int idx)
{
  return test_handle (L, idx, &value_key) != NULL;
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
G_NORETURN void
pl_lua_raise_owned (lua_State *L, char *msg)
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
  pl_lua_raise_owned (L, msg);
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

PlGraph *
pl_lua_graph_of (const PlLuaGraph *lg)
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
  PlGraph *g = pl_lua_graph_of (check_lg (L, arg));
  if (!g)
    luaL_error (L, "invalid graph reference");
  return g;
}

PlGraph *
pl_lua_check_writable_graph (lua_State *L, int arg)
{
  PlLuaGraph *lg = check_lg (L, arg);
  PlGraph *g = pl_lua_graph_of (lg);
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

void
pl_lua_push_node (lua_State *L, int gidx, const PlNode *n)
{
  if (n)
    push_ref (L, gidx, n->id, UV_NODES, &node_key);
  else
    lua_pushnil (L);
}

void
pl_lua_push_value (lua_State *L, int gidx, const PlValue *v)
{
  if (v)
    push_ref (L, gidx, v->id, UV_VALUES, &value_key);
  else
    lua_pushnil (L);
}

PlNode *
pl_lua_check_node (lua_State *L, int arg, PlLuaGraph **lgp)
{
  Ref *r = check_handle (L, arg, &node_key, NODE_MT);
  PlGraph *g = pl_lua_graph_of (r->lg);
  if (!g)
    luaL_error (L, "invalid graph reference");
  PlNode *n = pl_graph_node_by_id (g, r->id);
  if (!n)
    luaL_error (L, "invalid node reference (node %d is no longer in the graph)", (int) r->id);
  if (lgp)
    *lgp = r->lg;
  return n;
}

PlValue *
pl_lua_check_value (lua_State *L, int arg, PlLuaGraph **lgp)
{
  Ref *r = check_handle (L, arg, &value_key, VALUE_MT);
  PlGraph *g = pl_lua_graph_of (r->lg);
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
PlValue *
pl_lua_check_value_of (lua_State *L, int arg, PlGraph *g, const char *what)
{
  PlValue *v = pl_lua_check_value (L, arg, NULL);
  if (v->graph != g)
    luaL_error (L, "%s: value '%s' belongs to another graph", what, v->name);
  return v;
}

/* Pushes the graph handle of the node or value handle at idx; returns its index. */
int
pl_lua_push_owner_graph (lua_State *L, int idx)
{
  lua_getiuservalue (L, idx, 1);
  return lua_gettop (L);
}

/* --- metamethods --------------------------------------------------------------------- */

const char *
pl_lua_index_method (lua_State *L)
{
  lua_pushvalue (L, 2);
  if (lua_rawget (L, lua_upvalueindex (1)) != LUA_TNIL)
    return NULL;
  return lua_tostring (L, 2);
}

/* g.name and g.opset; the methods come from the upvalue (see new_class). */
static int
graph_index (lua_State *L)
{
  PlLuaGraph *lg = check_lg (L, 1);
  const char *key = pl_lua_index_method (L);
  if (!key)
    return 1;
  PlGraph *g = pl_lua_graph_of (lg);
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
  PlGraph *g = pl_lua_graph_of (check_lg (L, 1));
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

static int
node_tostring (lua_State *L)
{
  Ref *r = luaL_checkudata (L, 1, NODE_MT);
  PlGraph *g = pl_lua_graph_of (r->lg);
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
  lua_pushboolean (L, same_type && a->id == b->id && pl_lua_graph_of (a->lg) == pl_lua_graph_of (b->lg));
  return 1;
}

static int
value_tostring (lua_State *L)
{
  Ref *r = luaL_checkudata (L, 1, VALUE_MT);
  PlGraph *g = pl_lua_graph_of (r->lg);
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
 * the methods in method_sets, a NULL-terminated list of luaL_Reg arrays; may
 * be NULL), the other metamethods in meta. __metatable hides it from scripts. */
static void
new_class (lua_State *L, const char *name, const void *key, const luaL_Reg *const *method_sets,
           lua_CFunction index, const luaL_Reg *meta)
{
  luaL_newmetatable (L, name);
  lua_pushvalue (L, -1);
  lua_rawsetp (L, LUA_REGISTRYINDEX, key);
  luaL_setfuncs (L, meta, 0);
  lua_newtable (L);
  for (int i = 0; method_sets && method_sets[i]; i++)
    luaL_setfuncs (L, method_sets[i], 0);
  lua_pushcclosure (L, index, 1);
  lua_setfield (L, -2, "__index");
  lua_pushstring (L, name);
  lua_setfield (L, -2, "__metatable");
  lua_pop (L, 1);
}

void
pl_lua_graph_open (lua_State *L)
{
  static const luaL_Reg *const graph_methods[] = {
    pl_lua_graph_read_methods, pl_lua_graph_rewrite_methods, NULL,
  };
  static const luaL_Reg graph_meta[] = {
    { "__len", graph_len },   { "__tostring", graph_tostring },
    { "__gc", graph_release }, { "__close", graph_release },
    { NULL, NULL },
  };
  static const luaL_Reg *const node_methods[] = { pl_lua_node_rewrite_methods, NULL };
  static const luaL_Reg node_meta[] = { { "__tostring", node_tostring }, { "__eq", ref_eq }, { NULL, NULL } };
  static const luaL_Reg value_meta[] = { { "__tostring", value_tostring }, { "__eq", ref_eq }, { NULL, NULL } };
  static const luaL_Reg box_meta[] = { { "__gc", box_gc }, { NULL, NULL } };

  new_class (L, PL_LUA_GRAPH_MT, &graph_key, graph_methods, graph_index, graph_meta);
  new_class (L, NODE_MT, &node_key, node_methods, pl_lua_node_index, node_meta);
  new_class (L, VALUE_MT, &value_key, NULL, pl_lua_value_index, value_meta);
  luaL_newmetatable (L, BOX_MT);
  luaL_setfuncs (L, box_meta, 0);
  lua_pop (L, 1);
  /* The metatable of the handle caches: weak values. */
  luaL_newmetatable (L, "passlab.weak");
  lua_pushstring (L, "v");
  lua_setfield (L, -2, "__mode");
  lua_pop (L, 1);
}
