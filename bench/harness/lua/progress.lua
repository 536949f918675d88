-- POST /team/{team}/progress {"TaskId": task} (complete), then
-- DELETE /team/{team}/progress/{task} (withdraw), alternating, over the (team, task)
-- pairs of BENCH_IDS ("team task" a line) that no team has completed. A pair is
-- withdrawn only once the answer to its completion came back (read from the answer's
-- TeamId and TaskId), so that a withdrawal never overtakes its completion on another
-- connection (SQLite's writers do not queue in order). Each thread takes every n-th
-- pair: threads never share one. BENCH_OFFSET starts the measured run on pairs the
-- warm-up did not touch.
package.path = os.getenv("BENCH_LUA_DIR") .. "/?.lua;" .. package.path
local common = require("common")

local pairs_ = {}
local headers, post_headers = nil, nil
local next_pair = tonumber(common.env("BENCH_OFFSET", "0"))
local ready, ready_first, ready_last = {}, 1, 0
local withdraw_turn = false
-- BENCH_READ_AFTER: a path read right after every write on the same connection (the
-- read model's cold path: the write changed the organization's version).
local read_after = os.getenv("BENCH_READ_AFTER")
if read_after == "" then read_after = nil end
-- BENCH_READS_PER_WRITE: how many reads of BENCH_READ_AFTER follow each write (1).
local reads_per_write = tonumber(os.getenv("BENCH_READS_PER_WRITE") or "1") or 1
local reads_left = 0

setup = common.setup
done = common.done

function init(args)
  local threads = tonumber(common.env("BENCH_THREADS", "1"))
  local mine = thread_number or 0
  for i, line in ipairs(common.lines(common.env("BENCH_IDS"))) do
    if (i - 1) % threads == mine then
      local team, task = string.match(line, "(%S+)%s+(%S+)")
      pairs_[#pairs_ + 1] = {team, task}
    end
  end
  headers = common.headers()
  post_headers = common.headers()
  post_headers["Content-Type"] = "application/json"
end

function request()
  if read_after ~= nil then
    if reads_left > 0 then
      reads_left = reads_left - 1
      return wrk.format("GET", read_after, headers)
    end
    reads_left = reads_per_write
  end
  withdraw_turn = not withdraw_turn
  if withdraw_turn and ready_first <= ready_last then
    local p = ready[ready_first]
    ready[ready_first] = nil
    ready_first = ready_first + 1
    return wrk.format("DELETE", "/team/" .. p[1] .. "/progress/" .. p[2], headers)
  end
  local p = pairs_[(next_pair % #pairs_) + 1]
  next_pair = next_pair + 1
  local body = '{"TaskId": "' .. p[2] .. '"}'
  return wrk.format("POST", "/team/" .. p[1] .. "/progress", post_headers, body)
end

function response(status, headers, body)
  common.count_status(status)
  if status == 200 or status == 201 then
    local team = string.match(body, '"TeamId"%s*:%s*"([^"]+)"')
    local task = string.match(body, '"TaskId"%s*:%s*"([^"]+)"')
    if team ~= nil and task ~= nil then
      ready_last = ready_last + 1
      ready[ready_last] = {team, task}
    end
  end
end
