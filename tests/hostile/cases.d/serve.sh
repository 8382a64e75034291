# serve: what `keel serve` and `keel serve bench` refuse before anything listens or connects
# (a repository that is not a folder, numbers out of range, an address that is not one, a
# server that is not there). Sourced by hostile_test.sh (see README.md here); a repository that
# loads would serve until stopped, so none is given here (python/tests/test_serve.py runs the
# server itself).
for f in /dev/zero /dev/null "$fifo" /proc/self/mem "$tmp/no-such-dir" "$tmp/garbage.bin"; do
  hostile_case usage -m "not a model repository folder" -- serve "$f" --http 0
done
hostile_case usage -m "repository" -- serve
for v in -1 65536 99999999999999999999999 nan many; do
  hostile_case usage -m "--http" -- serve "$tmp/no-such-dir" --http "$v"
  hostile_case usage -m "--metrics-port" -- serve "$tmp/no-such-dir" --metrics-port "$v"
  hostile_case usage -m "--concurrency" -- serve bench http://127.0.0.1:9 --model m --concurrency "1,$v"
done
for size in -1 lots 99999999999999999999G; do
  hostile_case usage -m "$size" -- serve "$tmp/dir" --memory "$size"
  hostile_case usage -m "$size" -- serve "$tmp/dir" --max-body "$size"
done
hostile_case usage -e KEEL_SERVE_THREADS=0 -m KEEL_SERVE_THREADS -- serve "$tmp/dir"
hostile_case usage -e KEEL_SERVE_THREADS=many -m KEEL_SERVE_THREADS -- serve "$tmp/dir"
for url in "" notaurl "ftp://127.0.0.1:9" "http://" "http://127.0.0.1:99999"; do
  hostile_case usage -- serve bench "$url" --model m --duration 0.1 --warmup 0
done
# Nothing listens on port 9 of the loopback (discard is not started here): refused at once.
hostile_case usage -m "cannot reach" -- serve bench http://127.0.0.1:9 --model m --duration 0.1
