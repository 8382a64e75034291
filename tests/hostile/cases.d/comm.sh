# comm: the TCP store attacked from outside a running job, and ranks whose launcher is killed.
# Sourced by hostile_test.sh (see README.md here).

hostile_python=${KEEL_PYTHON:-python3}

# A process is gone when it no longer exists or is a zombie nobody has reaped yet.
hostile_alive() {
  local stat
  stat=$(ps -o stat= -p "$1" 2>/dev/null) || return 1
  [ -n "$stat" ] && [ "${stat#Z}" = "$stat" ]
}

# ---- the store (issue 15, item 1) ---------------------------------------------------------
# A two-rank job on a port we choose, keeping its store open (KEEL_STORE_KEEP=1), while
# store_attack.py sends garbage, a wrong proof, ADD on 'abc', a short delta, an overflowing
# ADD, a 1 GiB value and 1,000 random malformed requests. The job must finish (exit 0) within
# the RSS bound, and the store must refuse each attack and still answer the job.
if ! command -v "$hostile_python" >/dev/null 2>&1; then
  echo "hostile: no $hostile_python, the store attack is skipped"
elif hostile_unit; then
  free_port='import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
  store_port=$("$hostile_python" -c "$free_port")
  store_secret=$(od -An -tx1 -N16 /dev/urandom | tr -d ' \n')
  store_env=(MASTER_ADDR=127.0.0.1 "MASTER_PORT=$store_port" WORLD_SIZE=2
             "KEEL_STORE_SECRET=$store_secret" KEEL_STORE_KEEP=1 "KEEL_COMM_TIMEOUT=$timeout_s")
  "$hostile_python" "$src/tests/hostile/store_attack.py" "$store_port" "$store_secret" \
    "$timeout_s" >"$tmp/store-attack.log" 2>&1 </dev/null &
  store_attacker=$!
  # Rank 1 joins only once the attack (and its check that the store still serves) is over:
  # rank 0 waits for it in bootstrap with its store open, so a fast job cannot end before the
  # attacker's last request, however slow the machine.
  (
    while kill -0 "$store_attacker" 2>/dev/null; do sleep 0.1; done
    exec env "${store_env[@]}" RANK=1 LOCAL_RANK=1 timeout -k 5 "$timeout_s" \
      "$keel" comm bench -e 4M -n 50 >"$tmp/store-rank1.log" 2>&1 </dev/null
  ) &
  store_rank1=$!
  store_case_env=()
  for e in "${store_env[@]}"; do store_case_env+=(-e "$e"); done
  hostile_case ok "${store_case_env[@]}" -e RANK=0 -e LOCAL_RANK=0 -- comm bench -e 4M -n 50
  if ! wait "$store_rank1"; then
    fail "store attack: rank 1 failed: $(tail -n 2 "$tmp/store-rank1.log" | tr '\n' '|')"
  fi
  if ! wait "$store_attacker"; then
    fail "store attack: $(tail -n 3 "$tmp/store-attack.log" | tr '\n' '|')"
  fi
  hostile_unit_end
fi

# ---- orphaned ranks (issue 15, item 5) ----------------------------------------------------
# kill -9 of the launcher: every rank must be gone within 5 s (PR_SET_PDEATHSIG).
orphan_commands=("comm launch -n 2 -- sleep 300" "comm bench -N 2 -e 64M -n 1000000")
for c in "${orphan_commands[@]}"; do
  hostile_mine || continue
  read -r -a words <<<"$c"
  runs=$((runs + 1))
  "$keel" "${words[@]}" >/dev/null 2>&1 </dev/null &
  launcher=$!
  kids=""
  for _ in $(seq 100); do
    kids=$(ps -o pid= --ppid "$launcher" 2>/dev/null | tr -d ' ' | tr '\n' ' ')
    [ "$(wc -w <<<"$kids")" -ge 2 ] && break
    sleep 0.1
  done
  if [ -z "$kids" ]; then
    fail "orphans: keel $c started no ranks"
    kill -9 "$launcher" 2>/dev/null
    wait "$launcher" 2>/dev/null
    continue
  fi
  sleep 0.5
  kill -9 "$launcher"
  wait "$launcher" 2>/dev/null
  left=""
  for _ in $(seq 50); do
    left=""
    for k in $kids; do hostile_alive "$k" && left="$left $k"; done
    [ -z "$left" ] && break
    sleep 0.1
  done
  if [ -n "$left" ]; then
    fail "orphans: ranks$left of 'keel $c' outlived their launcher by 5 s"
    for k in $left; do kill -9 "$k" 2>/dev/null; done
  fi
done
