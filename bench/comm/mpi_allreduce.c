/* The peer of `keel comm bench --op allreduce`: times MPI_Allreduce (out-of-place and
 * MPI_IN_PLACE) over the same sizes and prints nccl-tests' table, so compare.sh can put
 * Open MPI and keel side by side. Flags: -b -e -f -n -w -c -d (float|double|int32|int64)
 * -o (sum|prod|min|max) and --json (one JSON document like `keel comm bench --json`). */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static size_t parse_size(const char* s) {
  char* end = NULL;
  double v = strtod(s, &end);
  switch (*end) {
    case 'K': case 'k': v *= 1024; break;
    case 'M': case 'm': v *= 1024 * 1024; break;
    case 'G': case 'g': v *= 1024.0 * 1024 * 1024; break;
    default: break;
  }
  return (size_t)v;
}

static void fill(void* buf, size_t count, MPI_Datatype t, int rank) {
  for (size_t i = 0; i < count; ++i) {
    const int v = (int)((i * 7 + (size_t)rank * 13) % 17) - 8;
    if (t == MPI_FLOAT) ((float*)buf)[i] = (float)v;
    else if (t == MPI_DOUBLE) ((double*)buf)[i] = v;
    else if (t == MPI_INT32_T) ((int32_t*)buf)[i] = v;
    else ((int64_t*)buf)[i] = v;
  }
}

static long long check(const void* buf, size_t count, MPI_Datatype t, MPI_Op op, int n) {
  long long wrong = 0;
  for (size_t i = 0; i < count; ++i) {
    double want = 0;
    for (int r = 0; r < n; ++r) {
      const double v = (double)((int)((i * 7 + (size_t)r * 13) % 17) - 8);
      if (r == 0) want = v;
      else if (op == MPI_SUM) want += v;
      else if (op == MPI_PROD) want *= v;
      else if (op == MPI_MIN) want = v < want ? v : want;
      else want = v > want ? v : want;
    }
    double got;
    if (t == MPI_FLOAT) got = ((const float*)buf)[i];
    else if (t == MPI_DOUBLE) got = ((const double*)buf)[i];
    else if (t == MPI_INT32_T) got = ((const int32_t*)buf)[i];
    else got = (double)((const int64_t*)buf)[i];
    if (t == MPI_INT32_T && op == MPI_PROD) want = (double)(int32_t)(int64_t)want;
    wrong += got != want;
  }
  return wrong;
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank, n;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  size_t minb = 8, maxb = 64u << 20;
  double factor = 2;
  int iters = 20, warmup = 5, do_check = 1, json = 0;
  const char* type_name = "float";
  const char* op_name = "sum";
  for (int i = 1; i < argc; ++i) {
    const char* a = argv[i];
    const char* v = i + 1 < argc ? argv[i + 1] : "";
    if (!strcmp(a, "-b")) minb = parse_size(v), ++i;
    else if (!strcmp(a, "-e")) maxb = parse_size(v), ++i;
    else if (!strcmp(a, "-f")) factor = atof(v), ++i;
    else if (!strcmp(a, "-n")) iters = atoi(v), ++i;
    else if (!strcmp(a, "-w")) warmup = atoi(v), ++i;
    else if (!strcmp(a, "-c")) do_check = atoi(v), ++i;
    else if (!strcmp(a, "-d")) type_name = v, ++i;
    else if (!strcmp(a, "-o")) op_name = v, ++i;
    else if (!strcmp(a, "--json")) json = 1;
  }
  MPI_Datatype t = MPI_FLOAT;
  size_t E = 4;
  if (!strcmp(type_name, "double")) t = MPI_DOUBLE, E = 8;
  else if (!strcmp(type_name, "int32")) t = MPI_INT32_T, E = 4;
  else if (!strcmp(type_name, "int64")) t = MPI_INT64_T, E = 8;
  MPI_Op op = MPI_SUM;
  if (!strcmp(op_name, "prod")) op = MPI_PROD;
  else if (!strcmp(op_name, "min")) op = MPI_MIN;
  else if (!strcmp(op_name, "max")) op = MPI_MAX;
  char* in = malloc(maxb + 64);
  char* out = malloc(maxb + 64);
  double bw_sum = 0;
  int bw_count = 0;
  long long wrong_total = 0;
  if (rank == 0) {
    if (json) {
      printf("{\"collective\": \"allreduce\", \"ranks\": %d, \"peer\": \"Open MPI MPI_Allreduce\", \"rows\": [", n);
    } else {
      printf("# Open MPI MPI_Allreduce, %d ranks, minBytes %zu maxBytes %zu step: %g(factor) warmup iters: %d iters: %d validation: %d\n#\n",
             n, minb, maxb, factor, warmup, iters, do_check);
      printf("#                                                              out-of-place                       in-place          \n");
      printf("#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n");
      printf("#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)       \n");
    }
  }
  int first = 1;
  for (double sz = (double)minb; sz <= (double)maxb * 1.0000001; sz = sz * factor > sz + 1 ? sz * factor : sz + 1) {
    const size_t count = (size_t)sz / E, bytes = count * E;
    double us[2];
    long long wrong[2];
    for (int place = 0; place < 2; ++place) {
      fill(in, count, t, rank);
      for (int i = 0; i < warmup; ++i) {
        if (place) MPI_Allreduce(MPI_IN_PLACE, out, (int)count, t, op, MPI_COMM_WORLD);
        else MPI_Allreduce(in, out, (int)count, t, op, MPI_COMM_WORLD);
      }
      MPI_Barrier(MPI_COMM_WORLD);
      const double t0 = MPI_Wtime();
      for (int i = 0; i < iters; ++i) {
        if (place) MPI_Allreduce(MPI_IN_PLACE, out, (int)count, t, op, MPI_COMM_WORLD);
        else MPI_Allreduce(in, out, (int)count, t, op, MPI_COMM_WORLD);
      }
      double dt = (MPI_Wtime() - t0) * 1e6 / iters;
      MPI_Allreduce(MPI_IN_PLACE, &dt, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
      us[place] = dt;
      wrong[place] = 0;
      if (do_check) {
        fill(in, count, t, rank);
        if (place) {
          memcpy(out, in, bytes);
          MPI_Allreduce(MPI_IN_PLACE, out, (int)count, t, op, MPI_COMM_WORLD);
        } else {
          MPI_Allreduce(in, out, (int)count, t, op, MPI_COMM_WORLD);
        }
        long long w = check(out, count, t, op, n);
        MPI_Allreduce(&w, &wrong[place], 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
      }
      wrong_total += wrong[place];
    }
    if (rank == 0) {
      const double factor_bus = 2.0 * (n - 1) / n;
      const double alg0 = bytes / (us[0] * 1e3), alg1 = bytes / (us[1] * 1e3);
      bw_sum += alg0 * factor_bus + alg1 * factor_bus;
      bw_count += 2;
      if (json) {
        printf("%s\n  {\"size\": %zu, \"count\": %zu, \"time_us\": %.3f, \"algbw\": %.6f, \"busbw\": %.6f, \"wrong\": %lld, "
               "\"in_place\": {\"time_us\": %.3f, \"algbw\": %.6f, \"busbw\": %.6f, \"wrong\": %lld}}",
               first ? "" : ",", bytes, count, us[0], alg0, alg0 * factor_bus, wrong[0], us[1], alg1,
               alg1 * factor_bus, wrong[1]);
      } else {
        printf("%12zu  %12zu  %8s  %6s  %6d", bytes, count, type_name, op_name, -1);
        for (int p = 0; p < 2; ++p) {
          const double alg = p ? alg1 : alg0;
          if (us[p] < 10000) printf("  %7.2f", us[p]);
          else if (us[p] < 100000) printf("  %7.1f", us[p]);
          else printf("  %7.0f", us[p]);
          printf("  %6.2f  %6.2f  %5lld", alg, alg * factor_bus, wrong[p]);
        }
        printf("\n");
      }
      fflush(stdout);
      first = 0;
    }
    if ((size_t)sz >= maxb) break;
  }
  if (rank == 0) {
    if (json) {
      printf("\n], \"avg_busbw\": %g, \"wrong\": %lld}\n", bw_count ? bw_sum / bw_count : 0, wrong_total);
    } else {
      printf("# Out of bounds values : %lld %s\n", wrong_total, wrong_total ? "FAILED" : "OK");
      printf("# Avg bus bandwidth : %g\n#\n", bw_count ? bw_sum / bw_count : 0);
    }
  }
  free(in);
  free(out);
  MPI_Finalize();
  return wrong_total ? 1 : 0;
}
