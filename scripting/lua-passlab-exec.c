/* lua-passlab-exec.c — tensors as Lua tables ({dtype=, shape=, data=}) and
 * passlab.exec: running a graph on given or random inputs with the
 * reference interpreter or the generated kernels. Everything C allocates
 * here lives in boxes, so an error in a script's arguments leaks nothing.
 */
#define G_LOG_DOMAIN "passlab"

#include "lua-private.h"

#include "interp.h"
#include "runtime.h"

/* --- tensors ------------------------------------------------------------------------------ */

void
pl_lua_push_tensor_data (lua_State *L, const PlTensor *t)
{
  lua_createtable (L, (int) MIN (t->numel, INT_MAX), 0);
  for (int64_t i = 0; i < t->numel; i++)
    {
      if (t->dtype == PL_DTYPE_BOOL)
        lua_pushboolean (L, pl_tensor_get_i64 (t, i) != 0);
      else if (pl_dtype_is_float (t->dtype))
        lua_pushnumber (L, pl_tensor_get_f64 (t, i));
      else
        lua_pushinteger (L, pl_tensor_get_i64 (t, i));
      lua_rawseti (L, -2, i + 1);
    }
}

void
pl_lua_push_tensor (lua_State *L, const PlTensor *t)
{
  lua_createtable (L, 0, 3);
  lua_pushstring (L, pl_dtype_name (t->dtype));
  lua_setfield (L, -2, "dtype");
  PlShape s = pl_tensor_shape (t);
  pl_lua_push_shape (L, &s);
  lua_setfield (L, -2, "shape");
  pl_lua_push_tensor_data (L, t);
  lua_setfield (L, -2, "data");
}

int
pl_lua_check_dims (lua_State *L, int idx, int64_t *dims, const char *what)
{
  idx = lua_absindex (L, idx);
  if (!lua_istable (L, idx))
    luaL_error (L, "%s: the shape must be an array of sizes, not a %s", what, luaL_typename (L, idx));
  lua_Unsigned rank = lua_rawlen (L, idx);
  if (rank > PL_MAX_RANK)
    luaL_error (L, "%s: rank %d is more than %d", what, (int) rank, PL_MAX_RANK);
  for (int i = 0; i < (int) rank; i++)
    {
      lua_rawgeti (L, idx, i + 1);
      int ok;
      lua_Integer d = lua_tointegerx (L, -1, &ok);
      lua_pop (L, 1);
      if (!ok || d < 0)
        luaL_error (L, "%s: dim %d of the shape is not a size (a non-negative integer)", what, i + 1);
      dims[i] = d;
    }
  return (int) rank;
}

void
pl_lua_fill_tensor (lua_State *L, int idx, PlTensor *t, const char *what)
{
  idx = lua_absindex (L, idx);
  if (lua_type (L, idx) == LUA_TNUMBER)
    {
      for (int64_t i = 0; i < t->numel; i++)
        pl_tensor_set_f64 (t, i, lua_tonumber (L, idx));
      return;
    }
  if (!lua_istable (L, idx))
    luaL_error (L, "%s: data must be a flat array of numbers, not a %s", what, luaL_typename (L, idx));
  if ((int64_t) lua_rawlen (L, idx) != t->numel)
    luaL_error (L, "%s: data has %d elements but the shape holds %d", what, (int) lua_rawlen (L, idx),
                (int) t->numel);
  bool is_float = pl_dtype_is_float (t->dtype);
  for (int64_t i = 0; i < t->numel; i++)
    {
      int type = lua_rawgeti (L, idx, i + 1);
      int ok = 0;
      if (type == LUA_TBOOLEAN)
        pl_tensor_set_i64 (t, i, lua_toboolean (L, -1)), ok = 1;
      else if (is_float)
        {
          lua_Number x = lua_tonumberx (L, -1, &ok);
          if (ok)
            pl_tensor_set_f64 (t, i, x);
        }
      else
        {
          lua_Integer x = lua_tointegerx (L, -1, &ok);
          if (ok)
            pl_tensor_set_i64 (t, i, x);
        }
      lua_pop (L, 1);
      if (!ok)
        luaL_error (L, "%s: element %d is not a%s", what, (int) i + 1, is_float ? " number" : "n integer");
    }
}

/* --- passlab.exec ----------------------------------------------------------------------------- */

typedef struct {
  PlTensor **t;
  int        n;
} TensorArray;

static void
tensor_array_free (gpointer p)
{
  TensorArray *a = p;
  for (int i = 0; i < a->n; i++)
    if (a->t[i])
      pl_tensor_unref (a->t[i]);
  g_free (a->t);
  g_free (a);
}

static TensorArray *
boxed_tensors (lua_State *L, int n)
{
  gpointer *slot = pl_lua_box (L, tensor_array_free);
  TensorArray *a = g_new0 (TensorArray, 1);
  a->t = n > 0 ? g_new0 (PlTensor *, n) : NULL;
  a->n = n;
  *slot = a;
  return a;
}

/* The tensor for graph input v from the Lua spec at idx: {shape=, data=} or a data array. */
static PlTensor *
input_tensor (lua_State *L, int idx, const PlValue *v, TensorArray *inputs, int slot)
{
  idx = lua_absindex (L, idx);
  int data = idx;
  int64_t dims[PL_MAX_RANK];
  int rank;
  const char *what = lua_pushfstring (L, "exec: input '%s'", v->name);
  if (lua_istable (L, idx) && lua_getfield (L, idx, "data") != LUA_TNIL)
    {
      data = lua_gettop (L);
      if (lua_getfield (L, idx, "shape") != LUA_TNIL)
        rank = pl_lua_check_dims (L, -1, dims, what);
      else if (pl_shape_get_dims (&v->shape, dims))
        rank = v->shape.rank;
      else
        return luaL_error (L, "%s has a symbolic shape: give its shape", what), NULL;
    }
  else if (pl_shape_get_dims (&v->shape, dims))
    rank = v->shape.rank;
  else
    return luaL_error (L, "%s has a symbolic shape: give {shape=, data=}", what), NULL;
  GError *error = NULL;
  PlTensor *t = inputs->t[slot] = pl_tensor_new (v->dtype, rank, dims, &error);
  if (!t)
    pl_lua_raise_gerror (L, error);
  pl_lua_fill_tensor (L, data, t, what);
  return t;
}

int
pl_lua_passlab_exec (lua_State *L)
{
  PlGraph *g = pl_lua_check_graph (L, 1);
  lua_settop (L, 2);
  int seed = 1;
  lua_Integer sym_size = 1, repeat = 1;
  PlBackend backend = PL_BACKEND_REFERENCE;
  bool has_inputs = false;
  if (!lua_isnil (L, 2))
    {
      luaL_checktype (L, 2, LUA_TTABLE);
      lua_getfield (L, 2, "backend");
      const char *name = luaL_optstring (L, -1, "reference");
      if (!pl_backend_from_name (name, &backend))
        return luaL_error (L, "exec: unknown backend '%s' (reference, cpu or cuda)", name);
      lua_getfield (L, 2, "runs");
      repeat = luaL_optinteger (L, -1, 1);
      if (repeat < 1 || repeat > 100000)
        return luaL_error (L, "exec: 'runs' takes 1 to 100000");
      lua_getfield (L, 2, "random_seed");
      seed = (int) luaL_optinteger (L, -1, 1);
      lua_getfield (L, 2, "sym_size");
      sym_size = luaL_optinteger (L, -1, 1);
      has_inputs = lua_getfield (L, 2, "inputs") != LUA_TNIL;
      if (has_inputs && !lua_istable (L, -1))
        return luaL_error (L, "exec: 'inputs' must be a table {name = {shape=, data=}}");
      lua_replace (L, 3);
      lua_settop (L, 3);
    }
  if (has_inputs)
    for (lua_pushnil (L); lua_next (L, 3); lua_pop (L, 1))
      {
        PlValue *v = lua_type (L, -2) == LUA_TSTRING ? pl_graph_find_value (g, lua_tostring (L, -2)) : NULL;
        if (!v || !v->is_input)
          return luaL_error (L, "exec: the graph has no input '%s'", luaL_tolstring (L, -2, NULL));
      }

  int n = (int) g->inputs->len;
  TensorArray *inputs = boxed_tensors (L, n);
  TensorArray *random = boxed_tensors (L, 0);  /* filled when an input is not given */
  int top = lua_gettop (L);
  GError *error = NULL;
  for (int i = 0; i < n; i++, lua_settop (L, top))
    {
      const PlValue *v = g->inputs->pdata[i];
      if (has_inputs && lua_getfield (L, 3, v->name) != LUA_TNIL)
        {
          input_tensor (L, -1, v, inputs, i);
          continue;
        }
      if (!random->t)
        {
          random->t = pl_random_inputs (g, (guint32) seed, sym_size, &error);
          if (!random->t)
            pl_lua_raise_gerror (L, error);
          random->n = n;
        }
      inputs->t[i] = pl_tensor_ref (random->t[i]);
    }

  TensorArray *outputs = boxed_tensors (L, 0);
  double ms = 0;
  int kernels = 0;
  if (backend == PL_BACKEND_REFERENCE)
    {
      gint64 t0 = g_get_monotonic_time ();
      outputs->t = pl_interp_run (g, inputs->t, NULL, &error);
      ms = (double) (g_get_monotonic_time () - t0) / 1000.0;
    }
  else
    {
      /* generated kernels: compiled once, run `repeat` times after a warm-up */
      PlCompileOptions copt;
      pl_compile_options_init (&copt, backend);
      PlExecutable *e = pl_executable_new (g, &copt, &error);
      PlRunReport *rep = NULL;
      if (e)
        outputs->t = pl_executable_run (e, inputs->t, (int) repeat, &rep, &error);
      if (rep)
        {
          ms = rep->total_ms;
          kernels = rep->n_kernels;
          pl_run_report_free (rep);
        }
      if (e)
        pl_executable_free (e);
    }
  if (!outputs->t)
    pl_lua_raise_gerror (L, error);
  outputs->n = (int) g->outputs->len;
  lua_createtable (L, 0, outputs->n);
  for (int i = 0; i < outputs->n; i++)
    {
      pl_lua_push_tensor (L, outputs->t[i]);
      lua_setfield (L, -2, ((PlValue *) g->outputs->pdata[i])->name);
    }
  /* what ran: {backend=, ms= (median over the repeats), kernels=} */
  lua_createtable (L, 0, 3);
  lua_pushstring (L, pl_backend_name (backend));
  lua_setfield (L, -2, "backend");
  lua_pushnumber (L, ms);
  lua_setfield (L, -2, "ms");
  lua_pushinteger (L, kernels);
  lua_setfield (L, -2, "kernels");
  return 2;
}
