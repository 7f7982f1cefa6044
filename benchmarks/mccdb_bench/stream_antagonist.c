/*
 * stream_antagonist: the synthetic streaming co-runner of the native study.
 *
 *   stream_antagonist [MIB]
 *
 * Allocates MIB MiB (default 1024) advised to use transparent huge pages,
 * touches all of it, prints "ready", then reads and writes one 8-byte word
 * in every 64-byte line, front to back, again and again until it is killed:
 * every line of the buffer passes through the cache and leaves it dirty.
 * mccdb_bench.native_study pins it to the other vCPU and stops it (SIGSTOP)
 * while the query under test runs alone.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define LINE 64

int main(int argc, char **argv)
{
	long mib = argc > 1 ? atol(argv[1]) : 1024;
	if (argc > 2 || mib < 1) {
		fprintf(stderr, "usage: stream_antagonist [MIB]\n");
		return 2;
	}
	size_t bytes = (size_t)mib << 20;
	char *buf = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (buf == MAP_FAILED) {
		perror("stream_antagonist: mmap");
		return 1;
	}
	madvise(buf, bytes, MADV_HUGEPAGE);
	memset(buf, 1, bytes);
	puts("ready");
	fflush(stdout);
	for (;;) {
		for (size_t off = 0; off < bytes; off += LINE)
			++*(volatile uint64_t *)(buf + off);
	}
}
