-- teach_reshape_sink.lua — reshape sinking (seed 000), shown on group
-- normalization.
--
-- On hardware whose memory is organized in vectors (TPUs, and GPUs for
-- tensors whose minor dimension changes), a Reshape is not free: it is a
-- copy that moves the whole tensor. Group norm written the natural way
-- reshapes the whole image twice: once to split channels into groups for the
-- statistics, once to bring the normalized result back. The reshape-sink
-- pass moves reshapes below reductions (reduce over H and W first, then
-- reshape the small partial sums) and past elementwise ops (normalize the
-- image in its own shape, broadcasting statistics that were reshaped
-- instead), so only small tensors are reshaped.
--   passlab-cli lua data/pipelines/teach_reshape_sink.lua [GRAPH]
package.path = (arg and arg[0]:match ("^(.*)/[^/]*$") or ".") .. "/lib/?.lua;" .. package.path
local passlab = require "passlab"
local report = require "report"

-- Prints every Reshape/Flatten of g with what it moves; returns the total.
local function list_reshapes (g)
  local total = 0
  for n in g:nodes () do
    if n.op == "Reshape" or n.op == "Flatten" then
      local src, dst = n.inputs[1], n.outputs[1]
      local b = report.value_bytes (dst) or 0
      total = total + b
      print (string.format ("    %-18s %-18s -> %-18s %10s", n.name, "[" .. table.concat (src.shape, ", ") .. "]",
                            "[" .. table.concat (dst.shape, ", ") .. "]", report.bytes (b)))
    end
  end
  return total
end

local path = arg and arg[1] or report.graph ("group_norm.graph")
local g = passlab.load (path)
print (string.format ("%s (%d nodes)\n", path, #g))

local h = passlab.run (g, { "simplify", "reshape-sink" }, { check = true })
assert (not h.error, h.error)
local before, after = h[0], h[#h]

print ("Reshapes before (each one copies its tensor):")
local total_before = list_reshapes (before.graph)
print ("\nReshapes after reshape-sink:")
local total_after = list_reshapes (after.graph)

print (string.format ([[

reshape bytes   %10s -> %10s   (the cost model's count: %s -> %s)
bytes moved     %10s -> %10s   (every kernel's reads and writes)
nodes           %10d -> %10d
kernels         %10d -> %10d
numerical check: worst relative error %.2g (%s)]],
  report.bytes (total_before), report.bytes (total_after),
  report.bytes (before.stats.reshape_bytes), report.bytes (after.stats.reshape_bytes),
  report.bytes (before.stats.bytes_moved), report.bytes (after.stats.bytes_moved),
  before.stats.nodes, after.stats.nodes, before.stats.kernels, after.stats.kernels,
  after.max_rel_error or 0, after.check_failed and "FAILED" or "same results"))

print ("\nWhat the pass did:")
report.indent (after.report)
print ([[

Why it is the same computation: a reduction over the grouped axes [H, W,
C/G] can be split into a reduction over H and W (on the image as it is)
followed by a reduction over C/G (on the small [B, C] partial sums, after
reshaping them to [B, C/G, G]). And subtracting a per-group mean from the
grouped image, then reshaping back, is the same as subtracting the mean,
broadcast to the channels of each group, from the image directly. Only the
statistics, a few hundred bytes, are reshaped.

The price is a few more small nodes (partial reductions and reshapes of
the statistics), which is why the node and kernel counts can rise while
the bytes that reshapes and kernels move fall.]])
