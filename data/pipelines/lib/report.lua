-- report.lua — what the sample scripts share: finding the sample graphs and
-- printing histories and sizes the way people read them.
--   local report = require "report"   (the samples add lib/ to package.path)
local report = {}

-- The folder of the running script (arg[0]), without a trailing slash.
function report.here ()
  return (arg and arg[0] and arg[0]:match ("^(.*)/[^/]*$")) or "."
end

-- The path of a sample graph in data/graphs/.
function report.graph (name)
  local here = report.here ()
  local data = here:match ("^(.*)/pipelines$")
  return (data or (here .. "/..")) .. "/graphs/" .. name
end

-- "12.3 MiB" style sizes.
function report.bytes (b)
  local units = { "B", "KiB", "MiB", "GiB", "TiB" }
  local u = 1
  while b >= 1024 and u < #units do b, u = b / 1024, u + 1 end
  return u == 1 and string.format ("%d B", b) or string.format ("%.1f %s", b, units[u])
end

local dtype_bytes = { f64 = 8, i64 = 8, u64 = 8, f32 = 4, i32 = 4, u32 = 4, f16 = 2, bf16 = 2, i16 = 2, u16 = 2 }

-- The bytes of a value with a static shape (nil when a dim is symbolic).
function report.value_bytes (v)
  local n = dtype_bytes[v.dtype] or 1
  for _, d in ipairs (v.shape or {}) do
    if math.type (d) ~= "integer" then return nil end
    n = n * d
  end
  return n
end

-- One row per step: pass, changed, nodes, kernels, reshape bytes, bytes moved, check.
function report.history (h)
  print (string.format ("%-4s %-16s %-7s %6s %7s %11s %11s %10s", "step", "pass", "changed", "nodes", "kernels",
                        "reshape", "moved", "max error"))
  for i = 0, #h do
    local s = h[i]
    local err = "-"
    if s.checked then err = string.format ("%.2g%s", s.max_rel_error, s.check_failed and " !" or "") end
    print (string.format ("%-4d %-16s %-7s %6d %7d %11s %11s %10s", i, s.pass or "(input)",
                          i == 0 and "" or (s.changed and "yes" or "no"), s.stats.nodes, s.stats.kernels,
                          report.bytes (s.stats.reshape_bytes), report.bytes (s.stats.bytes_moved), err))
  end
  if h.error then print ("stopped: " .. h.error) end
end

-- Prints text indented, skipping empty lines.
function report.indent (text, prefix)
  for line in tostring (text):gmatch ("[^\n]+") do print ((prefix or "    ") .. line) end
end

return report
