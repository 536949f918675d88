-- POST /team/{team}/progress {"TaskId": task} (complete), then
-- DELETE /team/{team}/progress/{task} (withdraw), alternating, over the (team, task)
-- pairs of BENCH_IDS ("team task" a line) that no team has completed. A withdrawal
-- trails its completion by BENCH_LAG requests, so that it never overtakes it on
-- another connection. Each thread takes every n-th pair: threads never share one.
-- BENCH_OFFSET starts the measured run on pairs the warm-up did not touch (a request
-- of the warm-up may still be in flight when the measured run starts).
package.path = os.getenv("BENCH_LUA_DIR") .. "/?.lua;" .. package.path
local common = require("common")

local lag = tonumber(common.env("BENCH_LAG", "64"))
local pairs_ = {}
local headers = nil
local offset = tonumber(common.env("BENCH_OFFSET", "0"))
local completed, withdrawn = offset, offset

setup = common.setup
done = common.done

function response(status, headers, body)
  common.count_status(status)
end

function init(args)
  local threads = tonumber(common.env("BENCH_THREADS", "1"))
  local mine = thread_number or 0
  for i, line in ipairs(common.lines(common.env("BENCH_IDS"))) do
    if (i - 1) % threads == mine then
      local team, task = string.match(line, "(%S+)%s+(%S+)")
      pairs_[#pairs_ + 1] = {team, task}
    end
  end
  if #pairs_ < 4 * lag then error("bench: too few progress pairs for the lag") end
  headers = common.headers()
end

local function pair(n)
  return pairs_[(n % #pairs_) + 1]
end

function request()
  if completed - withdrawn >= lag then
    local p = pair(withdrawn)
    withdrawn = withdrawn + 1
    return wrk.format("DELETE", "/team/" .. p[1] .. "/progress/" .. p[2], headers)
  end
  local p = pair(completed)
  completed = completed + 1
  local h = {}
  for k, v in pairs(headers) do h[k] = v end
  h["Content-Type"] = "application/json"
  return wrk.format("POST", "/team/" .. p[1] .. "/progress", h, '{"TaskId": "' .. p[2] .. '"}')
end
