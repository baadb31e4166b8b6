/*
 * svg.h — the sweep plot: GPU time (median, and min) and theoretical occupancy against
 * threadgroup size, as a standalone SVG document a browser opens; and the same drawing of
 * another quantity against another axis (kp_svg_plot).
 */
#ifndef KP_EXPORT_SVG_H
#define KP_EXPORT_SVG_H

typedef struct kp_plot_point {
    char label[32];   /* x-axis label: "256", "16x16" */
    double median_ms; /* left axis */
    double min_ms;
    double occupancy; /* 0..1 on the right axis; < 0 when unknown */
    int best, tie;
} kp_plot_point;

/* The words of a plot: the axes' titles and the legend's names of the thick line (median_ms)
 * and the thin one (min_ms). */
typedef struct kp_svg_labels {
    const char *x, *y, *line, *thin;
} kp_svg_labels;

/* A plot of pts against their labels (`kprof bench --plot`: time or throughput against an
 * axis); occupancy < 0 draws no right axis. The SVG text (heap), or NULL when out of memory. */
char *kp_svg_plot(const char *title, const kp_svg_labels *labels, const kp_plot_point *pts, int n);

/* The sweep's plot ("GPU time" on a GPU, else "device time"); the SVG text (heap,
 * NUL-terminated), or NULL when out of memory. n >= 1. */
char *kp_svg_sweep(const char *title, int is_gpu, const kp_plot_point *pts, int n);

#endif
