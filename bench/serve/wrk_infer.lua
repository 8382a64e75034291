-- wrk script: POSTs one KServe v2 infer request with JSON tensor data (not the binary
-- extension) to the demo repository's identity model (INPUT0, FP32, shape [1, 16]); the
-- server's per-request overhead dominates, so Requests/sec measures the HTTP front.
--
--   wrk -t2 -c16 -d10s -s bench/serve/wrk_infer.lua http://127.0.0.1:PORT
--   wrk ... -s bench/serve/wrk_infer.lua http://127.0.0.1:PORT -- count
--
-- With "count", every response's status is checked and done() prints how many were not 200
-- ("non-200 responses: N"); it costs a Lua call per response, so it is off by default (wrk's
-- own "Non-2xx or 3xx responses" line still reports failures).

wrk.method = "POST"
wrk.path = "/v2/models/identity/infer"
wrk.headers["Content-Type"] = "application/json"

local values = {}
for i = 0, 15 do values[#values + 1] = string.format("%.1f", i * 0.5) end
wrk.body = '{"inputs":[{"name":"INPUT0","datatype":"FP32","shape":[1,16],"data":['
  .. table.concat(values, ",") .. ']}]}'

local threads = {}

function setup(thread)
  table.insert(threads, thread)
end

function init(args)
  non200 = 0
  counting = args[1] == "count"
  if counting then
    response = function(status, headers, body)
      if status ~= 200 then non200 = non200 + 1 end
    end
  end
end

function done(summary, latency, requests)
  local total, counted = 0, false
  for _, thread in ipairs(threads) do
    local n = thread:get("non200")
    if n then total = total + n end
    if thread:get("counting") then counted = true end
  end
  if counted then io.write(string.format("non-200 responses: %d\n", total)) end
end
