-- POST /team/bulk with BENCH_BULK_SIZE new teams a request; names unique per run
-- (BENCH_RUN), thread and request, so that every request creates its teams.
package.path = os.getenv("BENCH_LUA_DIR") .. "/?.lua;" .. package.path
local common = require("common")

local size = tonumber(common.env("BENCH_BULK_SIZE", "1000"))
local run = common.env("BENCH_RUN")
local headers = nil
local counter = 0

setup = common.setup
done = common.done

function response(status, headers, body)
  common.count_status(status)
end

function init(args)
  headers = common.headers()
  headers["Content-Type"] = "application/json"
end

function request()
  counter = counter + 1
  local prefix = string.format("bulk %s-%d-%d", run, thread_number or 0, counter)
  local items = {}
  for i = 1, size do
    items[i] = string.format('{"name": "%s-%d", "tags": ["bulk"]}', prefix, i)
  end
  return wrk.format("POST", "/team/bulk", headers, "[" .. table.concat(items, ",") .. "]")
end
