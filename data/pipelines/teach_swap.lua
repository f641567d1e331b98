-- teach_swap.lua — swapping (seed 004, IBM Large Model Support) shown on a
-- training step.
--
-- A training step keeps the forward pass's activations until the backward
-- pass reads them, long after they were made: they wait in device memory and
-- set its peak. The swap pass finds such tensors by timing analysis (how
-- long each waits between its uses), copies them to host memory right after
-- they are made, and copies them back just early enough for their next use
-- (a prefetch edge), so the copies overlap computation. A memory budget
-- makes it move as few tensors as are needed to fit.
--   passlab-cli lua data/pipelines/teach_swap.lua
package.path = (arg and arg[0]:match ("^(.*)/[^/]*$") or ".") .. "/lib/?.lua;" .. package.path
local passlab = require "passlab"
local report = require "report"

-- The forward MLP becomes a training step: forward, backward, SGD update.
local g = passlab.load (report.graph ("gelu_mlp.graph"))
local train = passlab.run (g, { "grad" })
assert (not train.error, train.error)
local step = train[1]
print (string.format ("training step of gelu_mlp: %d nodes, device peak %s\n", step.stats.nodes,
                      report.bytes (step.stats.peak_bytes)))

-- Without a budget: every tensor that waits long enough moves.
local h = passlab.run (step.graph, { "swap" }, { check = true })
assert (not h.error, h.error)
print (string.format ("swap, no budget: peak %s -> %s (max relative error %.2g)", report.bytes (h[0].stats.peak_bytes),
                      report.bytes (h[1].stats.peak_bytes), h[1].max_rel_error or 0))
report.indent (h[1].report)

-- With a budget of 80% of the peak: the fewest tensors that fit.
local budget = math.floor (step.stats.peak_bytes * 0.8)
local hb = passlab.run (step.graph, { { "swap", budget = tostring (budget) } }, { check = true })
assert (not hb.error, hb.error)
print (string.format ("\nswap, budget %s: peak %s -> %s", report.bytes (budget), report.bytes (hb[0].stats.peak_bytes),
                      report.bytes (hb[1].stats.peak_bytes)))
report.indent (hb[1].report)

-- What was inserted: the copies out and back, and the control edges that time them.
print ("\ninserted nodes:")
for n in hb[1].graph:nodes () do
  if n.op:find ("^Swap") or n.op:find ("Fp16$") then
    print (string.format ("    %-28s %-16s %s", n.name, n.op, report.bytes (report.value_bytes (n.inputs[1]) or 0)))
  end
end
