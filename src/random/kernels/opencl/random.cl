// keel::random OpenCL kernels: Philox4x32-10 raw, uniform and normal output in cuRAND's
// host-generator layout (group q = p / 4 reads block q / 65536 of thread q mod 65536).
// Normals use either the device's own logf/sincos/sqrt (exact_math = 0) or keel's exact
// math (exact_math = 1): glibc 2.36's logf and sincosf algorithms in double precision, which
// give libcurand's host bits. Every float operation is rounded separately.
#pragma OPENCL FP_CONTRACT OFF
#pragma OPENCL EXTENSION cl_khr_fp64 : enable

#define K_THREADS 65536UL

uint4 philox4x32_10(uint4 c, uint2 k) {
  for (int r = 0; r < 10; ++r) {
    if (r > 0) {
      k.x += 0x9E3779B9u;
      k.y += 0xBB67AE85u;
    }
    const uint hi0 = mul_hi(0xD2511F53u, c.x), lo0 = 0xD2511F53u * c.x;
    const uint hi1 = mul_hi(0xCD9E8D57u, c.z), lo1 = 0xCD9E8D57u * c.z;
    c = (uint4)(hi1 ^ c.y ^ k.x, lo1, hi0 ^ c.w ^ k.y, lo0);
  }
  return c;
}

constant double k_invc[16] = {0x1.661ec79f8f3bep+0, 0x1.571ed4aaf883dp+0, 0x1.49539f0f010bp+0,
                              0x1.3c995b0b80385p+0, 0x1.30d190c8864a5p+0, 0x1.25e227b0b8eap+0,
                              0x1.1bb4a4a1a343fp+0, 0x1.12358f08ae5bap+0, 0x1.0953f419900a7p+0,
                              0x1p+0,               0x1.e608cfd9a47acp-1, 0x1.ca4b31f026aap-1,
                              0x1.b2036576afce6p-1, 0x1.9c2d163a1aa2dp-1, 0x1.886e6037841edp-1,
                              0x1.767dcf5534862p-1};
constant double k_logc[16] = {-0x1.57bf7808caadep-2, -0x1.2bef0a7c06ddbp-2, -0x1.01eae7f513a67p-2,
                              -0x1.b31d8a68224e9p-3, -0x1.6574f0ac07758p-3, -0x1.1aa2bc79c81p-3,
                              -0x1.a4e76ce8c0e5ep-4, -0x1.1973c5a611cccp-4, -0x1.252f438e10c1ep-5,
                              0x0p+0,                0x1.aa5aa5df25984p-5,  0x1.c5e53aa362eb4p-4,
                              0x1.526e57720db08p-3,  0x1.bc2860d22477p-3,   0x1.1058bc8a07ee1p-2,
                              0x1.4043057b6ee09p-2};

// glibc 2.36 logf for normal positive finite x <= 1.
float exact_logf(float x) {
  const uint ix = as_uint(x);
  const uint tmp = ix - 0x3f330000u;
  const int i = (tmp >> 19) & 15;
  const int k = as_int(tmp) >> 23;
  const uint iz = ix - (tmp & 0xff800000u);
  const double z = (double)as_float(iz);
  const double r = z * k_invc[i] - 1.0;
  const double y0 = k_logc[i] + (double)k * 0x1.62e42fefa39efp-1;
  const double r2 = r * r;
  double y = 0x1.5575b0be00b6ap-2 * r + -0x1.ffffef20a4123p-2;
  y = -0x1.00ea348b88334p-2 * r2 + y;
  y = y * r2 + (y0 + r);
  return (float)y;
}

// glibc 2.36 sincosf for 0 <= x < 120.
void exact_sincosf(float xf, float* s_out, float* c_out) {
  const uint top = (as_uint(xf) >> 20) & 0x7ffu;
  if (top < 0x398u) {
    *s_out = xf;
    *c_out = 1.0f;
    return;
  }
  const double x = (double)xf;
  int n = 0;
  if (top >= 0x3f4u) n = (((int)(x * 0x1.45F306DC9C883p+23)) + 0x800000) >> 24;
  const double xr = x - (double)n * 0x1.921FB54442D18p0;
  const double sign = ((n + 1) & 2) ? -1.0 : 1.0;
  const double xs = xr * sign;
  const double x2 = xr * xr, x4 = x2 * x2, x3 = x2 * xs;
  const double cc2 = -0x1.6c087e89a359dp-10 + x2 * 0x1.99343027bf8c3p-16;
  const double ss1 = 0x1.1107605230bc4p-7 + x2 * -0x1.994eb3774cf24p-13;
  const double cc1 = 0x1p0 + x2 * -0x1.ffffffd0c621cp-2;
  const double x5 = x3 * x2, x6 = x4 * x2;
  const double s = xs + x3 * -0x1.555545995a603p-3;
  const double c = cc1 + x4 * 0x1.55553e1068f19p-5;
  const float sp = (float)(s + x5 * ss1);
  float cp = (float)(c + x6 * cc2);
  if (n & 2) cp = -cp;
  *s_out = (n & 1) ? cp : sp;
  *c_out = (n & 1) ? sp : cp;
}

float2 box_muller(uint x, uint y, int exact) {
  const float u = (float)x * 2.3283064e-10f + 2.3283064e-10f / 2.0f;
  const float step = 2.3283064e-10f * 6.2831855f;
  const float v = (float)y * step + step / 2.0f;
  float s, sv, cv;
  if (exact) {
    s = sqrt(-2.0f * exact_logf(u));
    exact_sincosf(v, &sv, &cv);
  } else {
    s = sqrt(-2.0f * log(u));
    sv = sincos(v, &cv);
  }
  return (float2)(sv * s, cv * s);
}

// kind: 0 raw, 1 uniform, 2 normal. One work-item per group of four positions.
kernel void philox_generate(int kind, global uint* out, ulong position, ulong n, uint key0, uint key1, float mean,
                            float stddev, int exact) {
  const ulong q = position / 4 + get_global_id(0);
  const ulong end = position + n;
  if (4 * q >= end) return;
  const ulong j = q / K_THREADS, t = q % K_THREADS;
  const uint4 w = philox4x32_10((uint4)((uint)j, (uint)(j >> 32), (uint)t, (uint)(t >> 32)), (uint2)(key0, key1));
  uint v[4] = {w.x, w.y, w.z, w.w};
  if (kind == 1) {
    for (int l = 0; l < 4; ++l) v[l] = as_uint((float)v[l] * 2.3283064e-10f + 2.3283064e-10f / 2.0f);
  } else if (kind == 2) {
    const float2 a = box_muller(w.x, w.y, exact), b = box_muller(w.z, w.w, exact);
    const float z[4] = {a.x, a.y, b.x, b.y};
    for (int l = 0; l < 4; ++l) v[l] = as_uint(z[l] * stddev + mean);
  }
  for (int l = 0; l < 4; ++l) {
    const ulong p = 4 * q + l;
    if (p >= position && p < end) out[p - position] = v[l];
  }
}
