/* test_stats.c — median, p90 and spread with the seeds' definitions. */
#include "core/stats.h"
#include "test.h"

int main(void)
{
    double v[10] = {9, 1, 8, 2, 7, 3, 6, 4, 5, 10}, scratch[10];
    kp_stats s;
    kp_stats_compute(v, 10, scratch, &s);
    CHECK_INT(s.n, 10);
    CHECK_NEAR(s.min, 1, 0);
    CHECK_NEAR(s.max, 10, 0);
    CHECK_NEAR(s.median, 6, 0); /* sorted[n/2] = sorted[5] */
    CHECK_NEAR(s.p90, 10, 0);   /* sorted[min(9, 9)] */
    CHECK_NEAR(s.mean, 5.5, 1e-12);
    CHECK_NEAR(s.stddev, 3.0276503540974917, 1e-12); /* sample std */
    CHECK_NEAR(v[0], 9, 0);                          /* input untouched */

    double w[5] = {5, 4, 3, 2, 1};
    kp_stats_compute(w, 5, scratch, &s);
    CHECK_NEAR(s.median, 3, 0);
    CHECK_NEAR(s.p90, 5, 0); /* sorted[min(4, 4)] */

    double one[1] = {2.5};
    kp_stats_compute(one, 1, scratch, &s);
    CHECK_NEAR(s.median, 2.5, 0);
    CHECK_NEAR(s.p90, 2.5, 0);
    CHECK_NEAR(s.stddev, 0, 0);

    kp_stats_compute(NULL, 0, scratch, &s);
    CHECK_INT(s.n, 0);

    double sorted[4] = {1, 2, 3, 4};
    CHECK_NEAR(kp_quantile_sorted(sorted, 4, 0.5), 2.5, 1e-12);
    CHECK_NEAR(kp_quantile_sorted(sorted, 4, 0.75), 3.25, 1e-12);
    CHECK_NEAR(kp_quantile_sorted(sorted, 4, 1), 4, 0);
    TEST_DONE();
}
