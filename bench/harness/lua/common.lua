-- Shared by the benchmark's wrk scripts: configuration from the environment, id files,
-- and one JSON line of results that bench/harness/loadgen.py reads back.
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
local threads = {}
function M.setup(thread)
  thread:set("thread_number", #threads)
  threads[#threads + 1] = thread
end

-- Scripts that count statuses (response() in their thread) keep them in the global
-- `statuses` ("code=count,…" in `status_text`); done() adds them up.
function M.count_status(status)
  statuses = statuses or {}
  statuses[status] = (statuses[status] or 0) + 1
  local parts = {}
  for code, count in pairs(statuses) do parts[#parts + 1] = code .. "=" .. count end
  status_text = table.concat(parts, ",")
end

local function statuses_json()
  local total = {}
  for _, thread in ipairs(threads) do
    local text = thread:get("status_text")
    if text ~= nil then
      for code, count in string.gmatch(text, "(%d+)=(%d+)") do
        total[code] = (total[code] or 0) + tonumber(count)
      end
    end
  end
  local parts = {}
  for code, count in pairs(total) do parts[#parts + 1] = '"' .. code .. '": ' .. count end
  return "{" .. table.concat(parts, ", ") .. "}"
end

function M.done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    'BENCH_RESULT {"requests": %d, "duration_us": %d, "bytes": %d, ' ..
    '"errors": {"connect": %d, "read": %d, "write": %d, "status": %d, "timeout": %d}, ' ..
    '"latency_us": {"p50": %d, "p90": %d, "p99": %d, "mean": %.1f, "max": %d}, ' ..
    '"statuses": %s}\n',
    summary.requests, summary.duration, summary.bytes,
    e.connect, e.read, e.write, e.status, e.timeout,
    latency:percentile(50), latency:percentile(90), latency:percentile(99),
    latency.mean, latency.max, statuses_json()))
end

return M
