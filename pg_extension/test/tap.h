/*
 * The TAP helpers of the plain-C unit tests (test/model, test/resctrl):
 * one "ok N - what" line a check, a count of failures for the exit code.
 */
#ifndef MCCDB_TEST_TAP_H
#define MCCDB_TEST_TAP_H

#include <stdio.h>

static int	tap_n = 0,
			tap_failed = 0;

static void
ok(int cond, const char *what)
{
	tap_n++;
	if (!cond)
		tap_failed++;
	printf("%sok %d - %s\n", cond ? "" : "not ", tap_n, what);
}

/* The plan line and the exit status: 0 when every check passed. */
static int
tap_done(void)
{
	printf("1..%d\n", tap_n);
	if (tap_failed)
		printf("# %d of %d failed\n", tap_failed, tap_n);
	return tap_failed ? 1 : 0;
}

#endif							/* MCCDB_TEST_TAP_H */
