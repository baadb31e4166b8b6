/*
 * scopes.c — libkprof in a C program: a session, nested scopes with the work they do (flops and
 * bytes, which become GFLOP/s and GB/s), a metric of the program's own, the key averages and the
 * call tree printed, and the trace saved for `kprof report`.
 *
 *   cc scopes.c -lkprof -o scopes && ./scopes [out.kprof]
 *   kprof report out.kprof --tree
 */
#include <kprof.h>

#include <stdio.h>
#include <stdlib.h>

enum { N = 256 };

static void matmul(const float *a, const float *b, float *c)
{
    KPROF_SCOPE_WORK("matmul", 2.0 * N * N * N, 3.0 * N * N * sizeof(float));
    for (int i = 0; i < N; i++)
        for (int j = 0; j < N; j++) {
            float sum = 0;
            for (int k = 0; k < N; k++)
                sum += a[i * N + k] * b[k * N + j];
            c[i * N + j] = sum;
        }
}

static float checksum(const float *c)
{
    KPROF_SCOPE_AS(scope, "checksum");
    float sum = 0;
    for (int i = 0; i < N * N; i++)
        sum += c[i];
    kprof_scope_metric(&scope, "elements", N * N);
    return sum;
}

int main(int argc, char **argv)
{
    float *a = malloc(sizeof(float) * N * N), *b = malloc(sizeof(float) * N * N),
          *c = malloc(sizeof(float) * N * N);
    if (!a || !b || !c) return 1;
    for (int i = 0; i < N * N; i++) {
        a[i] = (float)(i % 7);
        b[i] = (float)(i % 5);
    }
    if (kprof_start(NULL) != KPROF_OK) {
        fprintf(stderr, "%s\n", kprof_last_error());
        return 1;
    }
    float total = 0;
    for (int step = 0; step < 3; step++) {
        KPROF_SCOPE("step");
        matmul(a, b, c);
        total += checksum(c);
    }
    kprof_result *result = NULL;
    if (kprof_stop(&result) != KPROF_OK) {
        fprintf(stderr, "%s\n", kprof_last_error());
        return 1;
    }
    printf("checksum %.0f\n", total);
    kprof_result_print(result, KPROF_VIEW_BY_NAME, stdout);
    kprof_result_print(result, KPROF_VIEW_TREE, stdout);
    int rc = 0;
    if (argc > 1 && kprof_result_write(result, KPROF_FORMAT_TRACE, argv[1], KPROF_WRITE_FORCE)) {
        fprintf(stderr, "%s\n", kprof_last_error());
        rc = 1;
    }
    kprof_result_destroy(result);
    free(a);
    free(b);
    free(c);
    return rc;
}
