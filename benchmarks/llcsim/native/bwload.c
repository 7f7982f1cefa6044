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
 *   bwload pingpong CPU0 CPU1 N two threads pinned to CPU0 and CPU1 hand one
 *                               cache line back and forth N times; prints
 *                               "ns_per_roundtrip X".  Two vCPUs whose host
 *                               cores share an L3 hand a line over within it;
 *                               cores in different L3s (another CCX) go
 *                               through the fabric, several times slower
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
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

struct pong {
	_Alignas(LINE) atomic_long turn;	/* the line handed back and forth */
	long n;
	int cpu;
};

static int pin(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return sched_setaffinity(0, sizeof(set), &set);
}

/* The second thread: answers each odd turn with the next even one. */
static void *ponger(void *arg)
{
	struct pong *p = arg;
	long i;

	if (pin(p->cpu))
		return (void *)1;
	for (i = 0; i < p->n; i++) {
		while (atomic_load_explicit(&p->turn, memory_order_acquire) != 2 * i + 1)
			;
		atomic_store_explicit(&p->turn, 2 * i + 2, memory_order_release);
	}
	return NULL;
}

static int pingpong(int cpu0, int cpu1, long n)
{
	static struct pong p;
	pthread_t t;
	void *ret;
	double t0;
	long i;

	p.n = n;
	p.cpu = cpu1;
	atomic_store(&p.turn, 0);
	if (pin(cpu0) || pthread_create(&t, NULL, ponger, &p)) {
		perror("bwload: pingpong");
		return 1;
	}
	t0 = now_ns();
	for (i = 0; i < n; i++) {
		atomic_store_explicit(&p.turn, 2 * i + 1, memory_order_release);
		while (atomic_load_explicit(&p.turn, memory_order_acquire) != 2 * i + 2)
			;
	}
	printf("ns_per_roundtrip %.2f\n", (now_ns() - t0) / n);
	pthread_join(t, &ret);
	return ret ? 1 : 0;
}

int main(int argc, char **argv)
{
	if (argc == 4 && !strcmp(argv[1], "stream") && atol(argv[2]) > 0 && atof(argv[3]) > 0)
		return stream(atol(argv[2]), atof(argv[3]));
	if (argc == 3 && !strcmp(argv[1], "alu") && atol(argv[2]) > 0)
		return alu(atol(argv[2]));
	if (argc == 5 && !strcmp(argv[1], "pingpong") && atol(argv[4]) > 0)
		return pingpong(atoi(argv[2]), atoi(argv[3]), atol(argv[4]));
	fprintf(stderr, "usage: bwload stream MIB SECONDS | bwload alu ITERS | bwload pingpong CPU0 CPU1 N\n");
	return 2;
}
