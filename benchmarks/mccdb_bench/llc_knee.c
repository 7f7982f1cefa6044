/*
 * llc_knee: pointer-chase latency against working-set size.
 *
 *   llc_knee [MIN_KB MAX_KB [STEPS_PER_DOUBLING [ACCESSES [ADDS]]]]
 *
 * For each size, a random cyclic permutation of 64-byte cache lines is
 * chased (each load depends on the previous one), in memory advised to use
 * transparent huge pages so that TLB misses do not dominate.  Prints one line
 * per size: "<bytes> <ns per access>".  mccdb_bench.llc_knee finds the knee.
 *
 * ADDS (a multiple of 64, default 0) paces the chase: that many serially
 * dependent adds of zero to the pointer after each load, so the next load
 * waits for them.  A line is then touched again only after a whole lap of
 * loads and adds: the reuse interval of a line in a table that a slower
 * loop (a PostgreSQL hash join's probes) visits at random, which decides
 * whether a co-runner's lines push it out of the LLC between two visits.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#define LINE 64

static uint64_t rng = 88172645463325252ULL;
static uint64_t xorshift(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static double now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static volatile uint64_t zero;	/* 0, unknown to the compiler */

static double chase(size_t bytes, long accesses, long adds)
{
	uint64_t z = zero;
	size_t n = bytes / LINE, i;
	size_t map = (bytes + (2 << 20) - 1) & ~((size_t)(2 << 20) - 1);
	char *buf = mmap(NULL, map, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	size_t *order = malloc(n * sizeof(size_t));
	if (buf == MAP_FAILED || !order) {
		perror("llc_knee: memory");
		exit(1);
	}
	madvise(buf, map, MADV_HUGEPAGE);
	memset(buf, 0, map);
	for (i = 0; i < n; i++)
		order[i] = i;
	for (i = n - 1; i > 0; i--) {	/* Fisher-Yates */
		size_t j = xorshift() % (i + 1), t = order[i];
		order[i] = order[j];
		order[j] = t;
	}
	for (i = 0; i < n; i++)
		*(char **)(buf + order[i] * LINE) = buf + order[(i + 1) % n] * LINE;
	free(order);

	char **p = (char **)buf;
	for (i = 0; i < 2 * n; i++)	/* warm: two laps */
		p = (char **)*p;
	double best = 1e30;
	for (int rep = 0; rep < 3; rep++) {	/* best of three: other tenants add noise */
		double t0 = now_ns();
		for (long k = 0; k < accesses; k++) {
			p = (char **)*p;
			for (long j = 0; j < adds / 64; j++)	/* p += 0, 64 times, in series */
				__asm__ volatile(".rept 64\n\tadd %1, %0\n\t.endr" : "+r"(p) : "r"(z));
		}
		double ns = (now_ns() - t0) / accesses;
		if (ns < best)
			best = ns;
	}
	if (p == NULL)		/* keep the chase alive */
		puts("");
	munmap(buf, map);
	return best;
}

int main(int argc, char **argv)
{
	long min_kb = argc > 1 ? atol(argv[1]) : 1024;
	long max_kb = argc > 2 ? atol(argv[2]) : 65536;
	int steps = argc > 3 ? atoi(argv[3]) : 4;
	long accesses = argc > 4 ? atol(argv[4]) : 4000000;
	long adds = argc > 5 ? atol(argv[5]) : 0;
	if (min_kb < 64 || max_kb < min_kb || steps < 1 || accesses < 1000 || adds < 0 || adds % 64) {
		fprintf(stderr, "usage: llc_knee [MIN_KB MAX_KB [STEPS_PER_DOUBLING [ACCESSES [ADDS]]]]"
			" (ADDS a multiple of 64)\n");
		return 2;
	}
	for (double kb = min_kb; kb <= max_kb * 1.0001;) {
		size_t bytes = ((size_t)(kb * 1024) / LINE) * LINE;
		printf("%zu %.2f\n", bytes, chase(bytes, accesses, adds));
		fflush(stdout);
		kb *= __builtin_pow(2.0, 1.0 / steps);
	}
	return 0;
}
