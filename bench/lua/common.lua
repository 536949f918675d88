-- Shared by the benchmark's wrk scripts: configuration from the environment, id files,
-- and one JSON line of results that bench/run.py reads back.
local M = {}

function M.env(name, default)
  local value = os.getenv(name)
  if value == nil or value == "" then
    if default == nil then error("bench: " .. name .. " is not set") end
    return default
  end
  return value
end

function M.lines(path)
  local out = {}
  for line in io.lines(path) do
    if line ~= "" then out[#out + 1] = line end
  end
  return out
end

function M.headers()
  return {
    ["Authorization"] = "Bearer " .. M.env("BENCH_TOKEN"),
    ["Accept"] = "application/json",
  }
end

-- Each thread's Lua state gets its own number (setup runs in the main state).
local next_thread = 0
function M.setup(thread)
  thread:set("thread_number", next_thread)
  next_thread = next_thread + 1
end

function M.done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    'BENCH_RESULT {"requests": %d, "duration_us": %d, "bytes": %d, ' ..
    '"errors": {"connect": %d, "read": %d, "write": %d, "status": %d, "timeout": %d}, ' ..
    '"latency_us": {"p50": %d, "p90": %d, "p99": %d, "mean": %.1f, "max": %d}}\n',
    summary.requests, summary.duration, summary.bytes,
    e.connect, e.read, e.write, e.status, e.timeout,
    latency:percentile(50), latency:percentile(90), latency:percentile(99),
    latency.mean, latency.max))
end

return M
