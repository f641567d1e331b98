/* lua-private.h — what the scripting files share: the PlLua state
 * (pl-lua.c), the graph/node/value userdata (lua-graph*.c) and the passlab
 * module (lua-passlab*.c). Not installed; only scripting/ includes it. */
#pragma once

#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>

#include "pl-lua.h"

G_BEGIN_DECLS

/* A pass a script registered. Owned by its PlLua (freed with it); the
 * PlPass in the registry points here. */
typedef struct {
  PlLua *owner;
  char  *name;
  char  *source;       /* the chunk the run function comes from, for error lines */
  int    func_ref;     /* the run function, in the Lua registry */
  gint   registered;   /* atomic: cleared when the registry drops the PlPass */
} PlLuaPass;

struct _PlLua {
  lua_State     *L;
  PlLuaOptions   options;
  size_t         mem_used;
  size_t         mem_limit;
  gint           cancel;          /* atomic: pl_lua_cancel() was called */
  gint64         deadline;        /* monotonic µs; 0: none */
  int            interrupt;       /* PL_LUA_ERROR_INTERRUPTED / _TIMEOUT once the hook raised, else -1 */
  int            depth;           /* nesting of calls from C into Lua */
  bool           closing;         /* pl_lua_free is closing the state */
  int            busy_pipelines;  /* passlab.run calls and Lua passes running now */
  char          *top_source;      /* the source ("@path", "=name") errors point into */
  GRecMutex      lock;
  GPtrArray     *passes;          /* PlLuaPass* */
  int            last_history_ref;/* the history box of the last passlab.run, or LUA_NOREF */
};

/* The PlLua of a Lua state (kept in its extra space). */
PlLua *pl_lua_get (lua_State *L);

/* Calls func(L) with one light userdata argument, ud, in protected mode as
 * a call from C into Lua: locks the state, (at the outermost level) resets
 * the cancel flag and starts the time limit, adds a traceback to errors and
 * turns them into a GError. source is the chunk errors point into (NULL:
 * keep the current one). */
bool   pl_lua_pcall (PlLua *pl, lua_CFunction func, void *ud, const char *source, GError **error);

/* --- lua-graph.c ---------------------------------------------------------------- */

typedef enum {
  PL_LUA_GRAPH_OWNED,     /* freed by __gc / __close (passlab.load, parse, g:copy) */
  PL_LUA_GRAPH_BORROWED,  /* the graph a Lua pass rewrites: invalid once the pass returns */
  PL_LUA_GRAPH_STEP,      /* a history step's version: read-only, valid while the history lives */
} PlLuaGraphKind;

/* The userdata ("passlab.history") that owns a PlHistory for Lua. */
typedef struct {
  PlHistory *history;   /* NULL once handed to C (pl_lua_take_last_history) */
} PlLuaHistory;

typedef struct {
  PlLuaGraphKind  kind;
  PlGraph        *graph;    /* OWNED, BORROWED: NULL once closed or the borrow ended */
  PlLuaHistory   *history;  /* STEP: the graph is history->steps[step] */
  int             step;
} PlLuaGraph;

#define PL_LUA_GRAPH_MT   "passlab.graph"
#define PL_LUA_HISTORY_MT "passlab.history"

/* Creates the metatables of graphs, nodes, values and boxes. */
void        pl_lua_graph_open        (lua_State *L);
/* Pushes a graph handle. OWNED takes ownership of g. */
PlLuaGraph *pl_lua_push_graph        (lua_State *L, PlLuaGraphKind kind, PlGraph *g);
/* Pushes a read-only handle to step `step` of the history box at index hidx. */
void        pl_lua_push_step_graph   (lua_State *L, int hidx, int step);
/* The graph at arg, or a Lua error (wrong type, or an invalid reference). */
PlGraph    *pl_lua_check_graph       (lua_State *L, int arg);
/* Raises error's message as a Lua error with the caller's position; frees error. */
G_NORETURN void pl_lua_raise_gerror  (lua_State *L, GError *error);

/* Pushes a userdata whose __gc calls destroy on what the returned slot
 * holds. C objects built while Lua calls may raise live in one, so an error
 * (a longjmp) cannot leak them: push the box first, then acquire into *slot. */
gpointer   *pl_lua_box               (lua_State *L, GDestroyNotify destroy);
/* Takes the object back from the box at idx (the box then frees nothing). */
gpointer    pl_lua_box_steal         (lua_State *L, int idx);

/* Raises msg (taken) with the caller's position, as luaL_error does. */
G_NORETURN void pl_lua_raise_owned   (lua_State *L, char *msg);

/* The graph of a handle; NULL once closed, its borrow ended or its history freed. */
PlGraph    *pl_lua_graph_of          (const PlLuaGraph *lg);
/* The graph at arg, if it may be rewritten (not a history step), or a Lua error. */
PlGraph    *pl_lua_check_writable_graph (lua_State *L, int arg);

/* Node and value handles. Pushing one takes the index of its graph handle
 * (gidx) and pushes nil for NULL; the same object is the same handle. */
void        pl_lua_push_node         (lua_State *L, int gidx, const PlNode *n);
void        pl_lua_push_value        (lua_State *L, int gidx, const PlValue *v);
/* The node or value at arg, or a Lua error (wrong type, or gone from its
 * graph); *lgp (may be NULL) gets the handle of its graph. */
PlNode     *pl_lua_check_node        (lua_State *L, int arg, PlLuaGraph **lgp);
PlValue    *pl_lua_check_value       (lua_State *L, int arg, PlLuaGraph **lgp);
/* A value of graph g at arg; what names the function in errors. */
PlValue    *pl_lua_check_value_of    (lua_State *L, int arg, PlGraph *g, const char *what);
/* Whether idx holds a value handle (valid or not). */
bool        pl_lua_is_value          (lua_State *L, int idx);
/* Pushes the graph handle of the node or value handle at idx; returns its index. */
int         pl_lua_push_owner_graph  (lua_State *L, int idx);
/* The start of an __index whose upvalue holds the methods (key at 2): pushes
 * the method, or nil. Returns NULL when that is the answer (a method, or a
 * key that is not a string), else the key, a field name, with the nil still
 * pushed. */
const char *pl_lua_index_method      (lua_State *L);

/* --- lua-graph-read.c ------------------------------------------------------------ */

/* A shape as an array of sizes, symbol names and "?"; nil for unknown rank. */
void        pl_lua_push_shape        (lua_State *L, const PlShape *s);
/* g:nodes(), g:node(), ... g:stats(). */
extern const luaL_Reg pl_lua_graph_read_methods[];
/* The __index of node and value handles (their fields; node methods come
 * from the upvalue). */
int         pl_lua_node_index        (lua_State *L);
int         pl_lua_value_index       (lua_State *L);

/* --- lua-graph-rewrite.c --------------------------------------------------------- */

/* g:add_node{...}, g:add_const(), ... g:dce(); n:set_attr(). */
extern const luaL_Reg pl_lua_graph_rewrite_methods[];
extern const luaL_Reg pl_lua_node_rewrite_methods[];

/* --- lua-passlab.c --------------------------------------------------------------- */

/* The luaopen function of `require "passlab"`. */
int         pl_lua_open_passlab      (lua_State *L);

/* --- lua-passlab-run.c ----------------------------------------------------------- */

/* Creates the history metatable and registry tables (at state creation). */
void        pl_lua_passlab_init      (lua_State *L);
/* The pipeline a Lua value describes (see passlab.run), or a Lua error. */
PlPipeline *pl_lua_check_pipeline    (lua_State *L, int arg);
/* Takes the PlHistory out of a history table passlab.run returned (its step
 * graphs become invalid), or NULL if idx holds no such table. */
PlHistory  *pl_lua_steal_history     (lua_State *L, int idx);
/* A parameter value given in Lua as text (g_free), or NULL if it has no text form. */
char       *pl_lua_param_text        (lua_State *L, int idx);
/* Pushes {added={ids}, removed={ids}, changed={ids}}. */
void        pl_lua_push_graph_diff   (lua_State *L, const PlGraphDiff *d);
/* passlab.passes() and passlab.run(g, pipeline [, options]). */
int         pl_lua_passlab_passes    (lua_State *L);
int         pl_lua_passlab_run       (lua_State *L);

/* --- lua-passlab-register.c ------------------------------------------------------ */

/* passlab.register_pass{...}. */
int         pl_lua_passlab_register_pass (lua_State *L);
/* Unregisters and frees the passes of pl. */
void        pl_lua_passes_free       (PlLua *pl);

/* --- lua-passlab-exec.c ---------------------------------------------------------- */

/* Tensors as Lua tables: {dtype="f32", shape={2, 3}, data={...}} with data
 * flat, row-major (numbers; integers for integer dtypes; booleans for bool). */
void        pl_lua_push_tensor       (lua_State *L, const PlTensor *t);
void        pl_lua_push_tensor_data  (lua_State *L, const PlTensor *t);
/* Reads a static shape (array of sizes) at idx into dims; returns the rank. */
int         pl_lua_check_dims        (lua_State *L, int idx, int64_t *dims, const char *what);
/* Fills t from the flat array (or single number) at idx, or raises naming what. */
void        pl_lua_fill_tensor       (lua_State *L, int idx, PlTensor *t, const char *what);
/* passlab.exec(g [, options]). */
int         pl_lua_passlab_exec      (lua_State *L);

G_END_DECLS
