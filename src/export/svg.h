/*
 * svg.h — the sweep plot: GPU time (median, and min) and theoretical occupancy against
 * threadgroup size, as a standalone SVG document a browser opens.
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

/* The SVG text (heap, NUL-terminated), or NULL when out of memory. n >= 1. */
char *kp_svg_sweep(const char *title, const kp_plot_point *pts, int n);

#endif
