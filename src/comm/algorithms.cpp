#include "algorithms.hpp"

#include <algorithm>
#include <cstring>

namespace keel::comm::detail {
namespace {

int mod(int x, int n) { return ((x % n) + n) % n; }

// Block b of `count` elements split over n ranks: the first count % n blocks get one more.
struct blocks {
  std::size_t count;
  int n;
  std::size_t off(int b) const {
    const std::size_t base = count / n, rem = count % n;
    return b * base + std::min<std::size_t>(b, rem);
  }
  std::size_t len(int b) const { return count / n + (static_cast<std::size_t>(b) < count % n); }
};

int pow2_floor(int n) {
  int p = 1;
  while (p * 2 <= n) p *= 2;
  return p;
}

// gate(x): op x as the only gate, or none when x < 0 (no allocation).
struct opt_gate {
  int g;
  operator gates_t() const { return g >= 0 ? gates_t(&g, 1) : gates_t(); }
};
opt_gate gate(int g) { return {g}; }

}  // namespace

tree_links btree(int n, int rank) {
  tree_links t;
  int bit = 1;
  for (; bit < n; bit <<= 1) {
    if (bit & rank) break;
  }
  if (rank == 0) {
    t.child1 = n > 1 ? bit >> 1 : -1;
    return t;
  }
  int up = (rank ^ bit) | (bit << 1);
  if (up >= n) up = rank ^ bit;
  t.parent = up;
  int lowbit = bit >> 1;
  t.child0 = lowbit == 0 ? -1 : rank - lowbit;
  int down1 = lowbit == 0 ? -1 : rank + lowbit;
  while (down1 >= n) {
    down1 = lowbit == 0 ? -1 : rank + lowbit;
    lowbit >>= 1;
  }
  t.child1 = down1;
  return t;
}

tree_links dtree(int n, int rank, int tree) {
  if (tree == 0) return btree(n, rank);
  auto map = [&](int x, bool shift) {
    if (x == -1) return -1;
    return shift ? (x + 1) % n : n - 1 - x;
  };
  const bool shift = n % 2 == 1;
  const tree_links t = btree(n, shift ? mod(rank - 1, n) : n - 1 - rank);
  return {map(t.parent, shift), map(t.child0, shift), map(t.child1, shift)};
}

// ---------------------------------------------------------------- allreduce

plan allreduce_ring(schedule& s, const args& a) {
  const int n = a.n, r = a.rank, left = mod(r - 1, n), right = mod(r + 1, n);
  const blocks b{a.count, n};
  const std::size_t E = a.elem;
  int prev = -1;
  for (int step = 0; step < n - 1; ++step) {  // reduce-scatter
    const int sb = mod(r - step, n), rb = mod(r - step - 1, n);
    const std::byte* src = (step == 0 ? a.in : a.out) + b.off(sb) * E;
    s.send(right, 0, src, b.len(sb) * E, gate(prev));
    prev = s.recv_reduce(left, 0, a.out + b.off(rb) * E, a.in + b.off(rb) * E, b.len(rb) * E);
  }
  for (int step = 0; step < n - 1; ++step) {  // allgather
    const int sb = mod(r + 1 - step, n), rb = mod(r - step, n);
    s.send(right, 0, a.out + b.off(sb) * E, b.len(sb) * E, gate(prev));
    prev = s.recv(left, 0, a.out + b.off(rb) * E, b.len(rb) * E);
  }
  return {};
}

plan allreduce_tree(schedule& s, const args& a) {
  const std::size_t E = a.elem, half = a.count / 2;
  for (int t = 0; t < 2; ++t) {
    const std::size_t off = (t == 0 ? 0 : half) * E;
    const std::size_t len = (t == 0 ? half : a.count - half) * E;
    const tree_links links = dtree(a.n, a.rank, t);
    int acc = -1;
    const std::byte* up = a.in + off;
    for (int child : {links.child0, links.child1}) {
      if (child < 0) continue;
      acc =
          s.recv_reduce(child, t, a.out + off, acc < 0 ? a.in + off : a.out + off, len, gate(acc));
      up = a.out + off;
    }
    int down = acc;
    if (links.parent >= 0) {
      s.send(links.parent, t, up, len, gate(acc));
      down = s.recv(links.parent, t, a.out + off, len);
    }
    for (int child : {links.child0, links.child1}) {
      if (child >= 0) s.send(child, t, a.out + off, len, gate(down));
    }
  }
  return {};
}

// The fold both power-of-two allreduces start with: a rank r >= p2 hands its data to r - p2
// and gets the result back (returns false: it has nothing more to do); a rank r < n - p2
// reduces its partner's data into out first.
struct fold_start {
  bool active;
  int last;
  const std::byte* cur;
};
fold_start fold_extra_ranks(schedule& s, const args& a, int p2, std::size_t bytes) {
  const int r = a.rank, extra = a.n - p2;
  if (r >= p2) {
    s.send(r - p2, 0, a.in, bytes);
    s.recv(r - p2, 0, a.out, bytes);
    return {false, -1, a.in};
  }
  if (r < extra) return {true, s.recv_reduce(r + p2, 0, a.out, a.in, bytes), a.out};
  return {true, -1, a.in};
}

plan allreduce_rd(schedule& s, const args& a) {
  const int n = a.n, r = a.rank, p2 = pow2_floor(n), extra = n - p2;
  const std::size_t bytes = a.count * a.elem;
  const fold_start f = fold_extra_ranks(s, a, p2, bytes);
  if (!f.active) return {};
  int last = f.last;
  const std::byte* cur = f.cur;
  for (int mask = 1; mask < p2; mask <<= 1) {
    const int partner = r ^ mask;
    const int sent = s.send(partner, 0, cur, bytes, gate(last));
    last = last >= 0 ? s.recv_reduce(partner, 0, a.out, cur, bytes, {sent, last})
                     : s.recv_reduce(partner, 0, a.out, cur, bytes, {sent});
    cur = a.out;
  }
  if (r < extra) s.send(r + p2, 0, a.out, bytes, gate(last));
  return {};
}

plan allreduce_rabenseifner(schedule& s, const args& a) {
  const int n = a.n, r = a.rank, p2 = pow2_floor(n), extra = n - p2;
  const std::size_t E = a.elem, bytes = a.count * E;
  const fold_start f = fold_extra_ranks(s, a, p2, bytes);
  if (!f.active) return {};
  int last = f.last;
  const std::byte* cur = f.cur;
  // Recursive halving: keep the half on the side of our bit, send the other.
  std::size_t lo = 0, hi = a.count;
  std::vector<std::pair<std::size_t, std::size_t>> sent_ranges;
  for (int mask = p2 / 2; mask >= 1; mask >>= 1) {
    const int partner = r ^ mask;
    const std::size_t mid = lo + (hi - lo) / 2;
    const bool keep_low = (r & mask) == 0;
    const std::size_t klo = keep_low ? lo : mid, khi = keep_low ? mid : hi;
    const std::size_t slo = keep_low ? mid : lo, shi = keep_low ? hi : mid;
    s.send(partner, 0, cur + slo * E, (shi - slo) * E, gate(last));
    last = s.recv_reduce(partner, 0, a.out + klo * E, cur + klo * E, (khi - klo) * E, gate(last));
    sent_ranges.emplace_back(slo, shi);
    cur = a.out;
    lo = klo;
    hi = khi;
  }
  // Recursive doubling allgather, in reverse: exchange what we own for what the partner owns.
  std::vector<int> gates;
  if (last >= 0) gates.push_back(last);
  for (int mask = 1, i = static_cast<int>(sent_ranges.size()) - 1; mask < p2; mask <<= 1, --i) {
    const int partner = r ^ mask;
    const auto [slo, shi] = sent_ranges[static_cast<std::size_t>(i)];
    s.send(partner, 0, a.out + lo * E, (hi - lo) * E, gates);
    gates.push_back(s.recv(partner, 0, a.out + slo * E, (shi - slo) * E));
    lo = std::min(lo, slo);
    hi = std::max(hi, shi);
  }
  if (r < extra) s.send(r + p2, 0, a.out, bytes, gates);
  return {};
}

plan allreduce_reducer(schedule& s, const args& a) {
  const int n = a.n, r = a.rank, R = a.root;
  const std::size_t bytes = a.count * a.elem;
  if (r != R) {
    s.send(R, 0, a.in, bytes);
    s.recv(R, 0, a.out, bytes);
    return {};
  }
  int last = -1;
  for (int p = 0; p < n; ++p) {
    if (p == R) continue;
    last = s.recv_reduce(p, 0, a.out, last < 0 ? a.in : a.out, bytes, gate(last));
  }
  for (int p = 0; p < n; ++p) {
    if (p != R) s.send(p, 0, a.out, bytes, gate(last));
  }
  return {};
}

// ---------------------------------------------------------------- reduce

plan reduce_ring(schedule& s, const args& a) {
  // A pipelined chain that starts after the root and ends at it (NCCL's ring reduce).
  const int n = a.n, r = a.rank;
  const int pos = mod(r - a.root - 1, n);  // 0 .. n-1, root at n-1
  const std::size_t bytes = a.count * a.elem;
  const int prev = mod(r - 1, n), next = mod(r + 1, n);
  if (pos == 0) {
    s.send(next, 0, a.in, bytes);
  } else if (pos == n - 1) {
    s.recv_reduce(prev, 0, a.out, a.in, bytes);
  } else {
    std::byte* acc = a.scratch(bytes, 0);
    const int got = s.recv_reduce(prev, 0, acc, a.in, bytes);
    s.send(next, 0, acc, bytes, {got});
  }
  return {};
}

plan reduce_tree(schedule& s, const args& a) {
  const int n = a.n;
  const int v = mod(a.rank - a.root, n);
  const tree_links t = btree(n, v);
  auto real = [&](int x) { return mod(x + a.root, n); };
  const std::size_t bytes = a.count * a.elem;
  std::byte* acc_buf = t.parent < 0 ? a.out : a.scratch(bytes, 0);
  int acc = -1;
  const std::byte* up = a.in;
  for (int child : {t.child0, t.child1}) {
    if (child < 0) continue;
    acc = s.recv_reduce(real(child), 0, acc_buf, acc < 0 ? a.in : acc_buf, bytes, gate(acc));
    up = acc_buf;
  }
  if (t.parent >= 0) s.send(real(t.parent), 0, up, bytes, gate(acc));
  return {};
}

plan reduce_reducer(schedule& s, const args& a) {
  const std::size_t bytes = a.count * a.elem;
  if (a.rank != a.root) {
    s.send(a.root, 0, a.in, bytes);
    return {};
  }
  int last = -1;
  for (int p = 0; p < a.n; ++p) {
    if (p == a.root) continue;
    last = s.recv_reduce(p, 0, a.out, last < 0 ? a.in : a.out, bytes, gate(last));
  }
  return {};
}

// ---------------------------------------------------------------- broadcast

namespace {
plan root_copy(const args& a) {
  plan p;
  if (a.rank == a.root && a.in != a.out) p.before.push_back({a.out, a.in, a.count * a.elem});
  return p;
}
}  // namespace

plan broadcast_ring(schedule& s, const args& a) {
  const int n = a.n, pos = mod(a.rank - a.root, n);
  const std::size_t bytes = a.count * a.elem;
  const int next = mod(a.rank + 1, n), prev = mod(a.rank - 1, n);
  if (pos == 0) {
    s.send(next, 0, a.in, bytes);
  } else {
    const int got = s.recv(prev, 0, a.out, bytes);
    if (pos < n - 1) s.send(next, 0, a.out, bytes, {got});
  }
  return root_copy(a);
}

plan broadcast_tree(schedule& s, const args& a) {
  const int n = a.n, v = mod(a.rank - a.root, n);
  const tree_links t = btree(n, v);
  const std::size_t bytes = a.count * a.elem;
  int got = -1;
  const std::byte* src = a.in;
  if (t.parent >= 0) {
    got = s.recv(mod(t.parent + a.root, n), 0, a.out, bytes);
    src = a.out;
  }
  for (int child : {t.child0, t.child1}) {
    if (child >= 0) s.send(mod(child + a.root, n), 0, src, bytes, gate(got));
  }
  return root_copy(a);
}

plan broadcast_rd(schedule& s, const args& a) {
  // Binomial tree: in round k the ranks that have the data send it 2^k further.
  const int n = a.n, v = mod(a.rank - a.root, n);
  const std::size_t bytes = a.count * a.elem;
  int mask = 1;
  int got = -1;
  const std::byte* src = a.in;
  while (mask < n) {
    if (v & mask) {
      got = s.recv(mod(v - mask + a.root, n), 0, a.out, bytes);
      src = a.out;
      break;
    }
    mask <<= 1;
  }
  mask >>= 1;
  while (mask > 0) {
    if (v + mask < n) s.send(mod(v + mask + a.root, n), 0, src, bytes, gate(got));
    mask >>= 1;
  }
  return root_copy(a);
}

plan broadcast_direct(schedule& s, const args& a) {
  const std::size_t bytes = a.count * a.elem;
  if (a.rank == a.root) {
    for (int p = 0; p < a.n; ++p) {
      if (p != a.root) s.send(p, 0, a.in, bytes);
    }
  } else {
    s.recv(a.root, 0, a.out, bytes);
  }
  return root_copy(a);
}

// ---------------------------------------------------------------- reduce_scatter

plan reduce_scatter_ring(schedule& s, const args& a) {
  const int n = a.n, r = a.rank, left = mod(r - 1, n), right = mod(r + 1, n);
  const std::size_t B = a.count * a.elem;
  std::byte* acc = a.scratch(B * n, 0);
  int prev = -1;
  for (int step = 0; step < n - 1; ++step) {
    // Block (r - 1 - step) goes out, block (r - 2 - step) comes in; the last one is r.
    const int sb = mod(r - 1 - step, n), rb = mod(r - 2 - step, n);
    const std::byte* src = (step == 0 ? a.in : acc) + sb * B;
    s.send(right, 0, src, B, gate(prev));
    std::byte* dst = rb == r ? a.out : acc + rb * B;
    prev = s.recv_reduce(left, 0, dst, a.in + rb * B, B);
  }
  return {};
}

plan reduce_scatter_rabenseifner(schedule& s, const args& a) {
  const int n = a.n, r = a.rank;
  const std::size_t B = a.count * a.elem;
  std::byte* acc = a.scratch(B * n, 0);
  int lo = 0, hi = n, last = -1;
  const std::byte* cur = a.in;
  for (int mask = n / 2; mask >= 1; mask >>= 1) {
    const int partner = r ^ mask, mid = (lo + hi) / 2;
    const bool keep_low = (r & mask) == 0;
    const int klo = keep_low ? lo : mid, khi = keep_low ? mid : hi;
    const int slo = keep_low ? mid : lo, shi = keep_low ? hi : mid;
    s.send(partner, 0, cur + slo * B, (shi - slo) * B, gate(last));
    std::byte* dst = mask == 1 ? a.out : acc + klo * B;
    last = s.recv_reduce(partner, 0, dst, cur + klo * B, (khi - klo) * B, gate(last));
    cur = acc;
    lo = klo;
    hi = khi;
  }
  return {};
}

plan reduce_scatter_reducer(schedule& s, const args& a) {
  const int n = a.n, R = a.root;
  const std::size_t B = a.count * a.elem;
  if (a.rank != R) {
    s.send(R, 0, a.in, B * n);
    s.recv(R, 0, a.out, B);
    return {};
  }
  std::byte* acc = a.scratch(B * n, 0);
  int last = -1;
  for (int p = 0; p < n; ++p) {
    if (p != R) last = s.recv_reduce(p, 0, acc, last < 0 ? a.in : acc, B * n, gate(last));
  }
  for (int p = 0; p < n; ++p) {
    if (p != R) s.send(p, 0, acc + p * B, B, gate(last));
  }
  plan pl;
  pl.after.push_back({a.out, acc + R * B, B});
  return pl;
}

plan reduce_scatter_direct(schedule& s, const args& a) {
  const int n = a.n, r = a.rank;
  const std::size_t B = a.count * a.elem;
  for (int step = 1; step < n; ++step) s.send(mod(r + step, n), 0, a.in + mod(r + step, n) * B, B);
  int last = -1;
  for (int step = 1; step < n; ++step) {
    last =
        s.recv_reduce(mod(r - step, n), 0, a.out, last < 0 ? a.in + r * B : a.out, B, gate(last));
  }
  return {};
}

// ---------------------------------------------------------------- allgather

namespace {
plan own_block(const args& a) {
  plan p;
  std::byte* mine = a.out + a.rank * a.count * a.elem;
  if (mine != a.in) p.before.push_back({mine, a.in, a.count * a.elem});
  return p;
}
}  // namespace

plan allgather_ring(schedule& s, const args& a) {
  const int n = a.n, r = a.rank, left = mod(r - 1, n), right = mod(r + 1, n);
  const std::size_t B = a.count * a.elem;
  int prev = -1;
  for (int step = 0; step < n - 1; ++step) {
    const int sb = mod(r - step, n), rb = mod(r - step - 1, n);
    s.send(right, 0, step == 0 ? a.in : a.out + sb * B, B, gate(prev));
    prev = s.recv(left, 0, a.out + rb * B, B);
  }
  return own_block(a);
}

plan allgather_rd(schedule& s, const args& a) {
  // Bruck: tmp[i] holds block (rank + i) % n; round k sends the first min(2^k, n - 2^k)
  // blocks to rank - 2^k and receives as many from rank + 2^k behind them.
  const int n = a.n, r = a.rank;
  const std::size_t B = a.count * a.elem;
  std::byte* tmp = a.scratch(B * n, 0);
  std::vector<int> gates;
  for (int dist = 1; dist < n; dist <<= 1) {
    const int cnt = std::min(dist, n - dist);
    s.send(mod(r - dist, n), 0, tmp, cnt * B, gates);
    gates.push_back(s.recv(mod(r + dist, n), 0, tmp + dist * B, cnt * B));
  }
  plan p;
  p.before.push_back({tmp, a.in, B});
  for (int i = 0; i < n; ++i) p.after.push_back({a.out + mod(r + i, n) * B, tmp + i * B, B});
  return p;
}

plan allgather_direct(schedule& s, const args& a) {
  const int n = a.n, r = a.rank;
  const std::size_t B = a.count * a.elem;
  for (int step = 1; step < n; ++step) s.send(mod(r + step, n), 0, a.in, B);
  for (int step = 1; step < n; ++step) s.recv(mod(r - step, n), 0, a.out + mod(r - step, n) * B, B);
  return own_block(a);
}

// ---------------------------------------------------------------- alltoall, barrier

plan alltoall_direct(schedule& s, const args& a) {
  const int n = a.n, r = a.rank;
  const std::size_t B = a.count * a.elem;
  plan p;
  const std::byte* in = a.in;
  if (a.in == a.out) {  // in-place: send from a copy
    std::byte* copy = a.scratch(B * n, 0);
    std::memcpy(copy, a.in, B * n);
    in = copy;
  } else {
    p.before.push_back({a.out + r * B, a.in + r * B, B});
  }
  for (int step = 1; step < n; ++step) s.send(mod(r + step, n), 0, in + mod(r + step, n) * B, B);
  for (int step = 1; step < n; ++step) s.recv(mod(r - step, n), 0, a.out + mod(r - step, n) * B, B);
  return p;
}

plan barrier_rd(schedule& s, const args& a) {
  int prev = -1;
  for (int dist = 1; dist < a.n; dist <<= 1) {
    s.send(mod(a.rank + dist, a.n), 0, nullptr, 0, gate(prev));
    prev = s.recv(mod(a.rank - dist, a.n), 0, nullptr, 0);
  }
  return {};
}

}  // namespace keel::comm::detail
