/*
 * bwload: the two loops the memory-contention calibration needs that
 * llc_knee.c and stream_antagonist.c do not time (benchmarks/llcsim/native/
 * memload.py runs them).
 *
 *   bwload stream MIB SECONDS   stream_antagonist's loop (read and write one
 *                               8-byte word in every 64-byte line of MIB MiB
 *                               on transparent huge pages, front to back)
 *                               for SECONDS; prints "lines_per_ns X gbps Y"
 *                               (GB/s of lines read, each also written back)
 *   bwload alu ITERS            a dependent integer loop (multiply-add) of
 *                               ITERS steps, no memory; prints "ns_per_iter X"
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#define LINE 64

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static int stream(long mib, double secs)
{
	size_t bytes = (size_t)mib << 20, off;
	char *buf = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	double t0, t;
	uint64_t lines = 0;

	if (buf == MAP_FAILED) {
		perror("bwload: mmap");
		return 1;
	}
	madvise(buf, bytes, MADV_HUGEPAGE);
	memset(buf, 1, bytes);
	for (off = 0; off < bytes; off += LINE)	/* one warm pass */
		++*(volatile uint64_t *)(buf + off);
	t0 = now_ns();
	do {
		for (off = 0; off < bytes; off += LINE)
			++*(volatile uint64_t *)(buf + off);
		lines += bytes / LINE;
		t = now_ns();
	} while (t - t0 < secs * 1e9);
	printf("lines_per_ns %.5f gbps %.3f\n", lines / (t - t0), lines * LINE / (t - t0));
	return 0;
}

static int alu(long iters)
{
	volatile uint64_t sink;
	uint64_t x = 1;
	double t0 = now_ns();
	long i;

	for (i = 0; i < iters; i++)
		x = x * 6364136223846793005ULL + 1442695040888963407ULL;
	sink = x;
	(void)sink;
	printf("ns_per_iter %.4f\n", (now_ns() - t0) / iters);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 4 && !strcmp(argv[1], "stream") && atol(argv[2]) > 0 && atof(argv[3]) > 0)
		return stream(atol(argv[2]), atof(argv[3]));
	if (argc == 3 && !strcmp(argv[1], "alu") && atol(argv[2]) > 0)
		return alu(atol(argv[2]));
	fprintf(stderr, "usage: bwload stream MIB SECONDS | bwload alu ITERS\n");
	return 2;
}
