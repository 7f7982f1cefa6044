// SPDX-License-Identifier: GPL-2.0
/*
 * What an uncoloured workload pays for colouring on every order-0 free
 * (issue 29 item 8): page_color_free() looks the page's page_ext up to
 * clear its "coloured" bit whenever colouring is enabled at boot.
 *
 * Fault in and unmap 32 MiB of anonymous memory, ROUNDS times, with no
 * colour policy anywhere; print the time per page of each round (fault +
 * free, and munmap alone, where the frees are) and the medians.  Boot once with colouring on and once with
 * page_coloring=off and compare the medians.  A measurement, not a test:
 * it always passes (indicative only under TCG).
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define BYTES	(32UL << 20)
#define ROUNDS	15

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

int main(void)
{
	long ps = sysconf(_SC_PAGESIZE);
	size_t n = BYTES / ps, i;
	double ns[ROUNDS], fns[ROUNDS];
	int r;

	printf("1..1\n");
	for (r = 0; r < ROUNDS; r++) {
		struct timespec t0, t1, tf;
		char *p;

		clock_gettime(CLOCK_MONOTONIC, &t0);
		p = mmap(NULL, BYTES, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (p == MAP_FAILED) {
			printf("not ok 1 - mmap\n");
			return 1;
		}
		madvise(p, BYTES, MADV_NOHUGEPAGE);
		for (i = 0; i < n; i++)
			p[i * ps] = 1;
		clock_gettime(CLOCK_MONOTONIC, &tf);
		munmap(p, BYTES);
		clock_gettime(CLOCK_MONOTONIC, &t1);
		ns[r] = ((t1.tv_sec - t0.tv_sec) * 1e9 + (t1.tv_nsec - t0.tv_nsec)) / n;
		fns[r] = ((t1.tv_sec - tf.tv_sec) * 1e9 + (t1.tv_nsec - tf.tv_nsec)) / n;
		printf("# round %d: %.0f ns per page (fault + free), %.0f of them munmap\n",
		       r, ns[r], fns[r]);
	}
	qsort(ns, ROUNDS, sizeof(ns[0]), cmp);
	qsort(fns, ROUNDS, sizeof(fns[0]), cmp);
	printf("# freebench: fault + free median %.0f ns per page (min %.0f, max %.0f); "
	       "munmap (the frees) median %.0f (min %.0f, max %.0f); %zu pages x %d\n",
	       ns[ROUNDS / 2], ns[0], ns[ROUNDS - 1], fns[ROUNDS / 2], fns[0],
	       fns[ROUNDS - 1], n, ROUNDS);
	printf("ok 1 - measured\n");
	return 0;
}
