-- The learners' writes, as members of their own teams, over BENCH_IDS ("team task token"
-- a line: bench/harness/learners.py), by BENCH_LEARNER:
--   wrong  POST /team/{team}/attempts with a wrong answer;
--   right  POST /team/{team}/attempts with the right answer, then (next request) the
--          admin's DELETE /team/{team}/progress/{task} (BENCH_TOKEN) that lets it be
--          answered again, alternating as progress.lua does: a pair is withdrawn only
--          once the answer to its completion came back;
--   hint   POST /team/{team}/hints {"Index": 0}: each line once (a first unlock).
-- Each thread takes every n-th line; BENCH_OFFSET starts the measured run on lines the
-- warm-up did not touch.
package.path = os.getenv("BENCH_LUA_DIR") .. "/?.lua;" .. package.path
local common = require("common")

local lines_ = {}
local admin = nil
local mode = nil
local answer = nil
local next_line = tonumber(common.env("BENCH_OFFSET", "0"))
local ready, ready_first, ready_last = {}, 1, 0
local withdraw_turn = false

setup = common.setup
done = common.done

function init(args)
  local threads = tonumber(common.env("BENCH_THREADS", "1"))
  local mine = thread_number or 0
  for i, line in ipairs(common.lines(common.env("BENCH_IDS"))) do
    if (i - 1) % threads == mine then
      local team, task, token = string.match(line, "(%S+)%s+(%S+)%s+(%S+)")
      lines_[#lines_ + 1] = {team, task, "Bearer " .. token}
    end
  end
  admin = common.headers()
  mode = common.env("BENCH_LEARNER")
  answer = mode == "right" and common.env("BENCH_RIGHT") or common.env("BENCH_WRONG")
end

local function as_member(line)
  return {
    ["Authorization"] = line[3],
    ["Accept"] = "application/json",
    ["Content-Type"] = "application/json",
  }
end

function request()
  if mode == "right" then
    withdraw_turn = not withdraw_turn
    if withdraw_turn and ready_first <= ready_last then
      local p = ready[ready_first]
      ready[ready_first] = nil
      ready_first = ready_first + 1
      return wrk.format("DELETE", "/team/" .. p[1] .. "/progress/" .. p[2], admin)
    end
  end
  local line = lines_[(next_line % #lines_) + 1]
  next_line = next_line + 1
  if mode == "hint" then
    local body = '{"TaskId": "' .. line[2] .. '", "Index": 0}'
    return wrk.format("POST", "/team/" .. line[1] .. "/hints", as_member(line), body)
  end
  local body = '{"TaskId": "' .. line[2] .. '", "Answer": "' .. answer .. '"}'
  return wrk.format("POST", "/team/" .. line[1] .. "/attempts", as_member(line), body)
end

function response(status, headers, body)
  common.count_status(status)
  if mode == "right" and status == 201 then
    local team = string.match(body, '"TeamId"%s*:%s*"([^"]+)"')
    local task = string.match(body, '"TaskId"%s*:%s*"([^"]+)"')
    if team ~= nil and task ~= nil then
      ready_last = ready_last + 1
      ready[ready_last] = {team, task}
    end
  end
end
