// SPDX-License-Identifier: GPL-2.0
/*
 * A strict (bind) policy is served from pageblocks when no free block of
 * nr_colors pages is left (issue 29).
 *
 * Above 512 colours on x86-64 a refill needs a block larger than a
 * pageblock (order 10 at 1,024 colours), and the frame search used to leave
 * every block of a pageblock or more to the refills: once no order-10
 * block was free, nothing took a frame from the order-9 blocks, and a bound
 * process was OOM-killed with free pageblocks holding its colour.  (Found
 * reading the code after a CI failure it did not explain: the test kernel
 * then had no hugetlbfs, so its pageblocks were of order 10.)  Here:
 * transparent huge pages, defrag off, take every free block of a pageblock
 * or more; the test frees those whose buddy pageblock in an order-10 pair
 * it does not hold (someone else's, or not free: the huge pages took
 * every free one) and, of a pair it holds, the lower half, keeping the
 * other, so no refill's block can form.  A child bound to the colour the
 * freed pageblocks hold most of (beyond the holes) touches more pages than
 * the small free blocks should have of it.  Old series: the child is
 * OOM-killed; fixed: it gets them all.
 *
 * At 512 colours or fewer a refill's block is no larger than a pageblock
 * and the frame search already covers every smaller one: skipped.
 */
#include "pc_test.h"

#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>

#define SPAN		(1UL << 30)
#define PROACTIVE	"/proc/sys/vm/compaction_proactiveness"
#define UNEVICTABLE	"/proc/sys/vm/compact_unevictable_allowed"
#define PLAN		4

/*
 * Fill a quarter of free memory with small pages and free every other one:
 * order-0 holes, more than the single-page path of alloc_page_color()
 * draws (twice nr_colors a fault), the parked limit and the colour's share
 * of them.  The pages left are locked: compaction, which leaves
 * unevictable pages alone here, cannot make blocks of nr_colors pages of
 * the holes (where it did, the old series got its pages by refills).  The
 * holes, their count by colour in @of.
 */
static size_t make_holes(size_t *of)
{
	size_t n = (size_t)pc_memfree_pages() / 4, i, holes = 0, locked = 0;
	uint64_t *pfns = calloc(n, sizeof(*pfns));
	char *p = mmap(NULL, n * pc_page_size, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

	if (p == MAP_FAILED || !pfns)
		return 0;
	if (madvise(p, n * pc_page_size, MADV_NOHUGEPAGE))
		tap_diag("MADV_NOHUGEPAGE: %s", strerror(errno));
	pc_touch(p, n);
	if (pagecolor_pfns(p, n, pfns))
		return 0;
	for (i = 1; i < n; i += 2) {
		if (madvise(p + i * pc_page_size, pc_page_size, MADV_DONTNEED))
			break;
		locked += !mlock(p + (i - 1) * pc_page_size, pc_page_size);
		holes++;
		if (pfns[i])
			of[pagecolor_pfn_color(pfns[i], pc_nr_colors)]++;
	}
	free(pfns);
	if (locked < holes)
		tap_diag("only %zu of the %zu pages between the holes locked", locked, holes);
	return holes;
}

/* The colour counters the child's faults move, as a diagnostic. */
static void show_counters(const char *when)
{
	static const char *const names[] = { "refills", "reclaimed", "parked", "drained" };
	unsigned long long v[4] = { 0 };
	int i;

	for (i = 0; i < 4; i++)
		pagecolor_read_counter(names[i], &v[i]);
	tap_diag("%s: refills %llu, reclaimed %llu, parked %llu, drained %llu", when,
		 v[0], v[1], v[2], v[3]);
}

/* Read sysctl @path into @buf, or leave @buf's default. */
static void read_sysctl(const char *path, char *buf, int len)
{
	FILE *f = fopen(path, "r");

	if (f) {
		if (!fgets(buf, len, f))
			buf[0] = 0;
		fclose(f);
	}
}

/* Is @pfn one of the @n in @pfns? */
static int holds_pfn(const uint64_t *pfns, size_t n, uint64_t pfn)
{
	size_t k;

	for (k = 0; k < n; k++)
		if (pfns[k] == pfn)
			return 1;
	return 0;
}

int main(void)
{
	int pb_order, block_order, i, st = -1;
	static size_t holes_of[PAGE_COLOR_MAX_COLORS], frames_of[PAGE_COLOR_MAX_COLORS];
	size_t huge, freed = 0, kept = 0, holes, other, want, k;
	long long oom0, oom1, free_small;
	int color = 0;
	long big_blocks;
	unsigned long long fail0 = 0, fail1 = 0;
	char proactive[32] = "20", unevictable[32] = "1", *h;
	uint64_t *pfns;
	pid_t pid;

	pc_init(PLAN);
	pb_order = pc_order_of(pc_pageblock_pages());
	block_order = pc_order_of(pc_nr_colors);
	if (block_order <= pb_order || PC_HUGE / pc_page_size != 1UL << pb_order) {
		for (i = 0; i < PLAN; i++)
			tap_skip("%d colours, pageblocks of %lu pages: a refill's block is no "
				 "larger than a pageblock, or a huge page is not one",
				 pc_nr_colors, pc_pageblock_pages());
		return tap_finish();
	}
	pc_wait_parked(1, 60000);
	pc_settle();
	read_sysctl(PROACTIVE, proactive, sizeof(proactive));
	read_sysctl(UNEVICTABLE, unevictable, sizeof(unevictable));
	/*
	 * No compaction may move a kept huge page to make a large block:
	 * they are mlocked, and compaction leaves unevictable pages alone.
	 */
	pc_write_file(PROACTIVE, "0");
	if (pc_write_file(UNEVICTABLE, "0"))
		tap_diag("%s: %s", UNEVICTABLE, strerror(errno));
	if (pc_write_file(PC_THP_DEFRAG, "never"))
		tap_diag("%s: %s", PC_THP_DEFRAG, strerror(errno));
	h = pc_huge_area(SPAN);
	pfns = calloc(SPAN / PC_HUGE, sizeof(*pfns));
	if (!h || !pfns) {
		tap_diag("mmap/calloc failed: %s", strerror(errno));
		return tap_finish();
	}
	holes = make_holes(holes_of);
	huge = pc_take_huge(h, SPAN, pfns, 64);
	free_small = pc_memfree_pages();

	/*
	 * Of a pair the test holds, keep the upper half and free the lower;
	 * free the rest.  (Freeing only lower halves left few freed on 6.12,
	 * whose huge pages here were mostly upper halves of pairs it did not
	 * hold.)
	 */
	for (k = 0; k < SPAN / PC_HUGE; k++) {
		uint64_t pfn = pfns[k], j;

		if (!pfn)
			continue;
		if (((pfn >> pb_order) & 1) &&
		    holds_pfn(pfns, SPAN / PC_HUGE, pfn ^ (1ULL << pb_order))) {
			kept += !mlock(h + k * PC_HUGE, PC_HUGE);
			continue;
		}
		if (madvise(h + k * PC_HUGE, PC_HUGE, MADV_DONTNEED))
			continue;
		freed++;
		for (j = 0; j < PC_HUGE / pc_page_size; j++)
			frames_of[pagecolor_pfn_color(pfn + j, pc_nr_colors)]++;
	}
	big_blocks = pc_free_blocks(block_order, "DMA");
	/* the colour the freed pageblocks hold most of beyond the holes */
	for (i = 1; i < pc_nr_colors; i++)
		if ((long)frames_of[i] - (long)holes_of[i] >
		    (long)frames_of[color] - (long)holes_of[color])
			color = i;
	/*
	 * More than the holes, the blocks of order 10 left (a frame each) and
	 * a fair share of the other small free blocks give: half the freed
	 * pageblocks' frames of the colour beyond those.
	 */
	other = free_small > (long long)holes ? (free_small - holes) / pc_nr_colors : 0;
	want = holes_of[color] + big_blocks + other + frames_of[color] / 2;
	tap_diag("nr_colors %d (a refill's block: order %d, a pageblock: order %d); "
		 "%zu order-0 holes; %zu huge pages took the blocks of order %d and more, "
		 "%lld pages were left free; %zu kept (mlocked), %zu freed; free blocks of "
		 "order %d outside ZONE_DMA: %ld; MemFree %lld pages", pc_nr_colors,
		 block_order, pb_order, holes, huge, pb_order, free_small, kept, freed,
		 block_order, big_blocks, pc_memfree_pages());
	tap_ok(big_blocks >= 0 && frames_of[color] >= 32 &&
	       want + 8 <= holes_of[color] + big_blocks + frames_of[color],
	       "colour %d: the freed pageblocks hold %zu free frames of it, the child "
	       "takes %zu, more than its %zu holes, the %ld free blocks of %d pages and "
	       "a share of the other small blocks (%zu) give", color, frames_of[color],
	       want, holes_of[color], big_blocks, pc_nr_colors, other);

	oom0 = pc_vmstat("oom_kill");
	pagecolor_read_counter("failures", &fail0);
	show_counters("before the child");
	pid = fork();
	if (pid == 0) {
		char list[16], *p;
		pagecolor_set_t set;

		snprintf(list, sizeof(list), "%d", color);
		set = pc_set(list);
		p = pc_child_bound_touch(list, want, 20);
		_exit(pc_range_ok(p, want, &set, "the child's pages") ? 0 : 1);
	}
	if (pid > 0)
		waitpid(pid, &st, 0);
	oom1 = pc_vmstat("oom_kill");
	pagecolor_read_counter("failures", &fail1);
	show_counters("after the child");
	tap_diag("child bound to colour %d, %zu pages: status 0x%x, oom_kill %lld -> %lld, "
		 "bind failures %llu -> %llu, free blocks of order %d: %ld", color, want, st,
		 oom0, oom1, fail0, fail1, block_order, pc_free_blocks(block_order, "DMA"));
	tap_ok(pid > 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0,
	       "a child bound to colour %d gets %zu pages of it from the pageblocks "
	       "(status 0x%x%s)", color, want, st,
	       WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL ? ": killed" : "");
	tap_ok(oom1 == oom0 && fail1 == fail0,
	       "no OOM kill (%lld -> %lld), no bind failure (%llu -> %llu)", oom0, oom1,
	       fail0, fail1);

	munmap(h, SPAN);
	pc_write_file(PC_THP_DEFRAG, "madvise");
	pc_write_file(PROACTIVE, proactive);
	pc_write_file(UNEVICTABLE, unevictable);
	pc_settle();
	tap_ok(pc_dmesg_trouble() == 0, "no BUG/WARNING/Oops in dmesg");
	return tap_finish();
}
