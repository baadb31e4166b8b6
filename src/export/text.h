/*
 * text.h — terminal output conventions: colour only on a tty and only when NO_COLOR is unset;
 * bold, red and yellow for emphasis; a progress line on stderr only on a tty.
 */
#ifndef KP_EXPORT_TEXT_H
#define KP_EXPORT_TEXT_H

#include <stdio.h>

/* 1 when colour codes may be written to f. */
int kp_text_colour(FILE *f);

/* Escape sequences, or "" when colour is off for f. */
const char *kp_text_bold(FILE *f);
const char *kp_text_red(FILE *f);
const char *kp_text_yellow(FILE *f);
const char *kp_text_dim(FILE *f);
const char *kp_text_reset(FILE *f);

#endif
