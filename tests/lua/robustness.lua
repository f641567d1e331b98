-- robustness.lua — every function of the API called with arguments of every
-- wrong kind (and some right ones), on live, closed and borrowed-then-
-- invalidated handles: each call must either work or raise a Lua error with
-- a message; none may crash the process or leave a graph that does not
-- verify. Driven by test-lua.c.
local passlab = require "passlab"

local text = [[
graph r opset 17 {
  input x: f32[2, 3]
  const one: f32[] = 1.0
  const axes: i64[1] = [1]
  a = Mul(x, one)
  s = ReduceSum(a, axes) {keepdims=0}
  output s
}
]]

local calls, errors = 0, 0
local function try (f, ...)
  calls = calls + 1
  local ok, msg = pcall (f, ...)
  if not ok then
    errors = errors + 1
    assert (type (msg) == "string" and #msg > 0, "an error without a message")
  end
end

local function samples (g)
  return { n = 11, nil, 0, -1, 2 ^ 40, 1.5, "x", "", {}, { 1, "a" }, true, print,
           g, g:node ("a"), g:value ("x"), g:value ("axes") }
end

local graph_methods = { "nodes", "node", "value", "inputs", "outputs", "text", "copy", "verify", "stats",
                        "add_node", "add_const", "replace_uses", "remove_node", "set_output", "dce" }

-- Graph methods, with one and two arguments of every kind, on a fresh copy each time.
local base = passlab.parse (text)
for _, m in ipairs (graph_methods) do
  local args = samples (base)
  for i = 1, #args + 4 do
    for j = 1, 4 do
      local g = base:copy ()
      local a, b = samples (g), samples (g)
      try (g[m], g, a[i], b[j])
      try (g[m], a[i], b[j])
      assert (g:verify ())
    end
  end
end

-- add_node and add_const with odd tables.
local g = base:copy ()
local x = g:value ("x")
for _, spec in ipairs {
  { op = "Relu" }, { op = "Relu", inputs = x }, { op = "Relu", inputs = { x, x, x, x } },
  { op = "Relu", inputs = { x }, outputs = 0 }, { op = "Relu", inputs = { x }, outputs = 1e9 },
  { op = "Relu", inputs = { x }, outputs = "2" }, { op = 5, inputs = { x } },
  { op = "NoSuchOp", inputs = { x } }, { op = "Relu", inputs = { x }, attrs = { 1, 2 } },
  { op = "Relu", inputs = { x }, attrs = { a = { {} } } }, { op = "Relu", inputs = { x }, name = {} },
  { op = "Reshape", inputs = { x, g:value ("axes") } }, { op = "Concat", inputs = { x, x } },
  { op = "Relu", inputs = { false } }, { op = "Add", inputs = { x, false } },
} do
  try (g.add_node, g, spec)
end
for _, args in ipairs {
  { "c", "f32", { -1 }, 1 }, { "c", "f32", { 1, 2, 3, 4, 5, 6, 7, 8, 9 }, 1 }, { "c", "f32", { 2 ^ 31, 2 ^ 31 }, 1 },
  { "c", "bool", { 2 }, { true, false } }, { "c", "i8", { 2 }, { 1000, -1000 } }, { "c", "f32", {}, "x" },
  { "c", "f32", { 0 }, {} }, { "", "f32", { 1 }, 1 },
} do
  try (g.add_const, g, table.unpack (args))
end
assert (g:verify ())

-- Node and value fields and set_attr with every kind of value.
local n, v = g:node ("s"), g:value ("a")
for _, key in ipairs { "id", "name", "op", "domain", "attrs", "inputs", "outputs", "graph", "nope", 1, true } do
  try (function () return n[key] end)
  try (function () return v[key] end)
end
for _, key in ipairs { "shape", "dtype", "producer", "users", "is_input", "is_constant", "is_output", "data" } do
  try (function () return v[key] end)
end
for _, val in ipairs (samples (g)) do
  try (n.set_attr, n, "keepdims", val)
  try (n.set_attr, n, val, 1)
  try (n.set_attr, v, "k", val)
end
assert (g:verify ())

-- Handles after their graph is gone.
local dead = base:copy ()
local dn, dv = dead:node ("a"), dead:value ("x")
do local _ <close> = dead end
for _, m in ipairs (graph_methods) do try (dead[m], dead, "a") end
try (function () return dn.op end)
try (function () return dv.shape end)
try (dn.set_attr, dn, "k", 1)
try (function () return tostring (dn) .. tostring (dv) .. tostring (dead) end)

-- passlab functions with wrong arguments.
for _, f in ipairs { "load", "parse", "passes", "run", "register_pass", "exec", "check", "diff" } do
  local args = samples (base)
  for i = 1, #args + 4 do
    try (passlab[f], args[i])
    try (passlab[f], base, args[i])
    try (passlab[f], base, { "simplify" }, args[i])
  end
end
try (passlab.exec, base, { inputs = { x = { shape = { 2 ^ 40 }, data = {} } } })
try (passlab.exec, base, { inputs = { x = { shape = { 3, 2 }, data = { 1, 2, 3, 4, 5, 6 } } } })
try (passlab.exec, base, { inputs = { x = { shape = "x", data = 1 } } })

assert (calls > 1000, "calls: " .. calls)
assert (errors > 500, "errors: " .. errors)
print (string.format ("%d calls, %d raised an error", calls, errors))
print ("robustness ok")
