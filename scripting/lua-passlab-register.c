/* lua-passlab-register.c — passlab.register_pass{name=, params=, run=}:
 * Lua passes. A Lua pass is a PlPass whose run function calls back into
 * the Lua state (protected, with the state locked) with a borrowed handle
 * to the graph the pass manager made for it; the PlLuaPass it points to
 * lives as long as the PlLua and is swept once the registry drops it.
 */
#define G_LOG_DOMAIN "passlab"

#include "lua-private.h"

#include <string.h>

/* --- Lua passes ---------------------------------------------------------------------------- */

typedef struct {
  PlLuaPass          *lp;
  PlGraph            *graph;
  const PlPassArgs   *args;
  PlPassReport       *report;
} PassCall;

static void
push_params (lua_State *L, const PlPassArgs *args)
{
  const PlPass *pass = pl_pass_args_pass (args);
  lua_createtable (L, 0, pass->n_params);
  for (int i = 0; i < pass->n_params; i++)
    {
      const PlPassParam *pp = &pass->params[i];
      switch (pp->type)
        {
        case PL_PARAM_INT:    lua_pushinteger (L, pl_pass_args_int (args, pp->name)); break;
        case PL_PARAM_FLOAT:  lua_pushnumber (L, pl_pass_args_float (args, pp->name)); break;
        case PL_PARAM_BOOL:   lua_pushboolean (L, pl_pass_args_bool (args, pp->name)); break;
        case PL_PARAM_STRING: lua_pushstring (L, pl_pass_args_string (args, pp->name)); break;
        }
      lua_setfield (L, -2, pp->name);
    }
}

/* The pass's results: changed [, report (a string or array of lines) [, counters {name = n}]]. */
static void
read_pass_results (lua_State *L, int first, PlPassReport *report)
{
  report->changed = lua_toboolean (L, first);
  int r = first + 1;
  if (lua_type (L, r) == LUA_TSTRING)
    pl_pass_report_printf (report, "%s", lua_tostring (L, r));
  else if (lua_istable (L, r))
    for (int i = 1; i <= (int) lua_rawlen (L, r); i++)
      {
        lua_rawgeti (L, r, i);
        if (lua_type (L, -1) == LUA_TSTRING || lua_type (L, -1) == LUA_TNUMBER)
          pl_pass_report_printf (report, "%s", lua_tostring (L, -1));
        lua_pop (L, 1);
      }
  int c = first + 2;
  if (lua_istable (L, c))
    for (lua_pushnil (L); lua_next (L, c); lua_pop (L, 1))
      if (lua_type (L, -2) == LUA_TSTRING && lua_isinteger (L, -1))
        pl_pass_report_count (report, lua_tostring (L, -2), lua_tointeger (L, -1));
}

static int
pass_call (lua_State *L)
{
  PassCall *c = lua_touserdata (L, 1);
  pl_lua_push_graph (L, PL_LUA_GRAPH_BORROWED, c->graph);  /* 2: closed (invalidated) on return or error */
  lua_toclose (L, 2);
  lua_rawgeti (L, LUA_REGISTRYINDEX, c->lp->func_ref);
  lua_pushvalue (L, 2);
  push_params (L, c->args);
  lua_call (L, 2, 3);
  read_pass_results (L, 3, c->report);
  return 0;
}

static bool
lua_pass_run (PlGraph *g, const PlPassArgs *args, PlPassReport *report, gpointer user_data, GError **error)
{
  PlLuaPass *lp = user_data;
  PlLua *pl = lp->owner;
  PassCall c = { lp, g, args, report };
  if (pl->closing)
    {
      g_set_error (error, PL_LUA_ERROR, PL_LUA_ERROR_RUNTIME, "the Lua state of pass %s is closing", lp->name);
      return false;
    }
  g_rec_mutex_lock (&pl->lock);
  pl->busy_pipelines++;
  bool ok = pl_lua_pcall (pl, pass_call, &c, lp->source, error);
  pl->busy_pipelines--;
  g_rec_mutex_unlock (&pl->lock);
  return ok;
}

/* The registry dropped the PlPass (replaced or unregistered). */
static void
lua_pass_dropped (gpointer user_data)
{
  PlLuaPass *lp = user_data;
  g_atomic_int_set (&lp->registered, 0);
}

static void
lua_pass_free (PlLuaPass *lp)
{
  g_free (lp->name);
  g_free (lp->source);
  g_free (lp);
}

/* Frees the passes of pl whose PlPass is gone (their functions go too). */
static void
sweep_passes (lua_State *L, PlLua *pl)
{
  for (guint i = 0; i < pl->passes->len;)
    {
      PlLuaPass *lp = pl->passes->pdata[i];
      if (g_atomic_int_get (&lp->registered))
        {
          i++;
          continue;
        }
      luaL_unref (L, LUA_REGISTRYINDEX, lp->func_ref);
      lua_pass_free (g_ptr_array_steal_index (pl->passes, i));
    }
}

void
pl_lua_passes_free (PlLua *pl)
{
  for (guint i = 0; i < pl->passes->len; i++)
    {
      PlLuaPass *lp = pl->passes->pdata[i];
      const PlPass *p = g_atomic_int_get (&lp->registered) ? pl_pass_find (lp->name) : NULL;
      if (p && p->user_data == lp)
        pl_pass_unregister (lp->name);
      lua_pass_free (lp);
    }
  g_ptr_array_free (pl->passes, TRUE);
  pl->passes = NULL;
}

static PlParamType
check_param_type (lua_State *L, const char *pass, const char *param)
{
  const char *t = lua_type (L, -1) == LUA_TSTRING ? lua_tostring (L, -1) : "";
  for (PlParamType type = PL_PARAM_INT; type <= PL_PARAM_STRING; type++)
    if (strcmp (t, pl_param_type_name (type)) == 0)
      return type;
  luaL_error (L, "register_pass %s: parameter '%s' needs a type: \"int\", \"float\", \"bool\" or \"string\"", pass,
              param);
  return PL_PARAM_STRING;
}

static void
free_params (gpointer p)
{
  GArray *a = p;
  for (guint i = 0; i < a->len; i++)
    {
      PlPassParam *pp = &g_array_index (a, PlPassParam, i);
      g_free (pp->name), g_free (pp->default_value), g_free (pp->description);
    }
  g_array_free (a, TRUE);
}

/* Reads register_pass's params array at idx into a boxed GArray of PlPassParam. */
static GArray *
check_params (lua_State *L, int idx, const char *pass)
{
  gpointer *slot = pl_lua_box (L, free_params);
  GArray *params = *slot = g_array_new (FALSE, TRUE, sizeof (PlPassParam));
  if (lua_isnil (L, idx))
    return params;
  if (!lua_istable (L, idx))
    luaL_error (L, "register_pass %s: 'params' must be an array of {name=, type=, default=, description=}", pass);
  for (int i = 1; i <= (int) lua_rawlen (L, idx); i++)
    {
      if (lua_rawgeti (L, idx, i) != LUA_TTABLE)
        luaL_error (L, "register_pass %s: parameter %d must be a table {name=, type=, default=, description=}",
                    pass, i);
      int t = lua_gettop (L);
      if (lua_getfield (L, t, "name") != LUA_TSTRING)
        luaL_error (L, "register_pass %s: parameter %d needs a name", pass, i);
      const char *name = lua_tostring (L, -1);
      for (guint k = 0; k < params->len; k++)
        if (strcmp (g_array_index (params, PlPassParam, k).name, name) == 0)
          luaL_error (L, "register_pass %s: parameter '%s' is declared twice", pass, name);
      lua_getfield (L, t, "type");
      PlParamType type = check_param_type (L, pass, name);
      lua_getfield (L, t, "default");
      char *def = lua_isnil (L, -1) ? g_strdup (type == PL_PARAM_BOOL ? "false"
                                                : type == PL_PARAM_STRING ? "" : "0")
                                    : pl_lua_param_text (L, -1);
      if (!def)
        luaL_error (L, "register_pass %s: the default of '%s' must be a number, string or boolean", pass, name);
      lua_getfield (L, t, "description");
      PlPassParam pp = { g_strdup (name), type, def, g_strdup (luaL_optstring (L, -1, "")) };
      g_array_append_val (params, pp);
      lua_settop (L, t - 1);
    }
  return params;
}

/* Checks the defaults parse as their types (with the pass manager's own parser). */
static void
check_defaults (lua_State *L, const PlPass *pass)
{
  gpointer *slot = pl_lua_box (L, (GDestroyNotify) pl_pass_args_free);
  PlPassArgs *args = *slot = pl_pass_args_new (pass);
  for (int i = 0; i < pass->n_params; i++)
    {
      GError *error = NULL;
      if (!pl_pass_args_set (args, pass->params[i].name, pass->params[i].default_value, &error))
        {
          g_prefix_error (&error, "register_pass: the default of ");
          pl_lua_raise_gerror (L, error);
        }
    }
  pl_pass_args_free (pl_lua_box_steal (L, -1));
  lua_pop (L, 1);
}

int
pl_lua_passlab_register_pass (lua_State *L)
{
  PlLua *pl = pl_lua_get (L);
  luaL_checktype (L, 1, LUA_TTABLE);
  lua_settop (L, 1);
  if (lua_getfield (L, 1, "name") != LUA_TSTRING || !*lua_tostring (L, 2))
    return luaL_error (L, "register_pass: 'name' (a string) is required");
  const char *name = lua_tostring (L, 2);
  int dtype = lua_getfield (L, 1, "description");
  if (dtype != LUA_TNIL && dtype != LUA_TSTRING)
    return luaL_error (L, "register_pass %s: 'description' must be a string", name);
  const char *description = dtype == LUA_TSTRING ? lua_tostring (L, 3) : "";
  if (lua_getfield (L, 1, "run") != LUA_TFUNCTION)                  /* 4 */
    return luaL_error (L, "register_pass %s: 'run' must be a function (g, params)", name);
  const PlPass *existing = pl_pass_find (name);
  if (existing && existing->builtin)
    return luaL_error (L, "register_pass: '%s' is a built-in pass and cannot be replaced", name);
  if (pl->busy_pipelines > 0)
    return luaL_error (L, "register_pass: passes cannot be registered while a pipeline runs");
  /* Pipelines and arguments left to the collector by errors point at
   * their passes: free them before a pass may be replaced. */
  lua_gc (L, LUA_GCCOLLECT);
  sweep_passes (L, pl);
  lua_getfield (L, 1, "params");
  GArray *params = check_params (L, 5, name);                       /* 6: box */

  gpointer *slot = pl_lua_box (L, (GDestroyNotify) pl_pass_free);   /* 7 */
  PlPass *pass = *slot = pl_pass_new (name, description, (PlPassParam *) params->data, (int) params->len,
                                      lua_pass_run, NULL, NULL);
  check_defaults (L, pass);
  lua_Debug ar;
  lua_pushvalue (L, 4);
  lua_getinfo (L, ">S", &ar);
  lua_pushvalue (L, 4);
  int ref = luaL_ref (L, LUA_REGISTRYINDEX);

  /* Nothing below raises. */
  PlLuaPass *lp = g_new0 (PlLuaPass, 1);
  lp->owner = pl;
  lp->name = g_strdup (name);
  lp->source = g_strdup (ar.source);
  lp->func_ref = ref;
  lp->registered = 1;
  g_ptr_array_add (pl->passes, lp);
  pass->user_data = lp;
  pass->destroy = lua_pass_dropped;
  pl_lua_box_steal (L, 7);
  GError *error = NULL;
  if (!pl_pass_register (pass, &error))
    pl_lua_raise_gerror (L, error);
  return 0;
}
