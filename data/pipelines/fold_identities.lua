-- fold_identities.lua — a pass written in Lua: fold x * 1 and x + 0 (either
-- operand order). It is registered like a built-in pass, so it is listed by
-- `passlab.passes()`, usable in pipelines, checked numerically, and after it
-- returns the pass manager's verifier checks the graph it left.
--
-- A fold is only sound when the result has x's own shape and type: x * 1
-- where the 1 is bigger than x broadcasts x, and is kept.
--   passlab-cli lua data/pipelines/fold_identities.lua
local passlab = require "passlab"

-- True when v is a constant whose elements all equal x.
local function all_equal (v, x)
  local data = v.is_constant and v.data
  if not data then return false end
  for _, d in ipairs (data) do
    if d ~= x then return false end
  end
  return true
end

local identity = { Mul = 1, Add = 0 }

passlab.register_pass {
  name = "fold-identities",
  description = "folds x * 1 and x + 0 (written in Lua)",
  run = function (g, params)
    local lines, folded = {}, 0
    for n in g:nodes () do
      local e = identity[n.op]
      local a, b = n.inputs[1], n.inputs[2]
      local out = n.outputs[1]
      -- the operand that stays, if the other one is the identity
      local keep = (e and all_equal (b, e) and a) or (e and all_equal (a, e) and b)
      if keep and keep.dtype == out.dtype and table.concat (keep.shape, ",") == table.concat (out.shape, ",") then
        lines[#lines + 1] = string.format ("folded %s = %s %s %g", out.name, keep.name, n.op == "Mul" and "*" or "+", e)
        g:replace_uses (out, keep)
        g:remove_node (n)  -- n is invalid from here on
        folded = folded + 1
      end
    end
    g:dce ()  -- drops the 1s and 0s nobody reads any more
    lines[#lines + 1] = string.format ("%d identities folded", folded)
    return folded > 0, lines, { folded = folded }
  end,
}

local g = passlab.parse ([[
graph identities opset 17 {
  input x: f32[4, 8]
  const one: f32[] = 1.0
  const zero: f32[8] = fill(0.0)
  const ones_wide: f32[2, 1, 8] = fill(1.0)
  const w: f32[8] = random(seed=1)
  scaled = Mul(x, one)          # x * 1 -> x
  shifted = Add(zero, scaled)   # 0 + x -> x
  weighted = Mul(shifted, w)    # a real multiplication: kept
  widened = Mul(weighted, ones_wide)  # broadcasts to [2, 4, 8]: kept
  out = Add(widened, zero)      # -> widened
  output out
}
]], "identities.graph")

local h = passlab.run (g, { "fold-identities" }, { check = true, seed = 1 })
assert (not h.error, h.error)
local before, after, step = h[0].graph, h[1].graph, h[1]

print ("before:")
print (before:text ())
print ("report:")
print (step.report)
print (string.format ("nodes %d -> %d, max relative error %.3g (%s)", h[0].stats.nodes,
                      step.stats.nodes, step.max_rel_error, step.check_failed and "FAILED" or "ok"))

-- The diff by node id: removed nodes, and nodes whose inputs changed.
print ("\ndiff:")
for _, id in ipairs (step.diff.removed) do
  local n = before:node (id)
  print (string.format ("  - %s = %s(%s, %s)", n.name, n.op, n.inputs[1].name, n.inputs[2].name))
end
for _, id in ipairs (step.diff.changed) do
  local b, a = before:node (id), after:node (id)
  local function args (n)
    local names = {}
    for i, v in ipairs (n.inputs) do names[i] = v and v.name or "_" end
    return table.concat (names, ", ")
  end
  print (string.format ("  ~ %s = %s(%s)  ->  %s(%s)", a.name, b.op, args (b), a.op, args (a)))
end
for i, v in ipairs (after:outputs ()) do
  local old = before:outputs ()[i]
  if old.name ~= v.name then print (string.format ("  ~ output %d: %s -> %s", i, old.name, v.name)) end
end
print ("\nafter:")
print (after:text ())
