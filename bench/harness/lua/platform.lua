-- Mixed traffic over many organizations (bench.platform): each request picks an
-- organization from a Zipf law (exponent BENCH_ZIPF_S, rank 0 the most requested) and
-- uses that organization's own token: 85 % reads (the leaderboard's top 50, a team's
-- overview, a team, the graph, a discipline, GET /team?limit=100, a sixth each), 10 %
-- progress writes (a completion of a task the seed left free, then its withdrawal once
-- the completion answered), 5 % team and member writes (a new team, a new member).
--
-- BENCH_ORGS: one line an organization, by rank: "member_token admin_token first size"
-- (its teams are numbers first … first+size-1 of the dataset's rules). Ids are computed
-- as bench/dataset/sqlgen.py's ident() does.
package.path = os.getenv("BENCH_LUA_DIR") .. "/?.lua;" .. package.path
local common = require("common")

local EPOCH_MS = tonumber(common.env("BENCH_EPOCH_MS"))
local ZIPF_S = tonumber(common.env("BENCH_ZIPF_S", "1.1"))
local run = common.env("BENCH_RUN")
local KIND_TEAM, KIND_DISCIPLINE, KIND_TASK = 1, 10, 13
local TASKS, START_STRIDE, STEP, DONE = 54, 7, 5, 20
local DISCIPLINES = 3

local orgs = {}       -- {member=, admin=, first=, size=}
local cumulative = {} -- Zipf's cumulative weights, by rank
local total = 0
local pending, pending_first, pending_last = {}, 1, 0
local counter = 0
local withdraw_turn = false

setup = common.setup
done = common.done

local function hex12(x)
  local hi = math.floor(x / 16777216)
  return string.format("%06x%06x", hi, x - hi * 16777216)
end

local function ident(kind, n)
  local h = hex12(EPOCH_MS + n) .. string.format("7%03x8%015x", kind, n)
  return h:sub(1, 8) .. "-" .. h:sub(9, 12) .. "-" .. h:sub(13, 16) .. "-" ..
    h:sub(17, 20) .. "-" .. h:sub(21, 32)
end

local function team_number(id)
  -- the ordinal is the last 15 hex digits: 3 of the fourth group and the fifth group
  return tonumber(id:sub(21, 23) .. id:sub(25, 36), 16)
end

local function org_of_team(n)
  local lo, hi = 1, #orgs
  while lo < hi do
    local mid = math.floor((lo + hi + 1) / 2)
    if orgs[mid].first <= n then lo = mid else hi = mid - 1 end
  end
  return orgs[lo]
end

local function pick_org()
  local r = math.random() * total
  local lo, hi = 1, #cumulative
  while lo < hi do
    local mid = math.floor((lo + hi) / 2)
    if cumulative[mid] < r then lo = mid + 1 else hi = mid end
  end
  return orgs[lo]
end

local function pick_team(org)
  return org.first + math.random(org.size) - 1
end

function init(args)
  math.randomseed(os.time() + (thread_number or 0) * 7919)
  for line in io.lines(common.env("BENCH_ORGS")) do
    local member, admin, first, size = string.match(line, "(%S+)%s+(%S+)%s+(%d+)%s+(%d+)")
    if member ~= nil then
      orgs[#orgs + 1] = {
        member = {["Authorization"] = "Bearer " .. member, ["Accept"] = "application/json"},
        admin = {
          ["Authorization"] = "Bearer " .. admin,
          ["Accept"] = "application/json",
          ["Content-Type"] = "application/json",
        },
        first = tonumber(first),
        size = tonumber(size),
      }
      total = total + (#orgs) ^ (-ZIPF_S)
      cumulative[#orgs] = total
    end
  end
end

local function read(org)
  local kind = math.random(6)
  if kind == 1 then
    return wrk.format("GET", "/leaderboard?limit=50", org.member)
  elseif kind == 2 then
    return wrk.format("GET", "/team/" .. ident(KIND_TEAM, pick_team(org)) .. "/overview", org.member)
  elseif kind == 3 then
    return wrk.format("GET", "/team/" .. ident(KIND_TEAM, pick_team(org)), org.member)
  elseif kind == 4 then
    return wrk.format("GET", "/leaderboard/graph?top=10", org.member)
  elseif kind == 5 then
    local d = ident(KIND_DISCIPLINE, math.random(DISCIPLINES) - 1)
    return wrk.format("GET", "/discipline/" .. d, org.member)
  end
  return wrk.format("GET", "/team?limit=100", org.member)
end

local function progress(org)
  withdraw_turn = not withdraw_turn
  if withdraw_turn and pending_first <= pending_last then
    local p = pending[pending_first]
    pending[pending_first] = nil
    pending_first = pending_first + 1
    local owner = org_of_team(team_number(p[1]))
    return wrk.format("DELETE", "/team/" .. p[1] .. "/progress/" .. p[2], owner.admin)
  end
  local n = pick_team(org)
  -- team n completed tasks (7n + 5k) mod 54 for k < 20 (bench/dataset/rules.py); the
  -- steps k = 20 … 53 are the tasks it has not.
  local free = (START_STRIDE * n + STEP * (DONE + math.random(TASKS - DONE) - 1)) % TASKS
  local body = '{"TaskId": "' .. ident(KIND_TASK, free) .. '"}'
  return wrk.format("POST", "/team/" .. ident(KIND_TEAM, n) .. "/progress", org.admin, body)
end

local function team_or_member(org)
  counter = counter + 1
  local tag = string.format("%s-%d-%d", run, thread_number or 0, counter)
  if counter % 2 == 0 then
    return wrk.format("POST", "/team", org.admin, '{"name": "p ' .. tag .. '"}')
  end
  local body = '{"email": "p' .. tag .. '@bench.questline.dev", "givenName": "P ' .. tag .. '"}'
  return wrk.format("POST", "/team/" .. ident(KIND_TEAM, pick_team(org)) .. "/members",
    org.admin, body)
end

function request()
  local org = pick_org()
  local r = math.random()
  if r < 0.85 then return read(org) end
  if r < 0.95 then return progress(org) end
  return team_or_member(org)
end

function response(status, headers, body)
  common.count_status(status)
  if status == 201 and body ~= nil then
    local team = string.match(body, '"TeamId"%s*:%s*"([^"]+)"')
    local task = string.match(body, '"TaskId"%s*:%s*"([^"]+)"')
    if team ~= nil and task ~= nil then
      pending_last = pending_last + 1
      pending[pending_last] = {team, task}
    end
  end
end
