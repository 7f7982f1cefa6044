// SPDX-License-Identifier: GPL-2.0
/*
 * What an uncoloured workload pays for colouring on every order-0 free
 * (issue 29 item 8): page_color_free() looks the page's page_ext up to
 * clear its "coloured" bit whenever colouring is enabled at boot.
 *
 * Since this session the lookup waits for the first colour policy
 * (static key page_color_used).  Fault in and unmap 32 MiB of anonymous
 * memory, ROUNDS times, twice before any colour policy was made (no
 * lookup) and twice after one was (set and dropped: a lookup on every
 * free); print the medians per page of fault + free and of munmap alone,
 * where the frees are.  Boot with page_coloring=off for a third
 * reference.  A measurement, not a test:
 * it always passes (indicative only under TCG).
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "pagecolor.h"

#define BYTES	(32UL << 20)
#define ROUNDS	15

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* ROUNDS rounds; prints and returns nothing but the medians. */
static void measure(const char *label, long ps)
{
	size_t n = BYTES / ps, i;
	double ns[ROUNDS], fns[ROUNDS];
	int r;

	for (r = 0; r < ROUNDS; r++) {
		struct timespec t0, t1, tf;
		char *p;

		clock_gettime(CLOCK_MONOTONIC, &t0);
		p = mmap(NULL, BYTES, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (p == MAP_FAILED)
			return;
		madvise(p, BYTES, MADV_NOHUGEPAGE);
		for (i = 0; i < n; i++)
			p[i * ps] = 1;
		clock_gettime(CLOCK_MONOTONIC, &tf);
		munmap(p, BYTES);
		clock_gettime(CLOCK_MONOTONIC, &t1);
		ns[r] = ((t1.tv_sec - t0.tv_sec) * 1e9 + (t1.tv_nsec - t0.tv_nsec)) / n;
		fns[r] = ((t1.tv_sec - tf.tv_sec) * 1e9 + (t1.tv_nsec - tf.tv_nsec)) / n;
	}
	qsort(ns, ROUNDS, sizeof(ns[0]), cmp);
	qsort(fns, ROUNDS, sizeof(fns[0]), cmp);
	printf("# freebench %s: fault + free median %.0f ns per page (min %.0f, max %.0f); "
	       "munmap (the frees) median %.0f (min %.0f, max %.0f); %zu pages x %d\n",
	       label, ns[ROUNDS / 2], ns[0], ns[ROUNDS - 1], fns[ROUNDS / 2], fns[0],
	       fns[ROUNDS - 1], n, ROUNDS);
}

int main(void)
{
	long ps = sysconf(_SC_PAGESIZE);
	pagecolor_set_t s;
	int k;

	printf("1..1\n");
	for (k = 0; k < 2; k++)
		measure("before any colour policy (no page_ext lookup on free)", ps);
	pagecolor_set_zero(&s);
	pagecolor_set_add(&s, 0);
	if (pagecolor_supported() && !pagecolor_set_policy(COLOR_MODE_BIND, &s) &&
	    !pagecolor_set_policy(COLOR_MODE_DEFAULT, NULL)) {
		sleep(2);	/* the parked pages' delayed release */
		for (k = 0; k < 2; k++)
			measure("after a colour policy existed (page_ext lookup on every free)", ps);
	} else {
		printf("# colouring unsupported or no policy allowed: one phase only\n");
	}
	printf("ok 1 - measured\n");
	return 0;
}
