// SPDX-License-Identifier: GPL-2.0
/*
 * A strict (bind) policy must not die of SIGBUS while free memory of its
 * colours exists (issue 13 item 5).  Fragment memory so that hardly any
 * free block holds every colour: fill 70% of free memory with anonymous
 * pages and free every other page (their frames become order-0 holes
 * whose buddies stay in use), then eat the large free blocks that are
 * left with transparent huge pages, THP defrag off so that compaction
 * does not fill the holes.  The frames freed are read from pagemap first,
 * so the test knows how many free frames of the colour it binds to
 * exist.  Then a child bound to that one colour touches fewer pages than
 * that: it should get them all.
 *
 * It failed 3 of 3 boots before take_free_page_color() and the reclaim
 * step of alloc_page_color(); it is not in `make test` because its
 * outcome depends on how the guest's memory happens to fragment.  `make
 * -C kernel-patch test-pressure` boots it several times with
 * color_pressure and counts.
 */
#include "pc_test.h"

#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>

#define WANT_PAGES	256	/* the child touches this many of one colour */

/* Free buddy blocks (heads) whose first frame has colour @color. */
static long free_heads_of_color(int color)
{
	FILE *f = fopen("/proc/kpageflags", "r");
	uint64_t flags[512];
	size_t n, i, pfn = 0;
	long heads = 0;

	if (!f)
		return -1;
	while ((n = fread(flags, sizeof(flags[0]), 512, f)) > 0) {
		for (i = 0; i < n; i++, pfn++)
			if ((flags[i] & (1ULL << 10)) &&
			    pagecolor_pfn_color(pfn, pc_nr_colors) == color)
				heads++;
	}
	fclose(f);
	return heads;
}

int main(void)
{
	long long free0 = -1;
	size_t n, i, holes = 0, of_color = 0, huge;
	uint64_t *pfns;
	char *p, label[32];
	pagecolor_set_t one;
	int color, st;
	pid_t pid;

	pc_init(3);
	free0 = pc_memfree_pages();
	pagecolor_drain();
	if (free0 <= 16384) {
		tap_diag("too little free memory: %lld pages", free0);
		return tap_finish();
	}
	n = (size_t)free0 * 7 / 10;
	p = mmap(NULL, n * pc_page_size, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	pfns = calloc(n, sizeof(*pfns));
	if (p == MAP_FAILED || !pfns) {
		tap_diag("mmap/calloc of %zu pages failed", n);
		return tap_finish();
	}
	pc_touch(p, n);
	if (pagecolor_pfns(p, n, pfns) != 0) {
		tap_diag("pagemap: %s", strerror(errno));
		return tap_finish();
	}
	{
		/* bind to the colour the holes have most of */
		static size_t count[PAGE_COLOR_MAX_COLORS];

		for (i = 1; i < n; i += 2) {
			if (madvise(p + i * pc_page_size, pc_page_size, MADV_DONTNEED))
				break;
			holes++;
			if (pfns[i])
				count[pagecolor_pfn_color(pfns[i], pc_nr_colors)]++;
		}
		color = 0;
		for (i = 1; i < (size_t)pc_nr_colors; i++)
			if (count[i] > count[color])
				color = i;
		of_color = count[color];
	}
	if (pc_write_file(PC_THP_DEFRAG, "never")) {
		tap_diag("%s: %s", PC_THP_DEFRAG, strerror(errno));
		return tap_finish();
	}
	huge = pc_eat_large_blocks();
	tap_diag("MemFree %lld pages; filled %zu, freed every other one: %zu holes, "
		 "%zu of colour %d; then %zu huge pages took the large free blocks; "
		 "MemFree now %lld", free0, n, holes, of_color, color, huge, pc_memfree_pages());
	tap_ok(of_color >= WANT_PAGES + WANT_PAGES / 4,
	       "at least %d free frames of colour %d (%zu)", WANT_PAGES + WANT_PAGES / 4,
	       color, of_color);

	snprintf(label, sizeof(label), "%d", color);
	one = pc_set(label);
	pid = fork();
	if (pid == 0) {
		char *q = mmap(NULL, WANT_PAGES * pc_page_size, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		if (q == MAP_FAILED ||
		    pagecolor_mbind(q, WANT_PAGES * pc_page_size, COLOR_MODE_BIND, &one, 0))
			_exit(100);
		for (i = 0; i < WANT_PAGES; i++) {
			q[i * pc_page_size] = 1;
			if (i % 16 == 15)
				printf("# child: %zu pages of colour %d\n", i + 1, color);
		}
		_exit(pc_range_ok(q, WANT_PAGES, &one, "the child's pages") ? 0 : 1);
	}
	st = -1;
	if (pid > 0)
		waitpid(pid, &st, 0);
	{
		unsigned long long parked = 0, fail = 0;

		pagecolor_read_counter("parked", &parked);
		pagecolor_read_counter("failures", &fail);
		tap_diag("after the child: %ld free buddy blocks start on colour %d; "
			 "%llu pages parked; %llu bind failures", free_heads_of_color(color),
			 color, parked, fail);
	}
	tap_ok(pid > 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0,
	       "a child bound to colour %d gets %d pages of it while %zu are free "
	       "(status 0x%x%s)", color, WANT_PAGES, of_color, st,
	       WIFSIGNALED(st) && WTERMSIG(st) == SIGBUS ? ": SIGBUS" : "");
	munmap(p, n * pc_page_size);
	pc_write_file(PC_THP_DEFRAG, "madvise");
	pc_settle();
	tap_ok(pc_dmesg_trouble() == 0, "no BUG/WARNING/Oops in dmesg");
	return tap_finish();
}
