/*
 * progress.h — one progress line on stderr, on a terminal only (DESIGN.md: progress on stderr
 * only on a tty): a phase ("run: demo_add: 3 warm-ups + 50 timed dispatches") with the seconds
 * spent in it, redrawn in place every half second by a thread of its own so that a long kernel
 * still shows the program is alive, and cleared before anything else is printed.
 *
 * Off a terminal (a CI log) the line is plain text of its own, "kprof: run: demo_add: 3 warm-ups +
 * 50 timed dispatches (20 s)", written once every KP_PROGRESS_PLAIN_EVERY_S seconds of work
 * (KPROF_PROGRESS_EVERY=S sets the interval, 0 none), so that a long run shows life in a log
 * and a short one prints nothing: by the thread once animated, else by kp_progress_set.
 * Every call takes NULL as a no-op (kp_progress_start_still's answer when there is no line).
 * The thread runs with every signal blocked: signals stay with the threads that handle them.
 */
#ifndef KP_TOOLS_PROGRESS_H
#define KP_TOOLS_PROGRESS_H

typedef struct kp_progress kp_progress;

#define KP_PROGRESS_PLAIN_EVERY_S 10 /* off a terminal: one line per this many seconds */

/* A progress line (and memory can be had), else NULL. Lines are drawn
 * when set; they are redrawn with the seconds spent only once kp_progress_animate has started
 * the line's thread — after any phase in which the process forks (the lab's isolated session,
 * lab.h), which is best done while no other thread of ours exists. */
kp_progress *kp_progress_start_still(void);
void kp_progress_animate(kp_progress *p);

/* Begin a phase: the text replaces the line at once; the seconds count from now. */
void kp_progress_set(kp_progress *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Clear the line until the next kp_progress_set: call before printing anything else. */
void kp_progress_hide(kp_progress *p);

/* Clear the line, end the thread, free p. */
void kp_progress_stop(kp_progress *p);

/* Clear a line left on the terminal by a progress still running: async-signal-safe, for the
 * signal handler that leaves with _exit. */
void kp_progress_clear_for_signal(void);

#endif
