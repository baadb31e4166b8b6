/*
 * progress.c — the progress line on a terminal (see progress.h).
 */
#define _GNU_SOURCE
#include "tools/kprof/progress.h"
#include "base/env.h"
#include "base/util.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

struct kp_progress {
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    char text[512];
    uint64_t since_ns; /* when the phase began */
    int visible;       /* the line is on the terminal */
    int hidden;        /* kp_progress_hide until the next set */
    int stopping;
    int threaded; /* the redrawing thread runs (kp_progress_animate) */
    /* Off a terminal (plain): a line of its own, "kprof: TEXT (N s)" (N the phase's seconds,
     * from 1), once every every_ns of work, never redrawn or cleared; 0 every_ns: none
     * (KPROF_PROGRESS_EVERY=0). */
    int plain;
    uint64_t every_ns;
    uint64_t last_line_ns; /* when the last plain line was written, or the progress began */
};

/* A line is on the terminal (for kp_progress_clear_for_signal). */
static volatile sig_atomic_t kp_progress_on_screen;

/* Straight to the descriptor, never through stdio: the lab may fork a child while this thread
 * draws (lab.h), and a child must not inherit a stdio lock held here. */
static void kp_progress_write(const char *text, size_t n)
{
    while (n > 0) {
        ssize_t w = write(STDERR_FILENO, text, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return;
        text += w;
        n -= (size_t)w;
    }
}

/* Off a terminal, with p->mu held: the line, once every_ns has passed since the last. */
static void kp_progress_plain_line(kp_progress *p)
{
    uint64_t now = kp_now_ns();
    if (!p->every_ns || !p->text[0] || now - p->last_line_ns < p->every_ns) return;
    p->last_line_ns = now;
    double s = (double)(now - p->since_ns) / 1e9;
    char line[sizeof p->text + 64];
    int n = s >= 1 ? snprintf(line, sizeof line, "kprof: %s (%.0f s)\n", p->text, s)
                   : snprintf(line, sizeof line, "kprof: %s\n", p->text);
    if (n > 0) kp_progress_write(line, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1);
}

/* With p->mu held. */
static void kp_progress_draw(kp_progress *p)
{
    if (p->plain) {
        kp_progress_plain_line(p);
        return;
    }
    if (p->hidden || !p->text[0]) return;
    double s = (double)(kp_now_ns() - p->since_ns) / 1e9;
    char line[sizeof p->text + 64];
    int n = s >= 1 ? snprintf(line, sizeof line, "\r\033[K%s (%.0f s)", p->text, s)
                   : snprintf(line, sizeof line, "\r\033[K%s", p->text);
    if (n > 0) kp_progress_write(line, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1);
    p->visible = 1;
    kp_progress_on_screen = 1;
}

/* With p->mu held. */
static void kp_progress_clear(kp_progress *p)
{
    if (!p->visible) return;
    kp_progress_write("\r\033[K", 4);
    p->visible = 0;
    kp_progress_on_screen = 0;
}

static void *kp_progress_main(void *arg)
{
    kp_progress *p = arg;
    pthread_mutex_lock(&p->mu);
    while (!p->stopping) {
        struct timespec until;
        clock_gettime(CLOCK_MONOTONIC, &until);
        until.tv_nsec += 500000000L;
        if (until.tv_nsec >= 1000000000L) {
            until.tv_sec++;
            until.tv_nsec -= 1000000000L;
        }
        int rc = pthread_cond_timedwait(&p->cv, &p->mu, &until);
        if (rc == ETIMEDOUT && !p->stopping) kp_progress_draw(p);
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

kp_progress *kp_progress_start_still(void)
{
    int plain = !isatty(fileno(stderr));
    uint64_t every_ns = (uint64_t)KP_PROGRESS_PLAIN_EVERY_S * 1000000000ULL;
    const char *every = getenv(KP_ENV_PROGRESS_EVERY);
    if (plain && every && *every) {
        char *end = NULL;
        double v = strtod(every, &end);
        if (end && *end == '\0' && v >= 0 && v <= 86400) every_ns = (uint64_t)(v * 1e9);
    }
    if (plain && every_ns == 0) return NULL;
    kp_progress *p = calloc(1, sizeof *p);
    if (!p) return NULL;
    p->plain = plain;
    p->every_ns = every_ns;
    p->last_line_ns = kp_now_ns();
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->cv, &ca);
    pthread_condattr_destroy(&ca);
    return p;
}

void kp_progress_animate(kp_progress *p)
{
    if (!p || p->threaded) return;
    /* The thread starts with every signal blocked, so none is ever handled on it. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    p->threaded = pthread_create(&p->thread, NULL, kp_progress_main, p) == 0;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
}

void kp_progress_set(kp_progress *p, const char *fmt, ...)
{
    if (!p) return;
    pthread_mutex_lock(&p->mu);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(p->text, sizeof p->text, fmt, ap);
    va_end(ap);
    p->since_ns = kp_now_ns();
    p->hidden = 0;
    kp_progress_draw(p); /* off a terminal, only once its interval has passed */
    pthread_mutex_unlock(&p->mu);
}

void kp_progress_hide(kp_progress *p)
{
    if (!p) return;
    pthread_mutex_lock(&p->mu);
    kp_progress_clear(p);
    p->hidden = 1;
    pthread_mutex_unlock(&p->mu);
}

void kp_progress_stop(kp_progress *p)
{
    if (!p) return;
    pthread_mutex_lock(&p->mu);
    kp_progress_clear(p);
    p->stopping = 1;
    pthread_cond_signal(&p->cv);
    pthread_mutex_unlock(&p->mu);
    if (p->threaded) pthread_join(p->thread, NULL);
    pthread_cond_destroy(&p->cv);
    pthread_mutex_destroy(&p->mu);
    free(p);
}

void kp_progress_clear_for_signal(void)
{
    if (!kp_progress_on_screen) return;
    ssize_t w = write(STDERR_FILENO, "\r\033[K", 4);
    (void)w;
}
