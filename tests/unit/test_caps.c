/* test_caps.c — what `kprof caps` reports, from src/lab/caps.c: a backend this kprof lacks
 * (kp_caps_collect), a device's JSON object with and without a measured ceiling and with and
 * without a datasheet peak (kp_caps_json_device), and the sentence and JSON of a ceiling plan
 * (kp_caps_plan_text, kp_caps_json_measure with dry_run), the backends listed (the registry's,
 * kp_backend_known_name). No device is touched. */
#include "lab/caps.h"
#include "test.h"

#include <stdlib.h>
#include <string.h>

#define MIB (1ULL << 20)
#define GIB (1ULL << 30)

static kp_device_info device(void)
{
    kp_device_info d = {.is_gpu = 1,
                        .index = 1,
                        .compute_units = 132,
                        .cache_bytes = 50 * MIB,
                        .global_mem = 140 * GIB,
                        .max_alloc = 140 * GIB};
    snprintf(d.backend, sizeof d.backend, "cuda");
    snprintf(d.name, sizeof d.name, "NVIDIA H200");
    return d;
}

static void test_not_built(void)
{
    kp_caps_backend b;
    kp_caps_collect(&b, "nosuch");
    CHECK_STR(b.name, "nosuch");
    CHECK_INT(b.built, 0);
    CHECK_INT(b.available, 0);
    CHECK_INT(b.ndevices, 0);
    CHECK_CONTAINS(b.reason, "not built into this kprof");
    kp_caps_backend_free(&b);
    CHECK(b.devices == NULL);
}

static void test_device_json(void)
{
    kp_device_info d = device();
    kp_str s = {0};
    kp_json j;
    kp_json_init(&j, &s, 0);
    kp_caps_json_device(&j, &d, NULL);
    kp_json_finish(&j);
    CHECK(!s.failed);
    CHECK_CONTAINS(s.data, "\"name\":\"NVIDIA H200\"");
    CHECK_CONTAINS(s.data, "\"compute_units\":132");
    CHECK_CONTAINS(s.data, "\"peak_bandwidth_gbs\":null");
    CHECK_CONTAINS(s.data, "\"peak_bandwidth_reason\":\"the backend reports no datasheet peak\"");
    CHECK_CONTAINS(s.data, "\"measured_ceiling\":null");
    kp_str_free(&s);

    d.peak_bandwidth_gbs = 4800;
    kp_ceiling c = {.copy_gbs = 4000, .copy_bytes = GIB, .fma_gflops = 0};
    snprintf(c.method, sizeof c.method, "best of 20");
    kp_json_init(&j, &s, 0);
    kp_caps_json_device(&j, &d, &c);
    kp_json_finish(&j);
    CHECK_CONTAINS(s.data, "\"peak_bandwidth_gbs\":4800");
    CHECK_CONTAINS(s.data, "\"peak_bandwidth_reason\":null");
    CHECK_CONTAINS(s.data, "\"measured_ceiling\":{\"copy_gb_per_s\":4000");
    CHECK_CONTAINS(s.data, "\"method\":\"best of 20\"");
    CHECK_CONTAINS(s.data, "\"fma_gflop_per_s\":null");
    kp_str_free(&s);
}

static void test_plan(void)
{
    kp_ceiling_result *r = calloc(1, sizeof *r);
    CHECK(r != NULL);
    if (!r) return;
    r->device = device();
    kp_error err = {0};
    CHECK_INT(kp_ceiling_plan_make(&r->device, 0, 0, &r->plan, &err), KPROF_OK);
    kp_str s = {0};
    kp_caps_plan_text(&s, r, 0.2);
    CHECK(!s.failed);
    CHECK_CONTAINS(s.data, "the bandwidth ceiling of NVIDIA H200 (cuda device 1, a GPU, 50 MiB "
                           "last-level cache): ");
    CHECK_CONTAINS(s.data, "then demo_add over");
    CHECK_CONTAINS(s.data, "; about 1 s on an idle machine");
    kp_str_free(&s);

    kp_json j;
    kp_json_init(&j, &s, 0);
    kp_caps_json_measure(&j, r, 12.5, 1, "/nowhere");
    kp_json_finish(&j);
    CHECK_CONTAINS(s.data, "\"dry_run\":true");
    CHECK_CONTAINS(s.data, "\"sized_for\":\"gpu\"");
    CHECK_CONTAINS(s.data, "\"expected_seconds\":12.5");
    CHECK(strstr(s.data, "\"store\"") == NULL); /* a dry run stores nothing */
    kp_str_free(&s);
    free(r);
}

/* The backends caps lists come from the registry: every one kprof knows, CUDA first, and those
 * built in (kp_backends) among them in the same order. */
static void test_backend_names(void)
{
    CHECK_STR(kp_backend_known_name(0), "cuda");
    CHECK_STR(kp_backend_known_name(1), "opencl");
    CHECK(kp_backend_known_name(KP_BACKEND_NKNOWN) == NULL);
    CHECK(kp_backend_known_name(-1) == NULL);
    int next = 0;
    for (int b = 0; kp_backends[b]; b++) {
        int at = -1;
        for (int i = 0; i < KP_BACKEND_NKNOWN; i++)
            if (strcmp(kp_backend_known_name(i), kp_backends[b]->name) == 0) at = i;
        CHECK(at >= next);
        next = at + 1;
    }
    for (int i = 0; i < KP_BACKEND_NKNOWN; i++) {
        kp_error err = {0};
        CHECK_INT(kp_backend_name_check(kp_backend_known_name(i), "--backend", &err), KPROF_OK);
        CHECK(kp_backend_api(kp_backend_known_name(i))[0] != '\0');
    }
}

int main(void)
{
    test_backend_names();
    test_not_built();
    test_device_json();
    test_plan();
    TEST_DONE();
}
