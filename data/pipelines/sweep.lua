-- sweep.lua — a parameter sweep: how the fusion budget (fuse-loops max_ops,
-- the most nodes one fused kernel may hold) trades kernels against memory
-- traffic. Small budgets cut chains into many kernels that each write their
-- result to memory and read it back; past the longest chain, a bigger budget
-- changes nothing.
--   passlab-cli lua data/pipelines/sweep.lua [GRAPH]
package.path = (arg and arg[0]:match ("^(.*)/[^/]*$") or ".") .. "/lib/?.lua;" .. package.path
local passlab = require "passlab"
local report = require "report"

local path = arg and arg[1] or report.graph ("gelu_mlp.graph")
local g = passlab.load (path)
local base = passlab.run (g, { "simplify", "decompose" })
local start = base[#base].stats
print (string.format ("%s: before fusion %d kernels, %s moved\n", path, start.kernels, report.bytes (start.bytes_moved)))

print (string.format ("%8s %8s %12s %10s", "max_ops", "kernels", "moved", "vs unfused"))
local previous
for _, max_ops in ipairs { 1, 2, 3, 4, 6, 8, 12, 16, 32 } do
  local h = passlab.run (g, { "simplify", "decompose", { "fuse-loops", max_ops = max_ops } })
  local s = h[#h].stats
  local note = previous and s.kernels == previous.kernels and s.bytes_moved == previous.bytes_moved
               and "  (no change)" or ""
  print (string.format ("%8d %8d %12s %9.0f%%%s", max_ops, s.kernels, report.bytes (s.bytes_moved),
                        100 * s.bytes_moved / start.bytes_moved, note))
  previous = s
end
