/* A column walk: dst[i][j] = src[j][i] over an R x C block of a matrix whose rows are S floats
 * apart -- how a transpose reads.  Prints nanoseconds and cycles (at --ghz) an element.
 *
 * docs/perf-model.md ("Columns in one set") quotes its figures: with S a multiple of 1024
 * (rows 4 KiB apart) a column's lines share one L1 set and the misses queue.
 *
 *   cc -O3 -march=native -o column_walk column_walk.c
 *   ./column_walk 64 1024 1024; ./column_walk 1024 1024 1024; ./column_walk 1024 1024 1040
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

__attribute__((noinline)) static void walk(float *restrict dst, const float *restrict src, long rows, long cols,
                                           long stride)
{
    for (long i = 0; i < cols; i++)
        for (long j = 0; j < rows; j++) dst[i * rows + j] = src[j * stride + i];
}

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: %s ROWS COLUMNS STRIDE [GHZ]\n", argv[0]);
        return 2;
    }
    const long rows = atol(argv[1]), cols = atol(argv[2]), stride = atol(argv[3]);
    const double ghz = argc > 4 ? atof(argv[4]) : 3.15;
    if (rows < 1 || cols < 1 || stride < cols) {
        fprintf(stderr, "need ROWS >= 1, COLUMNS >= 1, STRIDE >= COLUMNS\n");
        return 2;
    }
    float *src = aligned_alloc(4096, (size_t)(rows * stride * 4 + 4095) / 4096 * 4096);
    float *dst = aligned_alloc(4096, (size_t)(rows * cols * 4 + 4095) / 4096 * 4096);
    if (!src || !dst) return 1;
    for (long k = 0; k < rows * stride; k++) src[k] = (float)(k % 7);
    for (long k = 0; k < rows * cols; k++) dst[k] = 0;
    double best = 1e30;
    for (int t = 0; t < 7; t++) {
        const double t0 = now();
        walk(dst, src, rows, cols, stride);
        const double d = now() - t0;
        if (d < best) best = d;
    }
    const double per = best / ((double)rows * (double)cols);
    printf("rows %ld, columns %ld, stride %ld floats: %.2f ns (%.1f cycles at %.2f GHz) an element  [%g]\n", rows,
           cols, stride, per * 1e9, per * 1e9 * ghz, ghz, (double)dst[rows * cols / 2]);
    free(src);
    free(dst);
    return 0;
}
